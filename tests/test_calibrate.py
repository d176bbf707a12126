"""``snsim calibrate`` end to end on the CPU (a smoke test of the code; its times mean nothing)."""
import pytest

torch = pytest.importorskip("torch")


def test_calibrate_cpu_smoke_roundtrip(tmp_path):
    from snsim.kernel_table import KernelTable
    from snsim.torchsim.calibrate import run, write_table
    rows, prov = run(device="cpu", scale=0.01, max_seconds=30)
    assert prov["kind"] == "cpu-smoke-test" and prov["torch"] == torch.__version__
    fams = {r["family"] for r in rows}
    assert {"host_step", "convolution", "convolution_backward", "relu_",
            "_foreach_add_"} <= fams
    path = tmp_path / "t.csv.gz"
    write_table(rows, prov, path)
    tab = KernelTable.read(path)
    assert tab.meta["tool"] == "snsim calibrate"
    assert set(tab.host) == {"F", "B", "U"}
    conv = next(r for r in rows if r["family"] == "convolution")
    t, src = tab.time_s("convolution", flops=conv["flops"], nbytes=conv["bytes"],
                        cls=conv["cls"], math_="tf32")
    assert src == "table" and t == pytest.approx(conv["time_s"], rel=0.05)


def test_calibrate_command_needs_a_gpu_or_cpu_flag(capsys):
    from snsim.cli import main
    if torch.cuda.is_available():
        pytest.skip("a GPU is present")
    assert main(["calibrate", "--out", "/nonexistent/x.csv.gz"]) == 2
    assert "CUDA GPU and none is visible" in capsys.readouterr().err
