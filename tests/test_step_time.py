"""Step time against the real H200 (issue 10): ``snsim predict`` with the measured kernel table.

Skipped until ``configs/kernels/h200.csv.gz`` (written by ``snsim calibrate`` on an H200) is
committed. The CPU-bound captures are in the gate: their step time is the host's pace.
"""
import gzip
import json
from pathlib import Path

import pytest

pytest.importorskip("torch")

ROOT = Path(__file__).resolve().parents[1]
TABLE = ROOT / "configs" / "kernels" / "h200.csv.gz"
# With batch norm calibrated over channels x H*W (2026-11-30, second calibration) the GPU-bound
# ResNets are within 5%. The host model (each aten call at its shape, module calls, autograd
# nodes, times the probe's in-network factor per phase) brought the 254-layer ResNet b32 from
# +26% to -0.3%; DenseNet-121 b64 is still over (+20%; it was +37%): its host on the day of
# the capture (2026-11-29) was faster than the probe's (the probe's DenseNet-121 b64 step took
# 62.3 ms on 2026-11-30, the capture 49.5 ms); it was a strict xfail ("host pace of another
# day") until the refit below.
# The in-network host costs (configs/kernels/h200_host_innet.csv, scripts/host_innet_probe.py:
# 2026-11-30) replace the per-phase factors: DenseNet-121 b64 +21.4%; the held-out ResNet-34
# b32 (captured with the probe, informed nothing) went from +20.3% to +13.6%
# (scripts/compare_step_time.py). With the autograd engine's own costs (scripts/
# engine_host_probe.py) and the ratios refitted against today's table (2026-12-01, host9):
# DenseNet-121 b64 +16.0%, ResNet-34 b32 +15.6% against its capture (13.48 ms, 2026-11-30);
# the same configuration stepped 15.43 ms in a fresh process on 2026-12-01
# (traces/h200/profile_host/engine/profile_summary.csv): +1.0% there. Refitted again against
# session 19's table (2026-12-02: the table had gained rows since, and the ratios are against
# its issue costs): DenseNet-121 b64 +13.8%, ResNet-34 b32 +11.1% -- inside the gate again, so
# their strict xfails were lifted; the host-pace spread of single captures stays (docs/
# VALIDATION.md, "The CPU-bound captures against repeated processes").
CAPTURES = ["cpu_bound/resnet50_b64.json.gz",
            "cpu_bound/densenet121_b64.json.gz",
            "cpu_bound/resnet_3-16-62-3_b32.json.gz",
            "cpu_bound_heldout/resnet34_b32.json.gz",
            "cpu_bound_heldout/vgg11_b16.json.gz",
            "resnet50_b128.json.gz", "vgg16_b64.json.gz", "inception_v3_b128.json.gz"]
MAX_ERR_PCT = 15.0

pytestmark = pytest.mark.skipif(not TABLE.exists(), reason="no H200 kernel table yet "
                                "(run scripts/device_calibrate.sh on an H200)")


@pytest.mark.parametrize("name", CAPTURES)
def test_predicted_step_time_within_gate(name):
    from snsim.hardware import load_hardware
    from snsim.kernel_table import load_kernel_table
    from snsim.torchsim.models import resolve_model
    from snsim.torchsim.opcost import op_times_s
    from snsim.torchsim.predict import record_fake
    doc = json.load(gzip.open(ROOT / "traces" / "h200" / name))
    prov, meas = doc["provenance"], doc["measured"]["step_time_s"]
    spec = resolve_model(prov["model"], input_shape=tuple(prov["input_shape"]))
    rec = record_fake(spec, prov["batch"], prov["optimizer"])["rec"]
    rep = {}
    op_times_s(rec.ops, load_hardware("h200"), rec.marks, table=load_kernel_table(str(TABLE)),
               report=rep, accumulations=rec.accumulation_ops)
    err = 100 * (rep["step_s"] - meas) / meas
    assert abs(err) <= MAX_ERR_PCT, (name, rep, meas)
