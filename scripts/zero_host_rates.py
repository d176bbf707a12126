"""Each part of the CPU optimizer step's model (snsim/policies/host_step.py), measured alone.

The h200 preset's ``host_mem_bytes_per_s`` and ``host_page_fault_s`` were fitted together from
traces/h200/zero/zero_host_probe.json, and ``host_op_overhead_s`` is an estimate. This script
separates them on the host it runs on (torch's default threads):

- streaming: the optimizer on one flat tensor in a process where glibc never maps and never
  trims (``MALLOC_MMAP_MAX_=0``, ``MALLOC_TRIM_THRESHOLD_`` huge), so its temporaries reuse
  resident heap pages: ``ru_minflt`` per step ~0, time = bytes / host_mem_bytes_per_s (+ a few
  ops' dispatch);
- pages: the same step with glibc's defaults; (time - streaming time) / (extra faults) =
  host_page_fault_s;
- dispatch: the optimizer over 4,096 tensors of 16 parameters (bytes and faults ~0):
  time / (tensors x ops per tensor) = host_op_overhead_s;
- layouts: GPT-2 small's 148 shapes, ResNet-50's 161 (torchvision), and those of ViT-B/16,
  GPT-2-medium, VGG-16 and ConvNeXt-T under AdamW or Nesterov, with the faults per step that
  ``ru_minflt`` counts next to :func:`snsim.policies.host_step.fresh_pages`'s replay.

Usage (repo root, the H200 machine; about 1 minute, CPU only):
    PYTHONPATH=. python3 scripts/zero_host_rates.py --out $OUT/zero_host_rates.json
Commit the JSON to traces/h200/zero/. Dry run anywhere: add ``--small`` (1/16 of the sizes).

The host's threads (``--threads 1,4,16``): the CPU step of held-out set 35's ZeRO runs took
1.5-50x longer in one process than in another on the same kind of machine (EfficientNet-B0
4.0 vs 200.0 ms, traces/h100/plans_heldout35 and _rerun). This times the set's layouts under
each intra-op thread count (``torch.set_num_threads``) beside what bounds the process's CPUs
(``os.cpu_count``, its affinity, the cgroup's ``cpu.max``, the load average): whether torch's
default threads oversubscribe a quota, and how much a step costs on one thread.
"""
import argparse
import json
import math
import os
import platform
import resource
import subprocess
import sys
import time

GPT2_PARAMS = 124_439_808
NO_MMAP_ENV = {"MALLOC_MMAP_MAX_": "0", "MALLOC_TRIM_THRESHOLD_": str(1 << 50)}


def gpt2_shapes(**kw):
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from zero_host_probe import gpt2_shapes as shapes
    return shapes(**kw)


def torchvision_shapes(name):
    import torchvision
    return [tuple(p.shape) for p in torchvision.models.get_model(name).parameters()]




def layout(name, small):
    if name == "flat":
        return [(GPT2_PARAMS // (16 if small else 1),)]
    if name == "tiny":
        return [(16,)] * 4096
    if name == "gpt2":
        return gpt2_shapes()
    if name == "gpt2_medium":
        return gpt2_shapes(d=1024, layers=24)
    return torchvision_shapes(name)


def worker(opt, name, small, iters, threads=0):
    """One measurement in this process: median step time and faults per step."""
    import torch
    if threads:
        torch.set_num_threads(threads)
    ps = []
    for s in layout(name, small):
        p = torch.zeros(s)
        p.grad = torch.full(s, 1e-3)
        ps.append(p)
    from snsim.torchsim.zero import _host_optimizer
    o = _host_optimizer(torch, opt, ps)           # the executor's optimizer, as it builds it
    o.step()
    o.step()                      # state made, glibc thresholds settled
    times, faults = [], []
    for _ in range(iters):
        f0 = resource.getrusage(resource.RUSAGE_SELF).ru_minflt
        t0 = time.perf_counter()
        o.step()
        times.append(time.perf_counter() - t0)
        faults.append(resource.getrusage(resource.RUSAGE_SELF).ru_minflt - f0)
    times.sort()
    faults.sort()
    return {"optimizer": opt, "layout": name, "tensors": len(ps),
            "params": sum(p.numel() for p in ps), "threads": torch.get_num_threads(),
            "step_s": times[len(times) // 2], "faults": faults[len(faults) // 2],
            "step_times_s": times}


def host_limits():
    """What bounds this process's CPUs."""
    def read(path):
        try:
            with open(path) as f:
                return f.read().strip()
        except OSError:
            return None
    return {"cpu_count": os.cpu_count(), "affinity": len(os.sched_getaffinity(0)),
            "cgroup_cpu_max": read("/sys/fs/cgroup/cpu.max"),
            "cgroup_cpu_stat": read("/sys/fs/cgroup/cpu.stat"),
            "loadavg": read("/proc/loadavg")}


def thread_runs(threads, iters, only=()):
    """Set 35's layouts under each thread count, one fresh process each (``only``: those
    layout names alone)."""
    rows = []
    names = [("adam", "tiny"), ("sgd-momentum", "flat"), ("adam", "efficientnet_b0"),
             ("adam", "swin_t"), ("sgd", "mobilenet_v3_large"), ("adam", "densenet121"),
             ("sgd-momentum", "resnet101"), ("adamw", "vit_b_16"), ("nesterov", "vgg16")]
    names = [(o, n) for o, n in names if not only or n in only]
    for n in threads:
        for opt, name in names:
            cmd = [sys.executable, __file__, "--worker", opt, name, "--iters", str(iters),
                   "--worker-threads", str(n)]
            out = subprocess.run(cmd, capture_output=True, text=True, timeout=180)
            if out.returncode:
                print(opt, name, n, "failed:", out.stderr.strip()[-300:], flush=True)
                continue
            row = json.loads(out.stdout.strip().splitlines()[-1])
            rows.append(row)
            print(f"threads {n:3d} {opt:13s} {name:20s} {row['tensors']:5d} tensors "
                  f"step {row['step_s'] * 1e3:9.2f} ms  faults {row['faults']}", flush=True)
    return rows


def fit(rows):
    """The three rates of :mod:`snsim.policies.host_step`, each from the rows that isolate it:
    ``host_mem_bytes_per_s`` = counted bytes / time of the flat rows without faults (glibc
    never maps nor trims); ``host_page_fault_s`` = (flat time with glibc's defaults - that
    time) / faults; ``host_op_overhead_s`` = time / ops of the tiny rows (4,096 tensors of 16
    parameters: bytes and faults ~0). Each sums over the optimizers that have the row."""
    from snsim.policies.host_step import HOST_OPS_PER_TENSOR, HOST_UPDATE_BYTES_PER_PARAM

    def pick(layout_name, mapped):
        return {r["optimizer"]: r for r in rows if r["layout"] == layout_name
                and bool(r.get("glibc_env")) != mapped}
    streaming, paged, tiny = pick("flat", False), pick("flat", True), pick("tiny", True)
    both = sorted(set(streaming) & set(paged))
    if not both or not tiny:
        raise SystemExit("zero_host_rates --fit: the file needs the flat rows with and "
                         "without glibc's defaults and the tiny rows (run without --threads)")
    byte_s = sum(streaming[o]["step_s"] for o in both)
    mem = sum(streaming[o]["params"] * HOST_UPDATE_BYTES_PER_PARAM[o] for o in both) / byte_s
    page = (sum(paged[o]["step_s"] - streaming[o]["step_s"] for o in both)
            / sum(paged[o]["faults"] for o in both))
    op = (sum(r["step_s"] for r in tiny.values())
          / sum(r["tensors"] * HOST_OPS_PER_TENSOR[o] for o, r in tiny.items()))
    return {"host_mem_bytes_per_s": mem, "host_page_fault_s": page, "host_op_overhead_s": op}


def modelled_s(row, rates):
    """The model's step for a row of this script, from the row's own counts."""
    from snsim.policies.host_step import HOST_OPS_PER_TENSOR, HOST_UPDATE_BYTES_PER_PARAM
    opt = row["optimizer"]
    return (row["params"] * HOST_UPDATE_BYTES_PER_PARAM[opt] / rates["host_mem_bytes_per_s"]
            + row["fresh_pages_model"] * rates["host_page_fault_s"]
            + row["tensors"] * HOST_OPS_PER_TENSOR[opt] * rates["host_op_overhead_s"])


def print_fit(path):
    with open(path) as f:
        rows = json.load(f)["rows"]
    rates = fit(rows)
    print(f"host_mem_bytes_per_s {rates['host_mem_bytes_per_s']:.4g}  "
          f"host_page_fault_s {rates['host_page_fault_s']:.4g}  "
          f"host_op_overhead_s {rates['host_op_overhead_s']:.4g}")
    print(f"{'optimizer':13s} {'layout':14s} {'glibc':7s} {'measured ms':>11s} "
          f"{'modelled ms':>11s} {'err %':>7s}")
    for r in rows:
        model = modelled_s(r, rates)
        print(f"{r['optimizer']:13s} {r['layout']:14s} {'no-mmap' if r.get('glibc_env') else 'default':7s} "
              f"{r['step_s'] * 1e3:11.2f} {model * 1e3:11.2f} "
              f"{(model - r['step_s']) / r['step_s'] * 100:+7.1f}")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--fit", help="a JSON this script wrote: print the three rates and the "
                                  "model against each row")
    ap.add_argument("--out")
    ap.add_argument("--small", action="store_true")
    ap.add_argument("--worker", nargs=2)
    ap.add_argument("--iters", type=int, default=5)
    ap.add_argument("--worker-threads", type=int, default=0)
    ap.add_argument("--threads", default="",
                    help="comma-separated intra-op thread counts: time set 35's layouts only")
    ap.add_argument("--layouts", default="", help="with --threads: these layouts alone")
    a = ap.parse_args()
    if a.fit:
        print_fit(a.fit)
        return
    if a.worker:
        print(json.dumps(worker(*a.worker, a.small, a.iters, a.worker_threads)))
        return
    if a.threads:
        doc = {"host": host_limits(), "machine": platform.processor() or platform.machine(),
               "rows": thread_runs([int(t) for t in a.threads.split(",")], a.iters,
                                   [x for x in a.layouts.split(",") if x])}
        doc["host_after"] = host_limits()
        print(json.dumps(doc["host"]))
        if a.out:
            with open(a.out, "w") as f:
                json.dump(doc, f, indent=1)
        return
    from snsim.policies.host_step import fresh_pages
    rows = []
    runs = [(opt, name, env) for opt in ("adam", "sgd-momentum")
            for name, env in (("flat", NO_MMAP_ENV), ("flat", {}), ("tiny", {}), ("gpt2", {}),
                              ("resnet50", {}))]
    # layouts of held-out set 35's ZeRO runs (traces/h100/plans_heldout35), whose CPU step
    # the model over-predicted 1.3-3.4x
    runs += [("adamw", "vit_b_16", {}), ("adamw", "gpt2_medium", {}),
             ("nesterov", "vgg16", {}), ("adamw", "convnext_tiny", {})]
    for opt, name, env in runs:
            cmd = [sys.executable, __file__, "--worker", opt, name, "--iters", str(a.iters)]
            if a.small:
                cmd.append("--small")
            out = subprocess.run(cmd, env={**os.environ, **env}, capture_output=True,
                                 text=True, timeout=120)
            if out.returncode:
                print(opt, name, env, "failed:", out.stderr.strip()[-300:], flush=True)
                continue
            row = json.loads(out.stdout.strip().splitlines()[-1])
            row["glibc_env"] = env
            sizes = [4 * math.prod(s) for s in layout(name, a.small)]
            row["fresh_pages_model"] = 0 if env else fresh_pages(sizes, opt)
            rows.append(row)
            print({k: v for k, v in row.items() if k != "step_times_s"}, flush=True)
    doc = {"machine": platform.processor() or platform.machine(), "python": sys.version,
           "libc": platform.libc_ver(), "rows": rows}
    try:
        import torch
        doc["torch"] = torch.__version__
    except ImportError:
        pass
    if a.out:
        with open(a.out, "w") as f:
            json.dump(doc, f, indent=1)
        print("wrote", a.out)


if __name__ == "__main__":
    main()
