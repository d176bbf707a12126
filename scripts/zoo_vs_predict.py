"""The zoo in PyTorch semantics against ``snsim predict`` on the torch twin of each network, at
full size, with cuDNN/cuBLAS workspaces (issue 8 item 3: the two models of one step agree):
peak allocated, peak reserved and step time on the H200 preset, one line per configuration.
A CPU check (torch needed for predict); about 30 s per configuration on two cores.

    PYTHONPATH=. python scripts/zoo_vs_predict.py
"""
import json
import subprocess
import sys

from snsim.api import simulate

# (zoo network, torch model, batch, sequence, optimizer, --amp, --param-dtype)
CASES = [
    ("resnet50", "torchvision:resnet50", 64, None, "adamw", "bf16", "fp32"),
    ("densenet121", "torchvision:densenet121", 64, None, "sgd-momentum", "none", "fp32"),
    ("mobilenet_v2", "torchvision:mobilenet_v2", 128, None, "adamw", "none", "bf16"),
    ("vgg16", "torchvision:vgg16", 64, None, "sgd-momentum", "fp16", "fp32"),
    ("gpt:vocab=50304", "snsim:gpt", 8, 512, "adamw", "bf16", "fp32"),
    ("resnet152", "torchvision:resnet152", 32, None, "sgd-momentum", "none", "bf16"),
    ("alexnet", "torchvision:alexnet", 256, None, "adamw", "bf16", "fp32"),
    ("vit-b16", "torchvision:vit_b_16", 48, None, "sgd", "none", "fp16"),
    ("resnet18", "torchvision:resnet18", 256, None, "sgd-momentum", "none", "fp32"),
    ("vgg11", "torchvision:vgg11", 64, None, "adamw", "none", "fp32")]


def _err(got, want):
    return 100 * (got / want - 1)


def main():
    for net, model, batch, seq, opt, amp, pd in CASES:
        cmd = [sys.executable, "-m", "snsim.cli", "predict", "--model", model, "--batch",
               str(batch), "--gpu", "h200", "--optimizer", opt, "--amp", amp,
               "--param-dtype", pd, "--format", "json"] + (["--seq", str(seq)] if seq else [])
        p = subprocess.run(cmd, capture_output=True, text=True)
        if p.returncode:
            print(f"{net}: snsim predict failed: {p.stderr.strip().splitlines()[-1]}")
            continue
        want = json.loads(p.stdout)
        got = simulate(net, batch=batch, hardware="h200", framework="pytorch",
                       allocator="pytorch", policy="liveness", record=False, optimizer=opt,
                       amp=None if amp == "none" else amp, param_dtype=pd, input_size=seq)
        print(f"{net:<18} b{batch:<4} {opt:<13} amp {amp:<4} param {pd:<4} allocated "
              f"{_err(got.peak_allocated_bytes, want['peak_allocated_bytes']):+6.2f}% reserved "
              f"{_err(got.peak_reserved_bytes, want['peak_reserved_bytes']):+6.2f}% step "
              f"{_err(got.step_time_s, want['step_time_s']):+6.1f}% (predict "
              f"{want['step_time_s'] * 1e3:.1f} ms)", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
