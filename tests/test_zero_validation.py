"""zero_offload against the ZeRO runs executed on the H200 (traces/h200/zero/zero_runs.json,
scripts/device_zero.sh: NVIDIA H200, torch 2.11.0+cu130): the engine's simulation of each run,
replayed from the committed programs (fast, CPU, no torch); the CPU step's first-principles
model; the capacity search's static bound from the plan's program."""
import json

import pytest

from snsim.experiments.search import max_depth
from snsim.hardware import load_hardware
from snsim.policies.zero_offload import HOST_UPDATE_BYTES_PER_PARAM, host_update_time_s
from snsim.torchsim.zero import ZERO_RUNS, zero_rows


@pytest.fixture(scope="module")
def zero_frame():
    df, skipped = zero_rows()
    return df, skipped


def test_every_executed_run_is_simulated(zero_frame):
    df, skipped = zero_frame
    with open(ZERO_RUNS) as f:
        runs = json.load(f)["runs"]
    assert skipped == []
    assert sorted(df["run"]) == sorted(r["file"].removesuffix(".json") for r in runs)
    assert len(df) == 6    # resnet50 b128, hf:gpt2 b4 s512 adam, snsim:gpt b8 adam, x 2 policies


def test_allocated_within_3pct_of_the_real_runs(zero_frame):
    # issue 13's target; measured: max_memory_allocated() of each executed run
    df, _ = zero_frame
    bad = df[df["err_allocated_pct"].abs() > 3.0]
    assert bad.empty, bad[["run", "err_allocated_pct"]].to_string()


def test_step_time_error_bounded(zero_frame):
    # issue 13's target is 15%; the resnet50 runs and the GPT-2 zero_offload run meet it, the
    # Adam runs with the snsim GPT decoder and with superneurons miss it (-14% .. -22%: the
    # CPU Adam step over 148 pinned tensors ran 13-40% slower per parameter than the flat
    # tensor the host figure comes from; scripts/zero_host_probe.py separates the causes).
    # This bound holds the state as it is, so that a regression shows.
    df, _ = zero_frame
    assert df["err_step_time_pct"].abs().max() < 25.0, df[["run", "err_step_time_pct"]]
    ok = df[df["err_step_time_pct"].abs() <= 15.0]["run"]
    assert {"resnet50_b128_zero_offload", "resnet50_b128_superneurons-zero_offload",
            "gpt2_b4_s512_adam_zero_offload"} <= set(ok)


def test_h2d_is_every_parameter_twice_as_executed(zero_frame):
    # the executor copies each parameter in before its forward and again before its backward
    # (a replayed forward keeps it for the backward): the measured h2d_bytes
    df, _ = zero_frame
    for _, r in df.iterrows():
        assert r["pred_h2d_bytes"] == pytest.approx(r["meas_h2d_bytes"], rel=0.02), r["run"]


def test_cpu_step_from_bytes_per_parameter():
    hw = load_hardware("h200")
    # hand: Adam reads 11 and writes 7 fp32 per parameter (HOST_UPDATE_BYTES_PER_PARAM's
    # comment), each write also read for ownership: 4 x (11 + 2 x 7) = 100 B; GPT-2 small's
    # 124,439,808 parameters x 100 B / 107e9 B/s (the h200 preset) = 116.30 ms
    assert HOST_UPDATE_BYTES_PER_PARAM["adam"] == 100
    assert host_update_time_s(124_439_808 * 4, "adam", hw) == pytest.approx(0.11630, rel=1e-4)
    # the preset's figure reproduces the H200 host's measured throughputs within 5% each
    # (zero_runs.json 'host': Adam 1.021e9, SGD-momentum 1.878e9 params/s on 16 threads)
    with open(ZERO_RUNS) as f:
        host = json.load(f)["host"]
    for opt in ("adam", "sgd-momentum"):
        rate = hw.host_mem_bytes_per_s / HOST_UPDATE_BYTES_PER_PARAM[opt]
        assert rate == pytest.approx(host[f"cpu_{opt}_params_per_s"], rel=0.06), opt


def test_maxdepth_bound_comes_from_the_plans_program():
    # superneurons stops at the static wall (parameters, gradients, momentum on the GPU); the
    # static bound of zero_offload's program leaves them out, so the search goes on to its limit
    rep = max_depth("resnet", batch=1, hardware="k40c", budget_bytes="400MiB",
                    policies=["superneurons", "superneurons+zero_offload"], max_depth=500)
    sn, zero = rep.best("superneurons"), rep.best("superneurons+zero_offload")
    assert sn.max_depth < 500 and "above the depth limit" not in sn.next_failure
    assert zero.max_depth > sn.max_depth


def test_beyond_zero_lines_say_what_limits_depth():
    from snsim.experiments.beyond_zero import measure_zero_depth, zero_depth_lines
    rep, growth = measure_zero_depth("k40c", batch=1, limit_depth=500, budget_bytes="400MiB")
    # hand: a bottleneck block of the k-stage (1024 -> 256 -> 256 -> 1024 channels) holds
    # 1024x256 + 256x256x9 + 256x1024 conv weights + 3 batch norms (2 x (256 + 256 + 1024)
    # affine) = 1,117,184 fp32 = 4,468,736 B of parameters; its BN running statistics
    # (mean, var: 2 x 1,536 fp32) = 12,288 B stay on the GPU
    assert growth["param_per_k_bytes"] == 4_468_736
    assert growth["bound_per_k_bytes"] == 12_288
    text = "\n".join(zero_depth_lines(rep, growth, "k40c"))
    zero = rep.best("superneurons+zero_offload")
    assert f"| superneurons+zero_offload | {zero.max_depth} |" in text
    assert "pinned host memory is exceeded from depth" in text


@pytest.mark.slow
def test_hf_gpt2_predicted_peak_within_2pct_of_the_h200_capture():
    pytest.importorskip("transformers")
    from snsim.torchsim.predict import predict
    from snsim.trace import load_trace_doc
    # the real run: traces/h200/gpt2_b4_s1024.json.gz (snsim capture --model hf:gpt2 --batch 4
    # --seq 1024 on the H200, torch 2.11.0+cu130): max_memory_allocated 7,877,660,160 B
    meas = load_trace_doc("traces/h200/gpt2_b4_s1024.json.gz")["measured"]
    r = predict("hf:gpt2", 4, gpu="h200", input_shape=(1024,))
    err = (r["peak_allocated_bytes"] - meas["peak_allocated_bytes"]) / meas["peak_allocated_bytes"]
    assert abs(err) < 0.02


@pytest.mark.slow
def test_predict_zero_offload_matches_the_executed_run():
    pytest.importorskip("transformers")
    from snsim.torchsim.zero import predict_zero
    with open(ZERO_RUNS) as f:
        run = next(r for r in json.load(f)["runs"]
                   if r["file"] == "gpt2_b4_s512_adam_zero_offload.json")
    r, _ = predict_zero("hf:gpt2", 4, "zero_offload", optimizer="adam", gpu="h200",
                        input_shape=(512,))
    assert r["plan"] == "zero_offload" and r["feasible"]
    assert r["peak_allocated_bytes"] == pytest.approx(run["peak_allocated_bytes"], rel=0.03)
    assert r["step_time_s"] == pytest.approx(run["step_time_s"], rel=0.15)
    assert r["h2d_bytes"] == run["h2d_bytes"]     # every parameter twice, the tied wte thrice
