"""Hardware presets: a frozen :class:`HardwareSpec` and its YAML loader (SPEC §9).

Presets live in ``configs/hardware/<name>.yaml`` (canonical) with identical copies in
``snsim/presets/hardware/`` so that a non-editable install finds them too. Every key carries its
unit (``dram_bytes``, ``copy_latency_s``, ``mem_bytes_per_s``) and every value is a plain number:
``dram_bytes: 12GB`` is refused at the config boundary, where the error can name the file, the
line and the rule.
"""
from __future__ import annotations

import dataclasses
import difflib
import functools
import math
import numbers
import re
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType

import yaml

from ..checks import MAX_COUNT
from ..yamlio import read_yaml_mapping
from ..errors import ConfigError, UnknownNameError

DEFAULT_HARDWARE = "k40c"

#: Layer types (lower case) and the two non-layer kinds that need a roofline efficiency.
#: ``mem`` is the achieved fraction of ``mem_bytes_per_s`` for the memory term of CONV and FC;
#: ``update`` is the one for the bandwidth-bound parameter update (SPEC §2.2, U steps).
EFFICIENCY_KEYS = ("conv", "fc", "bn", "act", "pool", "lrn", "dropout", "softmax", "fork",
                   "join", "concat", "padding", "update", "mem")

_ALIASES = {"a100": "a100-40gb", "k40": "k40c"}

_HERE = Path(__file__).resolve()
_REPO_ROOT = _HERE.parents[2]
_REPO_PRESETS = _REPO_ROOT / "configs" / "hardware"
_PKG_PRESETS = _HERE.parents[1] / "presets" / "hardware"

# Field kinds, for validation and for the YAML boundary's coercion.
_BYTES_FIELDS = ("dram_bytes", "context_bytes", "reserve_bytes", "host_pinned_bytes",
                 "host_dram_bytes", "lazy_loading_window_bytes", "lazy_loading_cublas_bytes")
_RATE_FIELDS = ("peak_flops_fp32", "mem_bytes_per_s", "h2d_pinned_bytes_per_s",
                "d2h_pinned_bytes_per_s", "h2d_pageable_bytes_per_s", "d2h_pageable_bytes_per_s",
                "host_mem_bytes_per_s")
_TIME_FIELDS = ("copy_latency_s", "launch_overhead_s", "malloc_latency_s", "free_latency_s",
                "host_page_fault_s", "host_op_overhead_s", "host_gauge_fast_s",
                "host_gauge_slow_s")

# Ranges that keep every modelled time finite and every division defined. Finite is not
# enough: peak_flops_fp32=5e-324 divides by zero, and an efficiency of 1e-300 or a latency of
# 1e308 gives an infinite step time. The bounds are far outside any real GPU.
RATE_RANGE = (1e3, 1e18)        # flop/s and bytes/s (1 kB/s: hand-made test links)
EFFICIENCY_RANGE = (0.01, 1.0)  # roofline and copy efficiencies
TIME_RANGE_S = (0.0, 1.0)       # one copy latency, launch overhead, cudaMalloc or cudaFree
EFF_RULE = f"in [{EFFICIENCY_RANGE[0]:g}, {EFFICIENCY_RANGE[1]:g}]"


def _where(path, line=None):
    if path is None:
        return ""
    return f" ({path}:{line})" if line else f" ({path})"


def _is_number(v):
    return isinstance(v, numbers.Real) and not isinstance(v, bool)


def _as_dict(value):
    if not isinstance(value, (Mapping, tuple, list)):
        return None
    try:
        return dict(value)
    except (TypeError, ValueError):
        return None


def _check_number(name, value, where, *, unit_hint):
    if isinstance(value, bool):
        raise ConfigError(f"hardware.{name} (={value!r}) must be a number, not a boolean{where}")
    if isinstance(value, str):
        raise ConfigError(f"hardware.{name} (={value!r}) must be a plain number{unit_hint}; "
                          f"put the unit in the key name{where}")
    if not _is_number(value):
        raise ConfigError(f"hardware.{name} (={value!r}) must be a number{where}")
    if not math.isfinite(value):
        raise ConfigError(f"hardware.{name} (={value!r}) must be finite{where}")
    return value


def _coerce_field(name, value, where=""):
    """Check one field and return its canonical value (ints for bytes, floats for rates)."""
    if name in _BYTES_FIELDS:
        v = _check_number(name, value, where, unit_hint=" of bytes")
        if float(v) != int(v):
            raise ConfigError(f"hardware.{name} (={value!r}) must be a whole number of bytes{where}")
        v = int(v)
        if name == "dram_bytes" and v <= 0:
            raise ConfigError(f"hardware.{name} (={value!r}) must be > 0{where}")
        if v < 0:
            raise ConfigError(f"hardware.{name} (={value!r}) must be >= 0{where}")
        if v > MAX_COUNT:
            raise ConfigError(f"hardware.{name} (={value!r}) must be <= 2**62{where}")
        return v
    if name in _RATE_FIELDS:
        v = float(_check_number(name, value, where, unit_hint=""))
        lo, hi = RATE_RANGE
        if not lo <= v <= hi:
            raise ConfigError(f"hardware.{name} (={value!r}) must be in [{lo:g}, {hi:g}]{where}")
        return v
    if name in _TIME_FIELDS:
        v = float(_check_number(name, value, where, unit_hint=" of seconds"))
        lo, hi = TIME_RANGE_S
        if not lo <= v <= hi:
            raise ConfigError(f"hardware.{name} (={value!r}) must be in [{lo:g}, {hi:g}] s{where}")
        return v
    if name == "copy_engines":
        v = _check_number(name, value, where, unit_hint="")
        if float(v) != int(v) or int(v) < 1:
            raise ConfigError(f"hardware.{name} (={value!r}) must be an integer >= 1{where}")
        return int(v)
    if name == "link_shared":
        if not isinstance(value, bool):
            raise ConfigError(f"hardware.{name} (={value!r}) must be true or false{where}")
        return value
    if name in ("name", "description"):
        if not isinstance(value, str) or (name == "name" and not value.strip()):
            rule = "a non-empty string" if name == "name" else "a string"
            raise ConfigError(f"hardware.{name} (={value!r}) must be {rule}{where}")
        return value
    if name == "efficiency":
        return _coerce_efficiency(value, where)
    if name == "copy_efficiency_by_bytes":
        return _coerce_copy_efficiency(value, where)
    if name == "sources":
        return _coerce_sources(value, where)
    if name == "source_path":
        if value is not None and not isinstance(value, str):
            raise ConfigError(f"hardware.source_path (={value!r}) must be a string or None")
        return value
    raise ConfigError(f"hardware.{name} is not a known key{where}")  # pragma: no cover


def _coerce_efficiency(value, where):
    items = _as_dict(value)
    if items is None:
        raise ConfigError(f"hardware.efficiency (={value!r}) must be a mapping of layer type to "
                          f"a number {EFF_RULE}{where}")
    unknown = sorted(set(map(str, items)) - set(EFFICIENCY_KEYS))
    if unknown:
        raise ConfigError(f"hardware.efficiency.{unknown[0]} is not a known key{where}; "
                          f"known: {', '.join(EFFICIENCY_KEYS)}")
    missing = [k for k in EFFICIENCY_KEYS if k not in items]
    if missing:
        raise ConfigError(f"hardware.efficiency is missing {', '.join(missing)}{where}; "
                          f"every one of {', '.join(EFFICIENCY_KEYS)} needs a value {EFF_RULE}")
    out = []
    for k in EFFICIENCY_KEYS:
        v = _check_number(f"efficiency.{k}", items[k], where, unit_hint="")
        if not EFFICIENCY_RANGE[0] <= v <= EFFICIENCY_RANGE[1]:
            raise ConfigError(f"hardware.efficiency.{k} (={items[k]!r}) must be {EFF_RULE}{where}")
        out.append((k, float(v)))
    return tuple(out)


def _coerce_copy_efficiency(value, where):
    if value is None:
        return ()
    if isinstance(value, (str, Mapping)) or not hasattr(value, "__iter__"):
        raise ConfigError(f"hardware.copy_efficiency_by_bytes (={value!r}) must be a list of "
                          f"[bytes, efficiency] pairs{where}")
    out = []
    for i, pair in enumerate(value):
        if isinstance(pair, (str, Mapping)) or not hasattr(pair, "__len__") or len(pair) != 2:
            raise ConfigError(f"hardware.copy_efficiency_by_bytes[{i}] (={pair!r}) must be a "
                              f"[bytes, efficiency] pair{where}")
        nbytes = _check_number(f"copy_efficiency_by_bytes[{i}][0]", pair[0], where,
                               unit_hint=" of bytes")
        eff = _check_number(f"copy_efficiency_by_bytes[{i}][1]", pair[1], where, unit_hint="")
        if not 0 < nbytes <= MAX_COUNT or not EFFICIENCY_RANGE[0] <= eff <= EFFICIENCY_RANGE[1]:
            raise ConfigError(f"hardware.copy_efficiency_by_bytes[{i}] (={list(pair)!r}) needs "
                              f"bytes in (0, 2**62] and efficiency {EFF_RULE}{where}")
        if out and nbytes <= out[-1][0]:
            raise ConfigError(f"hardware.copy_efficiency_by_bytes[{i}] (={list(pair)!r}) must "
                              f"have more bytes than the pair before it{where}")
        out.append((float(nbytes), float(eff)))
    return tuple(out)


def _coerce_sources(value, where):
    if value is None:
        return ()
    items = _as_dict(value)
    if items is None:
        raise ConfigError(f"hardware.sources (={value!r}) must be a mapping of key to a "
                          f"description of where its figure came from{where}")
    known = set(_YAML_KEYS) - {"sources"}
    for k, v in items.items():
        if k not in known:
            raise ConfigError(f"hardware.sources.{k} is not a known key{where}; it must name "
                              f"one of the hardware keys")
        if not isinstance(v, str) or not v.strip():
            raise ConfigError(f"hardware.sources.{k} (={v!r}) must be a non-empty string{where}")
    return tuple(sorted(items.items()))


@functools.lru_cache(maxsize=64)
def _eff_table(pairs):
    return dict(pairs)


@dataclass(frozen=True, slots=True, kw_only=True)
class HardwareSpec:
    """One GPU and its host link, in SI units (SPEC §9).

    Build one with :func:`load_hardware`; change a copy with :func:`dataclasses.replace`
    (which validates again).

    Attributes
    ----------
    dram_bytes : int
        Device memory as the device reports it (``cudaGetDeviceProperties().totalGlobalMem``).
    context_bytes, reserve_bytes : int
        CUDA context and a user reserve; ``budget_bytes`` is what is left for snsim's tensors.
    peak_flops_fp32, mem_bytes_per_s : float
        Roofline peaks.
    h2d_pinned_bytes_per_s, d2h_pinned_bytes_per_s, h2d_pageable_bytes_per_s, d2h_pageable_bytes_per_s : float
        Host link bandwidth per direction and host-buffer kind.
    copy_latency_s, launch_overhead_s, malloc_latency_s, free_latency_s : float
        Fixed costs of one copy, one kernel launch, one ``cudaMalloc`` and one ``cudaFree``.
    copy_engines : int
        DMA engines (2 = one per direction, full duplex).
    link_shared : bool
        True if both directions share one bandwidth.
    host_pinned_bytes : int
        Pinned host memory available for offloaded tensors.
    host_dram_bytes : int
        Host memory (pinned and pageable) the run may hold: offloaded tensors, and
        zero_offload's master parameters, gradient buffers and optimizer state.
    lazy_loading_window_bytes : int
        Address space that opens above every earlier segment at the first operation of the
        first training step under CUDA's lazy module loading (the default), which the
        caching allocator's next segments fill from its bottom while they fit (the pytorch
        allocator's ``lazy_window_bytes``); 0: not modelled.
    lazy_loading_cublas_bytes : int
        What cuBLAS maps into that window, outside the caching allocator, at the first GEMM
        of the step (the pytorch allocator's ``map_into_window``); 0: not modelled.
    host_mem_bytes_per_s, host_page_fault_s, host_op_overhead_s : float
        The CPU optimizer step (zero_offload, :mod:`snsim.policies.host_step`): the rate its
        elementwise ops stream bytes, the cost of one fresh 4 KiB page of a temporary, the
        dispatch of one op.
    host_gauge_fast_s, host_gauge_slow_s : float
        The launching thread's pace on this GPU's machines (:func:`snsim.torchsim.hostpace.
        gauge_add_s`, seconds per small ``torch.add``): the medians of the two groups its
        processes gauged in, fast and slow; ``snsim predict`` gives a host-bound step's time
        at each (``step_time_host_range_s``). 0: not measured, no range.
    efficiency : tuple of (str, float)
        Roofline efficiency per kind in ``EFFICIENCY_KEYS``; read it with :meth:`eff`.
    copy_efficiency_by_bytes : tuple of (float, float)
        ``(nbytes, efficiency)`` points, piecewise-linear in log2(nbytes); empty means 1.0.
    sources : tuple of (str, str)
        Where each figure came from (datasheet, measured, estimate).
    source_path : str or None
        The YAML file it was read from, used in error messages.

    Every field is checked on construction: byte counts are integers in [0, 2**62], rates in
    ``RATE_RANGE``, latencies in ``TIME_RANGE_S``, efficiencies in ``EFFICIENCY_RANGE``, so
    every modelled time is finite.

    Examples
    --------
    >>> hw = load_hardware("k40c")
    >>> hw.budget_bytes == hw.dram_bytes - hw.context_bytes - hw.reserve_bytes
    True
    >>> hw.eff("conv") <= 1.0
    True
    """

    name: str
    description: str = ""
    dram_bytes: int
    context_bytes: int
    reserve_bytes: int = 0
    peak_flops_fp32: float
    mem_bytes_per_s: float
    h2d_pinned_bytes_per_s: float
    d2h_pinned_bytes_per_s: float
    h2d_pageable_bytes_per_s: float
    d2h_pageable_bytes_per_s: float
    copy_latency_s: float
    launch_overhead_s: float
    malloc_latency_s: float
    free_latency_s: float
    copy_engines: int
    link_shared: bool = False
    host_pinned_bytes: int
    host_dram_bytes: int
    lazy_loading_window_bytes: int = 0
    lazy_loading_cublas_bytes: int = 0
    host_mem_bytes_per_s: float
    host_page_fault_s: float
    host_op_overhead_s: float
    host_gauge_fast_s: float = 0.0
    host_gauge_slow_s: float = 0.0
    efficiency: tuple
    copy_efficiency_by_bytes: tuple = ()
    sources: tuple = ()
    source_path: str | None = None

    def __post_init__(self):
        where = _where(self.source_path)
        for f in dataclasses.fields(self):
            value = _coerce_field(f.name, getattr(self, f.name), where)
            object.__setattr__(self, f.name, value)
        used = self.context_bytes + self.reserve_bytes
        if used >= self.dram_bytes:
            raise ConfigError(f"hardware.context_bytes + reserve_bytes (={used}) must be < "
                              f"dram_bytes (={self.dram_bytes}){where}")
        if self.host_pinned_bytes > self.host_dram_bytes:
            raise ConfigError(f"hardware.host_pinned_bytes (={self.host_pinned_bytes}) must be "
                              f"<= host_dram_bytes (={self.host_dram_bytes}): pinned memory is "
                              f"host memory{where}")

    # -- derived quantities --------------------------------------------------------------
    @property
    def budget_bytes(self):
        """``dram_bytes - context_bytes - reserve_bytes``: the bytes snsim may place (SPEC §1)."""
        return self.dram_bytes - self.context_bytes - self.reserve_bytes

    @property
    def efficiency_map(self):
        """The efficiency table as a read-only mapping."""
        return MappingProxyType(_eff_table(self.efficiency))

    def to_dict(self):
        """The YAML keys and their values (mappings as dicts), e.g. for a resolved config."""
        d = {k: getattr(self, k) for k in _YAML_KEYS}
        d["efficiency"] = dict(self.efficiency)
        d["sources"] = dict(self.sources)
        d["copy_efficiency_by_bytes"] = [list(p) for p in self.copy_efficiency_by_bytes]
        return d

    def eff(self, kind):
        """Roofline efficiency for ``kind`` (a key of ``EFFICIENCY_KEYS``, any case).

        Examples
        --------
        >>> load_hardware("h200").eff("CONV") == load_hardware("h200").eff("conv")
        True
        """
        try:
            return _eff_table(self.efficiency)[kind.lower()]
        except KeyError:
            raise UnknownNameError(f"efficiency kind {kind!r} is unknown; known: "
                                   f"{', '.join(EFFICIENCY_KEYS)}") from None

    def source_of(self, key):
        """Where the figure behind ``key`` came from (``None`` if the preset does not say)."""
        return dict(self.sources).get(key)

    def bandwidth_bytes_per_s(self, direction="h2d", pinned=True):
        """Nominal link bandwidth for one direction (``"h2d"`` or ``"d2h"``) and buffer kind."""
        if direction == "h2d":
            return self.h2d_pinned_bytes_per_s if pinned else self.h2d_pageable_bytes_per_s
        if direction == "d2h":
            return self.d2h_pinned_bytes_per_s if pinned else self.d2h_pageable_bytes_per_s
        raise ConfigError(f"direction (={direction!r}) must be 'h2d' or 'd2h'")

    def copy_efficiency(self, nbytes):
        """Size efficiency of one copy: piecewise-linear in log2(nbytes), clamped at the ends.

        1.0 when ``copy_efficiency_by_bytes`` is empty (the presets' default).
        """
        pts = self.copy_efficiency_by_bytes
        if not pts or nbytes <= 0:
            return 1.0 if not pts else pts[0][1]
        x = math.log2(nbytes)
        if x <= math.log2(pts[0][0]):
            return pts[0][1]
        for (b0, e0), (b1, e1) in zip(pts, pts[1:]):
            x0, x1 = math.log2(b0), math.log2(b1)
            if x <= x1:
                return e0 + (e1 - e0) * (x - x0) / (x1 - x0)
        return pts[-1][1]

    def transfer_time_s(self, nbytes, direction="h2d", pinned=True):
        """Time of one host-device copy: ``copy_latency_s + nbytes / (bandwidth * eff(nbytes))``.

        This is one copy alone on the link; sharing (``link_shared``) is the engine's job.

        Parameters
        ----------
        nbytes : int
            Bytes copied (>= 0).
        direction : {"h2d", "d2h"}
        pinned : bool
            Pinned (page-locked) or pageable host buffer.

        Examples
        --------
        >>> hw = load_hardware("k40c")
        >>> round(hw.transfer_time_s(11_000_000, "d2h"), 9)   # 10 us + 11 MB / 11 GB/s
        0.00101
        """
        if not _is_number(nbytes) or nbytes < 0:
            raise ConfigError(f"nbytes (={nbytes!r}) must be a number >= 0")
        bw = self.bandwidth_bytes_per_s(direction, pinned)
        return self.copy_latency_s + nbytes / (bw * self.copy_efficiency(nbytes))


_YAML_KEYS = tuple(f.name for f in dataclasses.fields(HardwareSpec) if f.name != "source_path")
_REQUIRED_KEYS = _YAML_KEYS


# -- YAML boundary -----------------------------------------------------------------------
class _Loader(yaml.SafeLoader):
    """SafeLoader that also reads ``288e9`` and ``1e-5`` as floats (YAML 1.1 reads strings)."""


_Loader.add_implicit_resolver(
    "tag:yaml.org,2002:float",
    re.compile(r"^[-+]?(?:[0-9][0-9_]*)(?:\.[0-9_]*)?[eE][-+]?[0-9]+$"),
    list("-+0123456789"),
)


def _display(path):
    p = Path(path)
    try:
        rp = p.resolve()
        if rp.is_relative_to(_REPO_ROOT):
            return str(rp.relative_to(_REPO_ROOT))
    except OSError:  # pragma: no cover
        pass
    return str(path)


def _read_yaml(path, shown):
    data, node = read_yaml_mapping(path, what="hardware file", prefix="hardware", shown=shown,
                                   loader=_Loader)
    lines = {}
    for key_node, value_node in node.value:
        key = key_node.value
        lines[key] = key_node.start_mark.line + 1
        if isinstance(value_node, yaml.MappingNode):
            for k2, _ in value_node.value:
                lines[f"{key}.{k2.value}"] = k2.start_mark.line + 1
    return data, lines


_SI = {"": 1, "k": 1e3, "m": 1e6, "g": 1e9, "t": 1e12, "p": 1e15}
_TIME_UNITS = {"s": 1.0, "ms": 1e-3, "us": 1e-6, "µs": 1e-6, "ns": 1e-9}
_UNIT_RE = re.compile(r"^\s*([0-9][0-9_]*\.?[0-9_]*(?:[eE][-+]?[0-9]+)?)\s*([^\s0-9].*?)?\s*$")


def _with_units(name, value, where):
    """A YAML value with a unit ("12GiB", "11 GB/s", "4.29 TFLOPS", "10us") as the plain
    number in the key's own unit; plain numbers pass through. Only user files go through this:
    the shipped presets keep plain numbers, so that each figure reads as its key says."""
    from ..units import parse_bytes
    if not isinstance(value, str):
        return value
    m = _UNIT_RE.match(value)
    num, unit = (float(m.group(1).replace("_", "")), (m.group(2) or "").strip()) if m else \
        (None, None)
    rule = None
    if name in _BYTES_FIELDS:
        rule = "a byte size such as 12GiB, 11.5GB or 4096"
        if m is not None:
            try:
                return parse_bytes(value, field=f"hardware.{name}")
            except ConfigError:
                pass
    elif name == "peak_flops_fp32":
        rule = "a rate such as 4.29 TFLOPS or 4.29e12"
        u = (unit or "").lower().replace("/s", "s")
        if m is not None and u.endswith("flops") and u[:-5] in _SI:
            return num * _SI[u[:-5]]
    elif name in _RATE_FIELDS:
        rule = "a rate such as 11 GB/s, 900 GiB/s or 11e9"
        u = (unit or "").replace(" ", "")
        if m is not None and u.lower().endswith(("/s", "ps")) and u[:-2]:
            try:
                return float(parse_bytes(f"{num}{u[:-2]}", field=name))
            except ConfigError:
                pass
    elif name in _TIME_FIELDS:
        rule = "a time such as 10us, 0.1 ms or 1e-4"
        if m is not None and (unit or "").lower() in _TIME_UNITS:
            return num * _TIME_UNITS[unit.lower()]
    if rule is None:
        return value   # not a number field: spec_from_mapping checks it
    raise ConfigError(f"hardware.{name} (={value!r}) must be {rule}{where}")


def _merge_base(data, shown, lines):
    """``base: <preset>`` plus overrides: the preset's values, with this file's on top
    (``efficiency`` entry by entry). The preset's source notes stay for the keys the file
    does not change; a changed key's note says where the figure now comes from."""
    base = data.pop("base")
    if not isinstance(base, str) or _looks_like_path(base):
        raise ConfigError(f"hardware.base (={base!r}) must name a preset: "
                          f"{', '.join(list_hardware())}{_where(shown, lines.get('base'))}")
    key = _ALIASES.get(base.strip().lower().replace("_", "-"), base.strip().lower())
    path = _preset_dir() / f"{key}.yaml"
    if not path.is_file():
        raise UnknownNameError(f"hardware.base (={base!r}) is not a preset; known: "
                               f"{', '.join(list_hardware())}{_where(shown, lines.get('base'))}")
    merged, _ = _read_yaml(path, _display(path))
    if isinstance(merged.get("efficiency"), Mapping) and isinstance(data.get("efficiency"),
                                                                    Mapping):
        data = {**data, "efficiency": {**merged["efficiency"], **data["efficiency"]}}
    sources = dict(merged.get("sources") or {})
    for k in data:
        sources.pop(k, None)
        if k not in ("name", "description", "sources"):
            sources[k] = f"{shown}, over preset {key}"
    if isinstance(data.get("sources"), Mapping):
        sources.update(data["sources"])
    merged.update(data)
    merged["sources"] = sources
    if "name" not in data:   # not the preset's name: this is another GPU
        merged["name"] = Path(shown).stem
    if "description" not in data:
        merged["description"] = f"{merged['name']}: preset {key} with overrides from {shown}"
    return merged


def spec_from_mapping(data, *, source_path=None, lines=None):
    """Build a :class:`HardwareSpec` from a mapping with the YAML keys, checking every key.

    Errors name the key, the value, the rule and (if given) the file and line.

    Examples
    --------
    >>> k40c = load_hardware("k40c")
    >>> d = k40c.to_dict()
    >>> spec_from_mapping({**d, "reserve_bytes": 2**30}).budget_bytes == k40c.budget_bytes - 2**30
    True
    """
    lines = lines or {}
    shown = source_path

    def where(key):
        return _where(shown, lines.get(key))

    unknown = [k for k in data if k not in _YAML_KEYS]
    if unknown:
        k = unknown[0]
        close = difflib.get_close_matches(str(k), _YAML_KEYS, n=1)
        hint = f"; did you mean {close[0]}?" if close else f"; known keys: {', '.join(_YAML_KEYS)}"
        raise ConfigError(f"hardware.{k} is not a known key{where(k)}{hint}")
    missing = [k for k in _REQUIRED_KEYS if k not in data]
    if missing:
        raise ConfigError(f"hardware.{missing[0]} is missing{_where(shown)}; a hardware file "
                          f"must set every key (missing: {', '.join(missing)})")
    values = {}
    for k in _YAML_KEYS:
        v = data[k]
        if k == "efficiency" and isinstance(v, Mapping):
            for ek, ev in v.items():  # check each entry with its own line number
                if ek in EFFICIENCY_KEYS:
                    _check_number(f"efficiency.{ek}", ev, where(f"efficiency.{ek}"), unit_hint="")
                    if not EFFICIENCY_RANGE[0] <= ev <= EFFICIENCY_RANGE[1]:
                        raise ConfigError(f"hardware.efficiency.{ek} (={ev!r}) must be {EFF_RULE}"
                                          f"{where(f'efficiency.{ek}')}")
        values[k] = _coerce_field(k, v, where(k))
    return HardwareSpec(**values, source_path=shown)


def _preset_dir():
    return _REPO_PRESETS if _REPO_PRESETS.is_dir() else _PKG_PRESETS


def list_hardware():
    """Sorted names of the hardware presets.

    Examples
    --------
    >>> list_hardware()
    ['a100-40gb', 'h100', 'h200', 'k40c', 'p100', 'v100']
    """
    return sorted(p.stem for p in _preset_dir().glob("*.yaml"))


def _looks_like_path(text):
    return isinstance(text, Path) or "/" in text or "\\" in text or \
        text.lower().endswith((".yaml", ".yml"))


def load_hardware(name_or_path=DEFAULT_HARDWARE):
    """Load a hardware preset by name, or a hardware YAML file by path.

    Parameters
    ----------
    name_or_path : str or pathlib.Path
        A preset name from :func:`list_hardware` (case-insensitive; ``a100`` means
        ``a100-40gb``, ``k40`` means ``k40c``), or a path to a YAML file (anything with a ``/``
        or ending in ``.yaml``/``.yml``).

    Returns
    -------
    HardwareSpec

    Raises
    ------
    UnknownNameError
        For a preset name that does not exist (the message lists the known ones).
    ConfigError
        For a missing file, malformed YAML, a missing or unknown key, or a value that breaks
        its rule; the one-line message names the file, line, key and rule.

    Examples
    --------
    >>> hw = load_hardware("K40c")
    >>> hw.name, hw.dram_bytes
    ('k40c', 12079136768)
    >>> load_hardware("a100").name
    'a100-40gb'
    """
    if isinstance(name_or_path, HardwareSpec):
        return name_or_path
    if not isinstance(name_or_path, (str, Path)):
        raise ConfigError(f"hardware (={name_or_path!r}) must be a preset name or a YAML path")
    if _looks_like_path(name_or_path):
        path = Path(name_or_path)
        shown = str(name_or_path)
        user = True
        if not path.is_file():
            raise ConfigError(f"hardware file {shown} does not exist")
    else:
        key = name_or_path.strip().lower().replace("_", "-")
        key = _ALIASES.get(key, key)
        path = _preset_dir() / f"{key}.yaml"
        if not path.is_file():
            raise UnknownNameError(f"hardware preset {name_or_path!r} is unknown; known: "
                                   f"{', '.join(list_hardware())} (or a path to a YAML file)")
        shown = _display(path)
        user = False
    data, lines = _read_yaml(path, shown)
    if user:   # a user's own GPU: base + overrides, unit strings, sources optional
        if "base" in data:
            data = _merge_base(dict(data), shown, lines)
        data = {k: _with_units(k, v, _where(shown, lines.get(k))) for k, v in data.items()}
        data.setdefault("sources", {})
    return spec_from_mapping(data, source_path=shown, lines=lines)
