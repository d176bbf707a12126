"""What a convolution backward allocates when its saved input and its incoming gradient are in
different memory layouts (issue 8).

Why: ``save_on_cpu(pin_memory=True)`` packs each saved tensor into a contiguous pinned buffer,
so the backward gets an NCHW input back, while a ConvNeXt block's gradient arrives
channels-last (its LayerNorm and Linear run on NHWC permutes). ConvNeXt-S b32 fp16 under
``cpu_offload`` took 114 more requests than its prediction (traces/h200/plans_history/
convnext_small_b32_fp16_cpu_offload_lazy): in every depthwise backward a grad_output-sized
copy, 512 B and a larger buffer; the conv workspace probe runs both operands in one layout and
cannot show it.

What: ``aten.convolution_backward`` called directly on given operands, for each shape, dtype
and pair of layouts (input, grad_output) in {NCHW, NHWC}^2, with the caching allocator's
history on: every request between two marker allocations that is not one of the call's
outputs, in order (a request of an output's size is taken as that output the first time: a
grad_output copy the size of grad_input is listed where grad_input was made), the outputs'
strides (which layout grad_input came back in) and the call's time (CUDA events, median of 5
after 2 warm-ups).

Output: ``$OUT/conv_layout_probe.json`` ({"provenance": {...}, "rows": [{shape, dtype, x_layout,
dy_layout, requests, outputs, grad_input_layout, time_s}, ...]}) and one line per row on stdout.

Usage (one GPU, from the repository root, about a minute):

    PYTHONPATH=$PWD python3 scripts/conv_layout_probe.py --out $OUT [--batches 32,36]
"""
import argparse
import json
import os
import sys

# the workspace probe's marker size and its split of a marked history into what is not an output
from conv_workspace_probe import MARK_BYTES, _workspaces

#: (name, C_in, H, C_out, kernel, stride, padding, groups): ConvNeXt's stem, depthwise 7x7
#: at each stage and 2x2 downsampling; a MobileNet 3x3 depthwise (fp16: cuDNN-eligible) and
#: a dense 3x3
SHAPES = (
    ("stem4x4", 3, 224, 96, 4, 4, 0, 1),
    ("dw7_s1", 96, 56, 96, 7, 1, 3, 96),
    ("dw7_s2", 192, 28, 192, 7, 1, 3, 192),
    ("dw7_s3", 384, 14, 384, 7, 1, 3, 384),
    ("dw7_s4", 768, 7, 768, 7, 1, 3, 768),
    ("down2x2", 96, 56, 192, 2, 2, 0, 1),
    ("dw3_mb", 144, 56, 144, 3, 1, 1, 144),
    ("dense3", 64, 56, 64, 3, 1, 1, 1),
)
LAYOUTS = ("nchw", "nhwc")


def _layout(torch, t):
    if t.is_contiguous():
        return "nchw"
    if t.is_contiguous(memory_format=torch.channels_last):
        return "nhwc"
    return "other"


def probe_one(torch, shape, n, dtype, x_layout, dy_layout):
    _, c, h, co, k, s, p, g = shape
    dt = getattr(torch, dtype)
    cl = torch.channels_last
    x = torch.randn(n, c, h, h, device="cuda", dtype=dt)
    w = torch.randn(co, c // g, k, k, device="cuda", dtype=dt)
    ho = (h + 2 * p - k) // s + 1
    dy = torch.randn(n, co, ho, ho, device="cuda", dtype=dt)
    if x_layout == "nhwc":
        x = x.contiguous(memory_format=cl)
    if dy_layout == "nhwc":
        dy = dy.contiguous(memory_format=cl)
    mask = [c != 3, True, True]

    def call():
        return torch.ops.aten.convolution_backward(
            dy, x, w, [co], [s, s], [p, p], [1, 1], False, [0, 0], g, mask)
    for _ in range(2):
        call()
    torch.cuda.synchronize()
    torch.cuda.memory._record_memory_history(enabled="all", context=None, stacks="python",
                                             max_entries=100_000)
    m0 = torch.empty(MARK_BYTES, dtype=torch.uint8, device="cuda")
    out = call()
    m1 = torch.empty(MARK_BYTES, dtype=torch.uint8, device="cuda")
    torch.cuda.synchronize()
    snap = torch.cuda.memory._snapshot()
    torch.cuda.memory._record_memory_history(enabled=None)
    del m0, m1
    events = [(e["action"], int(e.get("size", 0)))
              for tr in snap.get("device_traces", []) for e in tr]
    outs = [t for t in out if t is not None]
    requests = _workspaces(events, [("", [t.untyped_storage().nbytes() for t in outs])])[0][1]
    times = []
    for _ in range(5):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        call()
        b.record()
        b.synchronize()
        times.append(a.elapsed_time(b) / 1e3)
    times.sort()
    return {"shape": shape[0], "n": n, "c": c, "h": h, "co": co, "k": k, "stride": s,
            "groups": g, "dtype": dtype, "x_layout": x_layout, "dy_layout": dy_layout,
            "requests": requests, "outputs": [t.untyped_storage().nbytes() for t in outs],
            "grad_input_layout": _layout(torch, out[0]) if out[0] is not None else "",
            "time_s": times[len(times) // 2]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=os.environ.get("OUT", "."))
    ap.add_argument("--batches", default="32,36")
    ap.add_argument("--dtypes", default="float32,bfloat16,float16")
    args = ap.parse_args(argv)
    import torch
    if not torch.cuda.is_available():
        sys.exit("conv_layout_probe: needs a CUDA device")
    torch.backends.cudnn.benchmark = False
    rows = []
    for n in (int(v) for v in args.batches.split(",")):
        for dtype in args.dtypes.split(","):
            for shape in SHAPES:
                for xl in LAYOUTS:
                    for dl in LAYOUTS:
                        r = probe_one(torch, shape, n, dtype, xl, dl)
                        rows.append(r)
                        print(f"{r['shape']:8s} n{n:<4d} {dtype:9s} x {xl} dy {dl}: "
                              f"requests {r['requests']} outputs {r['outputs']} "
                              f"dx {r['grad_input_layout']} {r['time_s'] * 1e6:.1f} us",
                              flush=True)
    prov = {"gpu": torch.cuda.get_device_name(0), "torch": torch.__version__,
            "cuda": torch.version.cuda, "cudnn": torch.backends.cudnn.version()}
    os.makedirs(args.out, exist_ok=True)
    path = os.path.join(args.out, "conv_layout_probe.json")
    with open(path, "w") as f:
        json.dump({"provenance": prov, "rows": rows}, f, indent=0)
    print(f"{len(rows)} rows -> {path}")


if __name__ == "__main__":
    main()
