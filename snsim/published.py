"""Published measured step times of a preset's GPU against snsim's modelled time (issue 10 item 6).

``snsim/presets/published/<preset>.yaml`` lists timings measured and published by others on the
preset's GPU, each with its source, the network exactly as the benchmark defined it (one of
:data:`NETWORKS`), its batch, the GPU clock it ran at, the library that ran the convolutions and
which passes the time covers. :func:`published_rows` models each one with the preset (the clock
scales ``peak_flops_fp32``: the Kepler SM clock is what GPU Boost changes, memory keeps its
clock) and gives the error; :func:`fit_conv_efficiency` is how the preset's ``efficiency.conv``
was fitted to the rows whose ``fit`` is true (least squares in log time, the only free
parameter; every other efficiency keeps its own source).

Example (the K40c rows are in docs/VALIDATION.md, written by ``python -m snsim.torchsim.report``):

>>> rows = published_rows("k40c")
>>> sorted({r["library"] for r in rows})[:1]
['cuDNN R1']
"""
from __future__ import annotations

import dataclasses
import math
from pathlib import Path

from .costs import modeled_costs, update_time_s
from .errors import ConfigError, UnknownNameError
from .graph import GraphBuilder
from .hardware import load_hardware

PUBLISHED_DIR = Path(__file__).resolve().parent / "presets" / "published"
PASSES = ("forward", "backward", "update")


def alexnet_owt(batch):
    """AlexNet as convnet-benchmarks timed it (torch7/imagenet_winners/alexnet.lua, 2014-12-17,
    "One Weird Trick" version): 64/192/384/256/256 convs with ReLU, three max pools, FC
    9216-4096-4096-1000 with threshold units, no dropout, no softmax, 3x224x224."""
    b = GraphBuilder("alexnet_owt", batch=batch, input_shape=(3, 224, 224))
    x = b.data()
    for i, (out, k, s, p, pool) in enumerate([(64, 11, 4, 2, True), (192, 5, 1, 2, True),
                                               (384, 3, 1, 1, False), (256, 3, 1, 1, False),
                                               (256, 3, 1, 1, True)], 1):
        x = b.relu(b.conv(x, out, k, s, p, name=f"conv{i}"), name=f"relu{i}")
        if pool:
            x = b.pool(x, 3, 2, name=f"pool{i}")
    for i, n in ((6, 4096), (7, 4096)):
        x = b.relu(b.fc(x, n, name=f"fc{i}"), name=f"relu{i}")
    return b.finish(b.fc(x, 1000, name="fc8"))


def caffenet(batch):
    """CaffeNet, Caffe's reference ImageNet model (models/bvlc_reference_caffenet/
    train_val.prototxt): AlexNet with pooling before LRN, conv2/4/5 in two groups, dropout
    after fc6/fc7, softmax loss, 3x227x227."""
    b = GraphBuilder("caffenet", batch=batch, input_shape=(3, 227, 227))
    x = b.data()
    for i, (out, k, s, p, g, pool_lrn) in enumerate([(96, 11, 4, 0, 1, True),
                                                      (256, 5, 1, 2, 2, True),
                                                      (384, 3, 1, 1, 1, False),
                                                      (384, 3, 1, 1, 2, False),
                                                      (256, 3, 1, 1, 2, False)], 1):
        x = b.relu(b.conv(x, out, k, s, p, groups=g, name=f"conv{i}"), name=f"relu{i}")
        if pool_lrn:
            x = b.lrn(b.pool(x, 3, 2, name=f"pool{i}"), 5, 1e-4, 0.75, name=f"norm{i}")
    x = b.pool(x, 3, 2, name="pool5")
    for i in (6, 7):
        x = b.dropout(b.relu(b.fc(x, 4096, name=f"fc{i}"), name=f"relu{i}"), 0.5,
                      name=f"drop{i}")
    return b.finish(b.softmax(b.fc(x, 1000, name="fc8")))


NETWORKS = {"alexnet_owt": alexnet_owt, "caffenet": caffenet}
# optimizer state per parameter byte, for the update pass
STATE_PER_PARAM = {"sgd": 0, "sgd-momentum": 1}


def load_published(preset):
    """The published timings of ``preset`` (a list of dicts), checked."""
    from .yamlio import read_yaml_mapping
    path = PUBLISHED_DIR / f"{preset}.yaml"
    if not path.exists():
        raise UnknownNameError(f"no published timings for preset {preset!r} "
                               f"({path} does not exist)")
    doc, _ = read_yaml_mapping(path, what="published timings file", prefix="published")
    rows = doc.get("timings") if isinstance(doc, dict) else None
    if not isinstance(rows, list) or not rows:
        raise ConfigError(f"{path}: needs a non-empty list 'timings'")
    for i, r in enumerate(rows):
        where = f"{path}: timings[{i}]"
        for key in ("network", "batch", "clock_mhz", "library", "passes", "time_s", "source",
                    "fit"):
            if key not in r:
                raise ConfigError(f"{where}: field {key!r} is missing")
        if r["network"] not in NETWORKS:
            raise UnknownNameError(f"{where}: network {r['network']!r} is unknown; known: "
                                   f"{', '.join(NETWORKS)}")
        bad = [p for p in r["passes"] if p not in PASSES]
        if bad or not r["passes"]:
            raise ConfigError(f"{where}: passes {r['passes']!r} must be a subset of {PASSES}")
        if "update" in r["passes"] and r.get("optimizer") not in STATE_PER_PARAM:
            raise ConfigError(f"{where}: an update pass needs optimizer "
                              f"({', '.join(STATE_PER_PARAM)})")
        if not (float(r["time_s"]) > 0 and float(r["clock_mhz"]) > 0 and int(r["batch"]) > 0):
            raise ConfigError(f"{where}: time_s, clock_mhz and batch must be positive")
    return doc


def modelled_time_s(row, hw):
    """snsim's modelled seconds for one published row on ``hw`` at the row's clock."""
    hw = dataclasses.replace(hw, peak_flops_fp32=hw.peak_flops_fp32 * float(row["clock_mhz"])
                             / BASE_CLOCK_MHZ[hw.name])
    G = NETWORKS[row["network"]](int(row["batch"]))
    costs = modeled_costs(G, hw)
    total = 0.0
    for lid, c in costs.items():
        if "forward" in row["passes"]:
            total += c.fwd_time_s
        if "backward" in row["passes"]:
            total += c.bwd_time_s
    if "update" in row["passes"]:
        param_bytes = sum(a.get("param_bytes", 0) for _, a in G.nodes(data=True))
        total += update_time_s(param_bytes, STATE_PER_PARAM[row["optimizer"]] * param_bytes, hw)
    return total


# The SM clock that the preset's peak_flops_fp32 assumes (its source says which).
BASE_CLOCK_MHZ = {"k40c": 745.0}


def published_rows(preset, hw=None):
    """One dict per published timing: the row's fields, ``modelled_s`` and ``error``."""
    hw = hw or load_hardware(preset)
    if hw.name not in BASE_CLOCK_MHZ:
        raise UnknownNameError(f"preset {hw.name!r}: its base SM clock is not recorded "
                               f"(known: {', '.join(BASE_CLOCK_MHZ)})")
    out = []
    for r in load_published(preset)["timings"]:
        m = modelled_time_s(r, hw)
        out.append({**r, "modelled_s": m, "error": m / float(r["time_s"]) - 1.0})
    return out


def fit_conv_efficiency(preset, lo=0.05, hi=1.0):
    """The ``efficiency.conv`` of ``preset`` that minimises the squared log error over the
    published rows marked ``fit: true`` (golden-section search: the error is unimodal in it)."""
    from scipy.optimize import minimize_scalar
    hw0 = load_hardware(preset)
    rows = [r for r in load_published(preset)["timings"] if r["fit"]]
    if not rows:
        raise ConfigError(f"published timings of {preset!r}: no row has fit: true")

    def loss(e):
        eff = dict(hw0.efficiency)
        eff["conv"] = e
        hw = dataclasses.replace(hw0, efficiency=tuple(sorted(eff.items())))
        return sum(math.log(modelled_time_s(r, hw) / float(r["time_s"])) ** 2 for r in rows)
    res = minimize_scalar(loss, bounds=(lo, hi), method="bounded", options={"xatol": 1e-4})
    return float(res.x)
