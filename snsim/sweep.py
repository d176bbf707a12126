"""Parameter sweeps: a YAML grid of runs -> one tidy DataFrame, in-process or on Dask, resumable.

A sweep file (``configs/sweeps/*.yaml``)::

    name: example                   # optional
    description: ...                # optional
    networks: [lenet, alexnet]      # required: zoo names
    batches: [8, 32]                # required: positive integers
    policies:                       # required: names, or {name, options} for a variant
      - liveness
      - {name: superneurons, options: {free_after_offload: true}}
    gpus: [k40c]                    # hardware presets or YAML paths (default [k40c])
    budgets: [default, 2GiB]        # byte sizes; default (or null) = the preset's budget
    allocators: [ideal, pool]       # default [ideal]
    policy_options:                 # defaults per policy name, under each entry's own options
      superneurons: {mode: memory}
    optimizer: sgd-momentum         # optional, one value
    variant: torchvision            # optional, one value
    framework: superneurons         # optional, one value: superneurons | pytorch
    amp: none                       # optional, one value (framework pytorch): none | bf16 | fp16
    param_dtype: fp32               # optional, one value (framework pytorch): fp32 | bf16 | fp16

The grid is the product of the lists. Each run gets a stable ``run_key``, a hash of its
resolved configuration (budget in bytes, merged policy options, the hardware spec's values),
so a finished run is recognised when the sweep is run again. Results are written as they
arrive to a journal ``<out>.journal.jsonl`` next to the output; at the end the journal and any
earlier output are consolidated into ``<out>`` (Parquet or CSV) and the journal is removed.
Re-running skips every run whose key is already in the output or the journal.

The frame has one row per run, sorted by the configuration columns: ``run_key``, the
configuration (:data:`CONFIG_COLUMNS`), then :meth:`Result.summary` metrics, whose names carry
their units. ``sim_wall_s`` and ``run_wall_s`` (:data:`WALL_COLUMNS`) are wall-clock times and
differ between otherwise identical runs.
"""
from __future__ import annotations

import difflib
import functools
import hashlib
import itertools
import json
import os
import time
import uuid
from dataclasses import asdict, dataclass
from pathlib import Path

import yaml

from .yamlio import read_yaml_mapping
from .errors import ConfigError, SnsimError
from .result import RUN_COLUMNS

SWEEP_KEYS = ("name", "description", "networks", "batches", "policies", "gpus", "budgets",
              "allocators", "policy_options", "optimizer", "variant", "framework", "amp",
              "param_dtype")
REQUIRED_KEYS = ("networks", "batches", "policies")
CONFIG_COLUMNS = ("network", "batch", "gpu", "policy", "policy_options", "allocator", "budget",
                  "budget_bytes", "optimizer", "variant", "framework", "amp", "param_dtype")
SORT_COLUMNS = ("network", "batch", "gpu", "policy", "policy_options", "allocator",
                "budget_bytes", "budget", "optimizer", "variant", "framework", "amp",
                "param_dtype")
WALL_COLUMNS = ("sim_wall_s", "run_wall_s")
_DUPLICATE_METRICS = ("network", "batch", "policy", "allocator", "budget_bytes", "framework")
_STRING_COLUMNS = ("run_key", "run_id", "hardware", "failure", "network", "gpu", "policy",
                   "policy_options", "allocator", "budget", "optimizer", "variant", "framework",
                   "amp", "param_dtype")
_METRICS = frozenset(RUN_COLUMNS) - set(_DUPLICATE_METRICS)
_KEY_VERSION = 1   # bump when a change of the engine makes earlier results stale


# -- configuration -----------------------------------------------------------------------------
@dataclass(frozen=True, slots=True, kw_only=True)
class RunConfig:
    """One resolved run of a sweep. ``policy_options`` is canonical JSON (sorted keys)."""

    network: str
    batch: int
    gpu: str
    policy: str
    policy_options: str
    allocator: str
    budget: str
    budget_bytes: int
    optimizer: str
    variant: str
    hardware_hash: str
    framework: str = "superneurons"
    amp: str = "none"
    param_dtype: str = "fp32"

    @property
    def run_key(self):
        d = asdict(self)
        d.pop("budget")  # a label: "default" and the same size written out are one run
        # the keys of sweeps run before these keys existed still hold
        for k, default in (("framework", "superneurons"), ("amp", "none"),
                           ("param_dtype", "fp32")):
            if d[k] == default:
                d.pop(k)
        blob = json.dumps([_KEY_VERSION, d], sort_keys=True)
        return hashlib.sha1(blob.encode()).hexdigest()[:16]

    def columns(self):
        return {c: getattr(self, c) for c in CONFIG_COLUMNS}


@dataclass(frozen=True, slots=True, kw_only=True)
class Sweep:
    """A loaded, checked sweep file: its name, source and resolved runs (grid order)."""

    name: str
    source: str
    runs: tuple

    def __len__(self):
        return len(self.runs)


class _Doc:
    """A parsed YAML mapping plus the line of each key and list item, for error messages."""

    def __init__(self, path, data, lines):
        self.path, self.data, self.lines = path, data, lines

    def where(self, field):
        line = self.lines.get(field)
        while line is None and ("[" in field or "." in field):
            field = field[:max(field.rfind("["), field.rfind("."))]
            line = self.lines.get(field)
        return f" ({self.path}:{line})" if line else f" ({self.path})"

    def fail(self, field, message):
        raise ConfigError(f"sweep.{field} {message}{self.where(field)}")


def _node_lines(node, prefix, lines):
    if isinstance(node, yaml.MappingNode):
        for k, v in node.value:
            key = f"{prefix}.{k.value}" if prefix else str(k.value)
            lines.setdefault(key, k.start_mark.line + 1)
            _node_lines(v, key, lines)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            key = f"{prefix}[{i}]"
            lines[key] = item.start_mark.line + 1
            _node_lines(item, key, lines)


def _read_yaml(path):
    data, node = read_yaml_mapping(path, what="sweep file", prefix="sweep")
    lines = {}
    _node_lines(node, "", lines)
    return _Doc(str(path), data, lines)


def _as_list(doc, key, default):
    if key not in doc.data:
        return list(default)
    v = doc.data[key]
    if v is None or v == []:
        doc.fail(key, "is empty; list at least one value")
    return list(v) if isinstance(v, list) else [v]


def _no_duplicates(doc, key, values):
    seen = {}
    for i, v in enumerate(values):
        h = json.dumps(v, sort_keys=True, default=str)
        if h in seen:
            doc.fail(f"{key}[{i}]", f"(={v!r}) repeats {key}[{seen[h]}]")
        seen[h] = i


def _check_names(doc, key, values, check):
    for i, v in enumerate(values):
        if not isinstance(v, str) or not v.strip():
            doc.fail(f"{key}[{i}]", f"(={v!r}) must be a name")
        try:
            check(v)
        except SnsimError as e:
            doc.fail(f"{key}[{i}]", f"(={v!r}) is not usable: {e}")


@functools.lru_cache(maxsize=64)
def _hardware(gpu):
    from .hardware import load_hardware
    return load_hardware(gpu)


def _hardware_hash(hw):
    d = {k: v for k, v in hw.to_dict().items() if k not in ("description", "sources")}
    return hashlib.sha1(json.dumps(d, sort_keys=True, default=str).encode()).hexdigest()[:12]


def _policies(doc):
    from .policies import get_policy
    entries = _as_list(doc, "policies", ())
    defaults = doc.data.get("policy_options") or {}
    if not isinstance(defaults, dict):
        doc.fail("policy_options", "must map policy names to option mappings")
    out = []
    for i, e in enumerate(entries):
        field = f"policies[{i}]"
        if isinstance(e, str):
            name, opts = e, {}
        elif isinstance(e, dict):
            unknown = sorted(set(e) - {"name", "options"})
            if unknown:
                doc.fail(f"{field}.{unknown[0]}", "is not a known key; a policy entry has "
                         "name and options")
            if "name" not in e:
                doc.fail(field, "needs a name")
            name, opts = e["name"], e.get("options") or {}
            if not isinstance(opts, dict):
                doc.fail(f"{field}.options", f"(={opts!r}) must be a mapping of option values")
        else:
            doc.fail(field, f"(={e!r}) must be a policy name or a mapping with name and options")
        if not isinstance(name, str):
            doc.fail(field, f"(={name!r}) must be a policy name")
        base = defaults.get(name) or {}
        if not isinstance(base, dict):
            doc.fail(f"policy_options.{name}", "must be a mapping of option values")
        merged = {**base, **opts}
        try:
            pol = get_policy(name, **merged)
        except SnsimError as e:
            doc.fail(field, f"(={name!r}) is not usable: {e}")
        canonical = {k: pol.options[k] for k in merged}   # "CONV" and [CONV] are one run
        out.append((pol.name, json.dumps(canonical, sort_keys=True, default=list)))
    for name in defaults:
        if name not in {p for p, _ in out}:
            doc.fail(f"policy_options.{name}", "names a policy that is not in sweep.policies")
    _no_duplicates(doc, "policies", out)
    return out


def load_sweep(path):
    """Read and check a sweep YAML file; return a :class:`Sweep` with every run resolved.

    Raises
    ------
    ConfigError
        One line naming the file, line and field: a YAML parse error, a missing or unknown
        key, an empty list, a non-positive batch, an unknown network, policy, option, gpu or
        allocator, or a budget that is not a byte size.

    Examples
    --------
    >>> s = load_sweep("configs/sweeps/example.yaml")
    >>> len(s) > 0, s.runs[0].gpu
    (True, 'k40c')
    """
    from .engine.allocators import ALLOCATORS
    from .program import FRAMEWORKS, OPTIMIZER_STATE_FACTOR
    from .units import parse_bytes
    from .zoo import VARIANTS, build_network

    doc = _read_yaml(path)
    unknown = [k for k in doc.data if k not in SWEEP_KEYS]
    if unknown:
        k = str(unknown[0])
        close = difflib.get_close_matches(k, SWEEP_KEYS, n=1)
        hint = f"; did you mean {close[0]}?" if close else f"; known keys: {', '.join(SWEEP_KEYS)}"
        raise ConfigError(f"sweep.{k} is not a known key{doc.where(k)}{hint}")
    for k in REQUIRED_KEYS:
        if k not in doc.data:
            raise ConfigError(f"sweep.{k} is missing ({doc.path}); a sweep needs "
                              f"{', '.join(REQUIRED_KEYS)}")
    variant = doc.data.get("variant", "torchvision")
    if variant not in VARIANTS:
        doc.fail("variant", f"(={variant!r}) must be one of {', '.join(VARIANTS)}")
    optimizer = doc.data.get("optimizer", "sgd-momentum")
    if optimizer not in OPTIMIZER_STATE_FACTOR:
        doc.fail("optimizer", f"(={optimizer!r}) must be one of "
                 f"{', '.join(OPTIMIZER_STATE_FACTOR)}")
    framework = doc.data.get("framework", "superneurons")
    if framework not in FRAMEWORKS:
        doc.fail("framework", f"(={framework!r}) must be one of {', '.join(FRAMEWORKS)}")
    amp = str(doc.data.get("amp", "none"))
    param_dtype = str(doc.data.get("param_dtype", "fp32"))
    from .torchsim.amp import AMP_DTYPES, PARAM_DTYPES   # torch-free
    if amp not in ("none",) + AMP_DTYPES:
        doc.fail("amp", f"(={amp!r}) must be one of none, {', '.join(AMP_DTYPES)}")
    if param_dtype not in PARAM_DTYPES:
        doc.fail("param_dtype", f"(={param_dtype!r}) must be one of {', '.join(PARAM_DTYPES)}")
    for key, value, default in (("amp", amp, "none"), ("param_dtype", param_dtype, "fp32")):
        if value != default and framework != "pytorch":
            doc.fail(key, f"(={value!r}) needs framework: pytorch (SuperNeurons' framework "
                     f"trains in fp32)")
    if amp != "none" and param_dtype != "fp32":
        doc.fail("param_dtype", f"(={param_dtype!r}) with amp {amp!r}: autocast keeps fp32 "
                 f"master weights; use one of the two")

    networks = _as_list(doc, "networks", ())
    _check_names(doc, "networks", networks,
                 lambda n: build_network(n, batch=1, variant=variant))
    _no_duplicates(doc, "networks", networks)
    batches = _as_list(doc, "batches", ())
    for i, b in enumerate(batches):
        if isinstance(b, bool) or not isinstance(b, int) or b <= 0:
            doc.fail(f"batches[{i}]", f"(={b!r}) must be a positive integer")
    _no_duplicates(doc, "batches", batches)
    gpus = _as_list(doc, "gpus", ("k40c",))
    _check_names(doc, "gpus", gpus, _hardware)
    _no_duplicates(doc, "gpus", gpus)
    allocators = _as_list(doc, "allocators", ("ideal",))
    for i, a in enumerate(allocators):
        if a not in ALLOCATORS:
            doc.fail(f"allocators[{i}]", f"(={a!r}) must be one of {', '.join(ALLOCATORS)}")
    _no_duplicates(doc, "allocators", allocators)
    budgets = []
    for i, b in enumerate(_as_list(doc, "budgets", (None,))):
        if b is None or b == "default":
            budgets.append(("default", None))
            continue
        try:
            nbytes = parse_bytes(b, field=f"sweep.budgets[{i}]")
        except ConfigError as e:
            raise ConfigError(f"{e}{doc.where(f'budgets[{i}]')}") from None
        if nbytes <= 0:
            doc.fail(f"budgets[{i}]", f"(={b!r}) must be > 0")
        budgets.append((str(b), nbytes))
    _no_duplicates(doc, "budgets", budgets)
    policies = _policies(doc)

    runs = []
    for net, batch, gpu, (pol, opts), alloc, (label, nbytes) in itertools.product(
            networks, batches, gpus, policies, allocators, budgets):
        hw = _hardware(gpu)
        runs.append(RunConfig(network=net, batch=batch, gpu=gpu, policy=pol,
                              policy_options=opts, allocator=alloc, budget=label,
                              budget_bytes=hw.budget_bytes if nbytes is None else nbytes,
                              optimizer=optimizer, variant=variant,
                              hardware_hash=_hardware_hash(hw), framework=framework, amp=amp,
                              param_dtype=param_dtype))
    keys = {}
    for r in runs:
        if r.run_key in keys:
            raise ConfigError(f"sweep.budgets: {keys[r.run_key].budget!r} and {r.budget!r} are "
                              f"the same budget for {r.gpu}{doc.where('budgets')}")
        keys[r.run_key] = r
    name = doc.data.get("name") or Path(path).stem
    return Sweep(name=str(name), source=doc.path, runs=tuple(runs))


# -- running -----------------------------------------------------------------------------------
def run_one(config):
    """Simulate one :class:`RunConfig`; return its row (``run_key``, config, metrics).

    Module-level so Dask workers can import it.
    """
    from .api import simulate
    wall = time.perf_counter()
    r = simulate(config.network, batch=config.batch, hardware=_hardware(config.gpu),
                 policy=config.policy, budget_bytes=config.budget_bytes,
                 allocator=config.allocator, policy_options=json.loads(config.policy_options),
                 optimizer=config.optimizer, variant=config.variant, record=False,
                 framework=config.framework,
                 amp=None if config.amp == "none" else config.amp,
                 param_dtype=config.param_dtype)
    row = {"run_key": config.run_key, **config.columns()}
    for k, v in r.summary().items():
        if k not in _DUPLICATE_METRICS:
            row[k] = v
    row["run_wall_s"] = time.perf_counter() - wall
    return row


class _Journal:
    """Append-only JSON-lines record of finished rows; a torn last line is ignored."""

    def __init__(self, path):
        self.path = Path(path)
        self._f = None

    def load(self):
        rows = {}
        if not self.path.exists():
            return rows
        with open(self.path, encoding="utf-8") as f:
            for line in f:
                try:
                    row = json.loads(line)
                except json.JSONDecodeError:
                    continue  # a write cut short by a crash: that run is simply redone
                if isinstance(row, dict) and "run_key" in row:
                    rows[row["run_key"]] = row
        return rows

    def append(self, row):
        if self._f is None:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self._f = open(self.path, "a", encoding="utf-8")
        self._f.write(json.dumps(row, default=_json_default) + "\n")
        self._f.flush()

    def close(self):
        if self._f is not None:
            os.fsync(self._f.fileno())
            self._f.close()
            self._f = None


def _json_default(o):
    if hasattr(o, "item"):
        return o.item()
    raise TypeError(f"{type(o).__name__} is not JSON serialisable")


def _format(out):
    name = Path(out).name.lower()
    if name.endswith(".parquet"):
        return "parquet"
    if name.endswith(".csv"):
        return "csv"
    raise ConfigError(f"--out {out} must end in .parquet or .csv")


def parquet_available():
    """Whether pandas can write Parquet here (pyarrow or fastparquet installed)."""
    import importlib.util
    return any(importlib.util.find_spec(m) is not None for m in ("pyarrow", "fastparquet"))


def _check_writer(out):
    """Fail before computing anything when ``out``'s format cannot be written."""
    if _format(out) == "parquet" and not parquet_available():
        raise ConfigError(f"--out {out}: writing Parquet needs pyarrow (pip install "
                          f"'snsim[dask]'); or write .csv")


def _read_output(out):
    import pandas as pd
    out = Path(out)
    if not out.exists():
        return {}
    try:
        if _format(out) == "parquet":
            df = pd.read_parquet(out)
        else:
            # hex keys such as "12e45" must stay strings; "" must stay "" (not NaN)
            df = pd.read_csv(out, keep_default_na=False,
                             dtype={c: str for c in _STRING_COLUMNS})
    except (OSError, ValueError) as e:
        raise ConfigError(f"{out}: cannot read earlier results ({e}); move it away or use "
                          f"--fresh") from None
    if "run_key" not in df.columns:
        return {}
    return {r["run_key"]: {k: _json_default(v) if hasattr(v, "item") else v for k, v in r.items()}
            for r in df.to_dict("records")}


def _write_output(df, out):
    out = Path(out)
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(out.name + ".tmp")
    if _format(out) == "parquet":
        try:
            df.to_parquet(tmp, index=False)
        except ImportError:
            raise ConfigError(f"--out {out}: writing Parquet needs pyarrow (pip install "
                              f"'snsim[dask]'); or write .csv") from None
    else:
        df.to_csv(tmp, index=False)
    os.replace(tmp, out)


def to_frame(rows):
    """Rows -> the sweep DataFrame, sorted by the configuration columns."""
    import pandas as pd
    df = pd.DataFrame(list(rows))
    if df.empty:
        return df
    return df.sort_values(list(SORT_COLUMNS), kind="mergesort").reset_index(drop=True)


def _run_local(configs, sink):
    for cfg in configs:
        sink(run_one(cfg))


def _distributed():
    try:
        import distributed
    except ImportError:
        raise ConfigError("running a sweep on Dask needs dask[distributed] (pip install "
                          "'snsim[dask]')") from None
    return distributed


def _run_dask(configs, client, sink, *, max_attempts=3):
    _distributed()
    from distributed import as_completed
    from distributed.client import FutureCancelledError
    from distributed.scheduler import KilledWorker

    token = uuid.uuid4().hex[:8]  # a cancelled earlier attempt must not shadow this one

    def submit(cfg, attempt):
        return client.submit(run_one, cfg, key=f"snsim-run-{cfg.run_key}-{token}-{attempt}",
                             pure=False)

    pending = {}
    for cfg in configs:
        pending[submit(cfg, 0)] = (cfg, 0)
    ac = as_completed(list(pending))
    try:
        for fut in ac:
            cfg, attempt = pending.pop(fut)
            try:
                row = fut.result()
            except (KilledWorker, FutureCancelledError):
                # the scheduler already moved it off dead workers (allowed-failures times) or
                # the cluster restarted: submit it again under a fresh key
                if attempt + 1 >= max_attempts:
                    raise
                new = submit(cfg, attempt + 1)
                pending[new] = (cfg, attempt + 1)
                ac.add(new)
                continue
            fut.release()
            sink(row)
    finally:
        if pending:
            client.cancel(list(pending))


def run_sweep(sweep, *, out=None, workers=None, scheduler=None, client=None, fresh=False,
              progress=False, on_result=None):
    """Run every run of a sweep; return the tidy DataFrame (one row per run).

    Parameters
    ----------
    sweep : str, pathlib.Path or Sweep
        A sweep YAML file or a loaded :class:`Sweep`.
    out : str or pathlib.Path, optional
        ``.parquet`` or ``.csv`` to write. With it the sweep is resumable: finished rows go to
        ``<out>.journal.jsonl`` as they arrive and runs already in ``out`` or the journal are
        skipped. Without it nothing is written.
    workers : int, optional
        Run on a fresh local Dask cluster of this many single-threaded worker processes
        (spawned: a script that passes ``workers`` must guard its entry point with
        ``if __name__ == "__main__":``).
    scheduler : str, optional
        Run on an existing Dask cluster (``tcp://host:8786``); snsim must be importable there.
    client : distributed.Client, optional
        Run on this client's cluster (left open).
    fresh : bool
        Ignore (and replace) earlier results in ``out`` and its journal.
    progress : bool
        Show a tqdm bar on stderr.
    on_result : callable, optional
        Called with each new row after it is saved (a hook for progress and tests).

    Returns
    -------
    pandas.DataFrame

    Examples
    --------
    >>> df = run_sweep("configs/sweeps/example.yaml")
    >>> df[["network", "batch", "policy", "feasible"]].shape[0] == len(load_sweep(
    ...     "configs/sweeps/example.yaml"))
    True
    """
    if not isinstance(sweep, Sweep):
        sweep = load_sweep(sweep)
    if sum(x is not None for x in (workers, scheduler, client)) > 1:
        raise ConfigError("give at most one of workers, scheduler and client")
    if workers is not None and (isinstance(workers, bool) or not isinstance(workers, int)
                                or workers < 1):
        raise ConfigError(f"workers (={workers!r}) must be a positive integer")
    if out is not None:
        _check_writer(out)
    wanted = {r.run_key: r for r in sweep.runs}
    done = {}
    journal = None
    if out is not None:
        journal = _Journal(Path(str(out) + ".journal.jsonl"))
        if fresh:
            journal.path.unlink(missing_ok=True)
        else:
            done.update(_read_output(out))
            done.update(journal.load())
    # keep the runs of this grid whose rows have every current metric (older snsim versions
    # wrote fewer); their configuration columns come from the grid itself
    done = {k: {**v, **wanted[k].columns()} for k, v in done.items()
            if k in wanted and _METRICS.issubset(v)}
    todo = [r for r in sweep.runs if r.run_key not in done]

    bar = None
    if progress and todo:
        from tqdm import tqdm
        bar = tqdm(total=len(todo), desc=f"sweep {sweep.name}", unit="run")

    def sink(row):
        done[row["run_key"]] = row
        if journal is not None:
            journal.append(row)
        if bar is not None:
            bar.update()
        if on_result is not None:
            on_result(row)

    try:
        if todo:
            if client is not None:
                _run_dask(todo, client, sink)
            elif workers is not None or scheduler is not None:
                with _dask_client(workers=workers, scheduler=scheduler) as c:
                    _run_dask(todo, c, sink)
            else:
                _run_local(todo, sink)
    finally:
        if bar is not None:
            bar.close()
        if journal is not None:
            journal.close()
    df = to_frame(done[k] for k in wanted)
    if out is not None:
        _write_output(df, out)
        journal.path.unlink(missing_ok=True)
    return df


class _dask_client:
    """A client on a fresh LocalCluster (``workers``) or on ``scheduler``; closed on exit."""

    def __init__(self, *, workers=None, scheduler=None):
        self.workers, self.scheduler = workers, scheduler
        self.cluster = self.client = None

    def __enter__(self):
        _distributed()
        from distributed import Client, LocalCluster
        if self.scheduler is not None:
            try:
                self.client = Client(self.scheduler, timeout="20s")
            except (OSError, TimeoutError) as e:
                raise ConfigError(f"--scheduler {self.scheduler}: cannot connect ({e})") from None
        else:
            self.cluster = LocalCluster(n_workers=self.workers, threads_per_worker=1,
                                        processes=True, dashboard_address=":0")
            self.client = Client(self.cluster)
        return self.client

    def __exit__(self, *exc):
        self.client.close()
        if self.cluster is not None:
            self.cluster.close()
        return False
