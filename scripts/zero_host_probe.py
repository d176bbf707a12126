"""Why the CPU optimizer step of an executed ZeRO run is slower than one flat tensor's.

The h200 preset's ``host_mem_bytes_per_s`` comes from CPU Adam / SGD-momentum on one 64 Mi
fp32 tensor (scripts/device_zero.sh); `snsim execute --policy zero_offload` steps the same
optimizers over a model's parameters (148 tensors for GPT-2) whose masters and gradients are
in *pinned* memory, and ran 13-40% slower per parameter (traces/h200/zero/zero_runs.json).
This probe separates the candidate mechanisms, each the same parameter count (GPT-2 small's
124,439,808, in its 148 shapes or as one tensor):

- ``flat`` vs ``gpt2``: per-tensor cost (Python and dispatch per op, an OpenMP region per op);
- ``pageable`` vs ``pinned`` (masters and gradients ``pin_memory()``, as the executor): the
  page size pinned memory gets (4 KiB, against transparent huge pages for malloc);
- threads: ``torch.get_num_threads()`` and 1/2/4/8 threads for ``flat`` pageable Adam;
- the host's transparent-huge-page setting.

Usage (repo root, a CUDA machine for the pinned rows; about 1-2 minutes):
    PYTHONPATH=. python3 scripts/zero_host_probe.py --out $OUT/zero_host_probe.json
Commit the JSON to traces/h200/zero/.
"""
import argparse
import json
import platform
import time

try:        # the probe needs torch; gpt2_shapes (read by tests without torch) does not
    import torch
except ModuleNotFoundError:
    torch = None

GPT2_PARAMS = 124_439_808     # GPT-2 small with tied embeddings (HF gpt2 config)


def gpt2_shapes(d=768, layers=12):
    """HF GPT-2's parameter shapes, in registration order (tied lm_head omitted): small by
    default, GPT-2-medium with ``d=1024, layers=24``."""
    v, n = 50257, 1024
    shapes = [(v, d), (n, d)]
    for _ in range(layers):
        shapes += [(d,), (d,), (d, 3 * d), (3 * d,), (d, d), (d,), (d,), (d,),
                   (d, 4 * d), (4 * d,), (4 * d, d), (d,)]
    shapes += [(d,), (d,)]
    return shapes


def make(shapes, pinned):
    ps = []
    for s in shapes:
        p = torch.zeros(s)
        g = torch.full(s, 1e-3)
        if pinned:
            p, g = p.pin_memory(), g.pin_memory()
        p.grad = g
        ps.append(p)
    return ps


def step_s(opt_name, params, iters=3):
    o = (torch.optim.Adam(params, lr=1e-3) if opt_name == "adam"
         else torch.optim.SGD(params, lr=0.01, momentum=0.9, weight_decay=1e-4))
    o.step()                      # state made
    t0 = time.perf_counter()
    for _ in range(iters):
        o.step()
    return (time.perf_counter() - t0) / iters


def main():
    if torch is None:
        raise SystemExit("zero_host_probe: needs torch (pip install torch)")
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", required=True)
    a = ap.parse_args()
    shapes = gpt2_shapes()
    n = sum(torch.Size(s).numel() for s in shapes)
    assert n == GPT2_PARAMS, n    # the shapes above are GPT-2 small's
    out = {"torch": torch.__version__, "machine": platform.processor() or platform.machine(),
           "threads": torch.get_num_threads(), "params": n, "tensors": len(shapes), "rows": []}
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            out["thp"] = f.read().strip()
    except OSError:
        out["thp"] = "unknown"
    pins = (False, True) if torch.cuda.is_available() else (False,)
    for opt in ("adam", "sgd-momentum"):
        for layout, sh in (("flat", [(n,)]), ("gpt2", shapes)):
            for pinned in pins:
                ps = make(sh, pinned)
                s = step_s(opt, ps)
                out["rows"].append({"optimizer": opt, "layout": layout, "pinned": pinned,
                                    "threads": torch.get_num_threads(), "step_s": s,
                                    "params_per_s": n / s})
                print(out["rows"][-1], flush=True)
                del ps
    full = torch.get_num_threads()
    for t in (1, 2, 4, 8):
        if t >= full:
            continue
        torch.set_num_threads(t)
        ps = make([(n,)], False)
        s = step_s("adam", ps, iters=1)
        out["rows"].append({"optimizer": "adam", "layout": "flat", "pinned": False,
                            "threads": t, "step_s": s, "params_per_s": n / s})
        print(out["rows"][-1], flush=True)
        del ps
    torch.set_num_threads(full)
    with open(a.out, "w") as f:
        json.dump(out, f, indent=1)
    print("wrote", a.out)


if __name__ == "__main__":
    main()
