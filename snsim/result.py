"""The record of one simulated iteration (SPEC §13). Picklable; DataFrames are built on demand."""
from __future__ import annotations

import hashlib
import json
from dataclasses import asdict, dataclass, field

RUN_COLUMNS = ("run_id", "network", "batch", "framework", "policy", "hardware", "allocator",
               "budget_bytes",
               "feasible", "peak_ideal_bytes", "peak_allocated_bytes", "peak_reserved_bytes",
               "peak_tensor_bytes",
               "peak_device_bytes", "static_bytes", "lower_bound_bytes", "step_time_s",
               "images_per_s", "compute_time_s", "recompute_time_s", "stall_time_s", "h2d_bytes",
               "d2h_bytes", "evictions", "cache_hits", "cache_misses", "sim_wall_s")


@dataclass(frozen=True, slots=True)
class Failure:
    """Where memory ran out: the step, its layer, the tensor being allocated, bytes short.

    ``replaying`` names the layer whose forward was being replayed for backward step ``step``
    when the failure came from a recomputation (empty otherwise).
    """

    step: int
    layer: str
    phase: str
    tensor: str
    time_s: float
    requested_bytes: int
    short_bytes: int
    replaying: str = ""
    reason: str = ""       # why, when not GPU memory alone (DTR's remat_limit, host memory)

    def __str__(self):
        if self.reason and not self.replaying:
            where = "during setup" if self.step < 0 else \
                f"at step {self.step} ({self.layer} {self.phase})"
            return f"{self.reason} {where}"
        if self.reason:
            return (f"{self.reason} at step {self.step} ({self.layer} {self.phase}) "
                    f"replaying {self.replaying} F")
        if self.step < 0:
            return (f"out of memory during setup (static tensors and preallocated buffers) "
                    f"allocating {self.tensor} ({self.requested_bytes} B, {self.short_bytes} B short)")
        replay = f" replaying {self.replaying} F," if self.replaying else ""
        return (f"out of memory at step {self.step} ({self.layer} {self.phase}){replay} "
                f"allocating {self.tensor} ({self.requested_bytes} B, {self.short_bytes} B short)")


@dataclass(slots=True)
class Result:
    """What a run of the engine reports.

    Memory figures include the static footprint (parameters, gradients, optimizer state,
    buffers, input batch); ``peak_device_bytes`` adds the CUDA context on top of reserved.
    """

    network: str
    batch: int
    policy: str
    hardware: str
    allocator: str
    budget_bytes: int
    feasible: bool
    failure: Failure | None
    peak_ideal_bytes: int
    peak_allocated_bytes: int
    peak_reserved_bytes: int
    peak_tensor_bytes: int       # ideal peak without conv workspaces (they adapt to free memory)
    context_bytes: int
    static_bytes: int
    static_breakdown: dict
    lower_bound_bytes: int
    step_time_s: float
    compute_time_s: float
    recompute_time_s: float
    stall_time_s: float
    h2d_bytes: int
    d2h_bytes: int
    counters: dict
    recomputed_layers: tuple
    conv_algos: dict
    options: dict = field(default_factory=dict)
    sim_wall_s: float = 0.0
    steps: list = field(default_factory=list, repr=False)       # raw step records
    transfers: list = field(default_factory=list, repr=False)   # raw copy records
    memory_events: list = field(default_factory=list, repr=False)  # (t_s, category, delta_bytes)
    allocator_trace: list = field(default_factory=list, repr=False)  # (t_s, allocated, reserved)
    framework: str = "superneurons"   # the program's semantics ("pytorch"), or its source

    @property
    def peak_device_bytes(self):
        return self.peak_reserved_bytes + self.context_bytes

    @property
    def images_per_s(self):
        return self.batch / self.step_time_s if self.feasible and self.step_time_s > 0 else 0.0

    @property
    def evictions(self):
        return self.counters.get("evictions", 0)

    @property
    def cache_hits(self):
        return self.counters.get("cache_hits", 0)

    @property
    def cache_misses(self):
        return self.counters.get("cache_misses", 0)

    @property
    def run_id(self):
        parts = [self.network, self.batch, self.policy, self.hardware, self.allocator,
                 self.budget_bytes, self.options]
        if self.framework != "superneurons":   # keep the ids of existing runs
            parts.append(self.framework)
        key = json.dumps(parts, sort_keys=True, default=str)
        return hashlib.sha1(key.encode()).hexdigest()[:12]

    def summary(self):
        """One flat dict of the run-level figures (the row of :meth:`to_frame`)."""
        row = {c: getattr(self, c) for c in RUN_COLUMNS}
        row["failure"] = str(self.failure) if self.failure else ""
        row["prefetch_late"] = self.counters.get("prefetch_late", 0)
        row["recomputed_layers"] = len(self.recomputed_layers)
        return row

    def to_frame(self):
        import pandas as pd
        return pd.DataFrame([self.summary()])

    def steps_frame(self):
        import pandas as pd
        return pd.DataFrame(self.steps, columns=["step", "layer", "phase", "start_s", "end_s",
                                                 "highwater_bytes", "workspace_bytes", "algo",
                                                 "stall_s"])

    def transfers_frame(self):
        import pandas as pd
        return pd.DataFrame(self.transfers, columns=["tensor_id", "direction", "nbytes", "issue_s",
                                                     "start_s", "end_s", "pinned"])

    def timeline_frame(self):
        """Memory over the step: one row per change, with the running total per category."""
        import pandas as pd
        df = pd.DataFrame(self.memory_events, columns=["t_s", "category", "delta_bytes"])
        if df.empty:
            return df.assign(bytes=[])
        df["bytes"] = df.groupby("category")["delta_bytes"].cumsum()
        return df

    def to_dict(self):
        d = self.summary()
        d.update(failure=asdict(self.failure) if self.failure else None,
                 counters=dict(self.counters), static_breakdown=dict(self.static_breakdown),
                 context_bytes=self.context_bytes, options=self.options,
                 recomputed_layers=list(self.recomputed_layers))
        return d
