"""The zoo in PyTorch semantics against ``snsim predict`` on the torch twin of each network, at
full size, with cuDNN/cuBLAS workspaces (issue 8 item 3: the two models of one step agree):
peak allocated, peak reserved and step time on the H200 preset, one line per configuration.
A CPU check (torch needed for predict; transformers for the Llama and BERT twins); about 30 s
per configuration on two cores.

    PYTHONPATH=. python scripts/zoo_vs_predict.py [NETWORK-SUBSTRING ...]
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
    ("vgg11", "torchvision:vgg11", 64, None, "adamw", "none", "fp32"),
    # session 76: more networks, batches and precisions, and the Hugging Face twins
    ("alexnet", "torchvision:alexnet", 128, None, "sgd-momentum", "none", "fp32"),
    ("resnet34", "torchvision:resnet34", 96, None, "adam", "none", "fp32"),
    ("resnet101", "torchvision:resnet101", 48, None, "sgd", "bf16", "fp32"),
    ("densenet169", "torchvision:densenet169", 32, None, "adamw", "fp16", "fp32"),
    ("densenet201", "torchvision:densenet201", 16, None, "sgd-momentum", "none", "bf16"),
    ("vgg13", "torchvision:vgg13", 48, None, "adamw", "bf16", "fp32"),
    ("vgg19", "torchvision:vgg19", 24, None, "sgd", "none", "fp32"),
    ("mobilenet_v2", "torchvision:mobilenet_v2", 256, None, "sgd-momentum", "fp16", "fp32"),
    ("vit-b16", "zoo:vit-b16", 400, None, "adamw", "none", "fp32"),
    ("vit-l16", "zoo:vit-l16", 16, None, "adamw", "fp16", "fp32"),
    ("gpt2-medium", "zoo:gpt2-medium", 2, 512, "adamw", "bf16", "fp32"),
    ("gpt2", "zoo:gpt2", 160, 512, "sgd-momentum", "bf16", "fp32"),
    ("resnet18", "torchvision:resnet18", 32, None, "adamw", "none", "fp16"),
    ("resnet152", "torchvision:resnet152", 64, None, "adamw", "fp16", "fp32"),
    ("tinyllama-1.1b", "zoo:tinyllama-1.1b", 2, 1024, "adamw", "none", "fp32"),
    ("tinyllama-1.1b", "zoo:tinyllama-1.1b", 2, 1024, "sgd-momentum", "none", "bf16"),
    ("llama:layers=8,width=1024,heads=16,kv_heads=16,vocab=32000",
     "zoo:llama:layers=8,width=1024,heads=16,kv_heads=16,vocab=32000", 8, 512, "sgd-momentum",
     "none", "fp32"),
    ("bert-base", "zoo:bert-base", 16, 256, "adamw", "none", "fp32")]


def _err(got, want):
    return 100 * (got / want - 1)


def main(argv=None):
    only = sys.argv[1:] if argv is None else argv     # substrings of the networks to run
    for net, model, batch, seq, opt, amp, pd in CASES:
        if only and not any(o in net for o in only):
            continue
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
