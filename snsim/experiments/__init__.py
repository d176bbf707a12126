"""Experiments built on :func:`snsim.api.simulate`: capacity searches and the paper report.

- :mod:`snsim.experiments.search` — the deepest network or largest batch each policy can train
  (``snsim maxdepth``, ``snsim maxbatch``), and depth sweeps for plots.
- :mod:`snsim.experiments.reproduce` — the SuperNeurons headline claims as a markdown report
  with PNG plots (``snsim reproduce``).
"""
from .search import (FAMILIES, Family, MaxSize, SearchReport, family_network, get_family,
                     list_families, max_batch, max_depth, min_budget, sweep_depth)

__all__ = ["FAMILIES", "Family", "MaxSize", "SearchReport", "family_network", "get_family",
           "list_families", "max_batch", "max_depth", "min_budget", "sweep_depth"]
