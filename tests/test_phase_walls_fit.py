"""The optimizer phase's per-parameter host cost refitted from profiled phase walls
(scripts/host_innet_fit.py --phase-walls, scripts/phase_host_table.py's CSV)."""
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "scripts"))

from host_innet_fit import per_param_from_walls  # noqa: E402

HEADER = ("folder,config,model,batch,optimizer,impl,amp,step_s,gpu_busy_s,torch,param_tensors,"
          "per_param_us,F_modelled_ms,F_wall_ms,F_aten_ms,B_modelled_ms,B_wall_ms,B_aten_ms,"
          "U_modelled_ms,U_wall_ms,U_aten_ms\n")


def _row(model="torchvision:resnet50", amp="none", step=0.1, busy=0.05, params=100,
         per_param_us=5.0, fb=(10.0, 12.0, 20.0, 24.0), u=(2.0, 3.6)):
    f_mod, f_wall, b_mod, b_wall = fb
    return (f"f,c,{model},8,sgd-momentum,foreach,{amp},{step},{busy},2.11,{params},"
            f"{per_param_us},{f_mod},{f_wall},0,{b_mod},{b_wall},0,{u[0]},{u[1]},0\n")


def test_per_param_is_the_phase_excess_at_the_forward_and_backwards_pace(tmp_path):
    # by hand: forward and backward walls (12 + 24) over their model (10 + 20) = 1.2; the
    # optimizer phase's wall 3.6 ms at that pace is 3.0 ms, 1.0 ms over the model's 2.0: per
    # parameter tensor 1.0 ms / 100 = 10 us, on top of the 5 us charged: 15 us
    p = tmp_path / "walls.csv"
    p.write_text("# a comment line\n" + HEADER + _row())
    value, n = per_param_from_walls(p)
    assert (value, n) == (pytest.approx(15e-6), 1)


def test_only_host_bound_torchvision_steps_without_gradscaler_count(tmp_path):
    p = tmp_path / "walls.csv"
    p.write_text(HEADER + _row()
                 + _row(busy=0.095)                       # GPU-bound: busy >= 0.9 x step
                 + _row(amp="fp16")                       # GradScaler's .item() waits
                 + _row(model="hf:gpt2")                  # another sequence length
                 + _row(params=50, u=(2.0, 2.4)))         # 0 ms over: 5 us
    value, n = per_param_from_walls(p)
    assert n == 2
    assert value == pytest.approx((15e-6 + 5e-6) / 2)


def test_no_usable_configuration_is_one_clear_error(tmp_path):
    p = tmp_path / "walls.csv"
    p.write_text(HEADER + _row(amp="fp16"))
    with pytest.raises(ValueError, match="walls.csv: no host-bound torchvision configuration"):
        per_param_from_walls(p)
