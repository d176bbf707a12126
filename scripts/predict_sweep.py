"""Run ``snsim predict`` over many configurations and write one CSV row per configuration.

A robustness tool, not a test: it runs the command line users run (``snsim.cli.main`` with the
argv of ``python -m snsim predict ...``) in a worker process, one configuration at a time, and
records how each ended:

``ok``       exit 0 (fits) or 3 (does not fit), a JSON answer
``error``    exit 2 with one ``snsim: error: ...`` line: a clean refusal
``traceback`` an exception escaped the command line (the worker is restarted afterwards)
``timeout``  no answer within ``--timeout`` seconds (the worker is killed and restarted)

and flags ok rows whose figures cannot be right: ``peak_allocated_bytes`` below the static
bytes (parameters, gradients, optimizer state), reserved below allocated, a step time that is
not a positive number, and a ``checkpoint`` or ``cpu_offload`` peak above the same setup's
``plain`` peak.

Usage::

    PYTHONPATH=$PWD python scripts/predict_sweep.py --sets tv,tv-bf16,tv-fp16 --out sweep.csv
    PYTHONPATH=$PWD python scripts/predict_sweep.py --rerun sweep.csv --out rerun.csv
    PYTHONPATH=$PWD python scripts/predict_sweep.py --list --sets plans   # the argv, no run

Sets: ``tv`` (every torchvision classification model, fp32), ``tv-bf16``, ``tv-fp16`` (the
same under autocast), ``amp`` (one model per family under fp16, half of them under bf16),
``plans`` (every family checkpointed, and a rotation of the other plans), ``dense`` (every
segmentation and video model, plain and under a rotation of plans and autocast), ``plans-all`` (every
family under every plan), ``optim`` (optimizers and their implementations), ``hf`` (the Hugging
Face presets at several sequence lengths), ``builtin`` (``snsim:`` and ``zoo:`` models),
``shapes`` (other input sizes), ``batches`` (odd batches), ``options`` (plan options off the
default path, budgets that do not fit), ``gpus`` (the other hardware presets), ``edge`` (plans
under autocast, one-token sequences, training-size batches), ``inputs`` (values at and past
the command's rules), ``zero`` (the ZeRO plans), ``pure`` (``--param-dtype`` on every family,
under the plans, and its refusals).

docs/data/predict_sweep.csv is the run of ``--sets tv,shapes,batches,builtin,zero,hf,options,
plans,amp,optim,gpus,edge,inputs`` (377 configurations: 338 ok, 39 one-line errors, no
traceback or timeout; 3 flagged, each a plan whose allocated peak exceeds plain's by the
allocator's rounding, 4 KiB to 2.5 MiB, not its requests); docs/data/predict_sweep_dense.csv
is ``--sets dense`` (30 configurations, all ok, none flagged). Run 2026-12-05 at commit
5f30f9c, in two processes (``--sets tv,shapes,batches,dense`` and the rest, then ``--merge``),
about 18 minutes on two cores; its ``hf`` set again on 2026-12-05 at commit 66e4862 with every
shipped config, the eight added that day among them (66 configurations, 61 ok, 5 errors: a
--seq past BERT's, BERT-large's, DistilBERT's, RoBERTa's or GPT-2's learned positions; 7
minutes), merged over the earlier rows. docs/data/predict_sweep_pure.csv is ``--sets pure`` (63
configurations, 2026-12-07 at commit 0363998, 7 minutes: 59 ok, none flagged, 4 one-line
errors: the three refusals it asks for, and AlexNet's selective checkpoint, whose in-place
ReLU PyTorch refuses too).
"""
from __future__ import annotations

import argparse
import contextlib
import csv
import io
import json
import math
import multiprocessing as mp
import sys
import time
import traceback
from pathlib import Path

from snsim.torchsim.models import head_of_architecture

FIELDS = ("id", "status", "rc", "seconds", "peak_allocated_bytes", "peak_reserved_bytes",
          "peak_requested_bytes", "static_bytes", "step_time_s", "feasible", "flags", "error", "argv")

# one model per family, with the natural block class checkpoint picks by default
FAMILIES = ("resnet18", "resnet50", "resnext50_32x4d", "wide_resnet50_2", "vgg11", "vgg11_bn",
            "densenet121", "inception_v3", "googlenet", "mobilenet_v2", "mobilenet_v3_small",
            "mnasnet0_5", "efficientnet_b0", "efficientnet_v2_s", "regnet_x_400mf",
            "regnet_y_400mf", "shufflenet_v2_x0_5", "squeezenet1_0", "alexnet", "convnext_tiny",
            "swin_t", "swin_v2_t", "maxvit_t", "vit_b_32")
PLANS = ((("checkpoint",), ()), (("checkpoint",), ("every=2",)),
         (("checkpoint",), ("selective=true",)),
         (("cpu_offload",), ("pin_memory=true",)), (("cpu_offload",), ("pin_memory=false",)),
         (("superneurons",), ()), (("recompute",), ()), (("offload",), ()))
OPTIMIZERS = (("sgd", "foreach"), ("sgd-momentum", "foreach"), ("nesterov", "foreach"),
              ("adam", "foreach"), ("adamw", "foreach"), ("sgd", "fused"),
              ("sgd-momentum", "fused"), ("adam", "fused"), ("adamw", "fused"))
# every shipped Hugging Face config (snsim/presets/hf): decoders, encoders, seq2seq, ViT
_HF_DIR = Path(__file__).resolve().parents[1] / "snsim" / "presets" / "hf"
HF = tuple(sorted(p.stem for p in _HF_DIR.glob("*.json")))
HF_IMAGE = frozenset(m for m in HF if head_of_architecture(
    (json.loads((_HF_DIR / f"{m}.json").read_text()).get("architectures") or [""])[0])
    == "image_classification")


def _argv(model, batch=2, *, policy="plain", options=(), optimizer=None, impl=None, amp=None,
          shape=None, seq=None, param_dtype=None):
    a = ["predict", "--model", model, "--batch", str(batch), "--gpu", "h200",
         "--policy", policy, "--format", "json"]
    if optimizer:
        a += ["--optimizer", optimizer]
    if impl:
        a += ["--optimizer-impl", impl]
    if amp:
        a += ["--amp", amp]
    if param_dtype:
        a += ["--param-dtype", param_dtype]
    if shape:
        a += ["--input-shape", shape]
    if seq:
        a += ["--seq", str(seq)]
    for o in options:
        a += ["--option", o]
    return a


def configs(sets):
    """``[(id, argv)]`` of the named sets, in a fixed order."""
    import torchvision
    tv = torchvision.models.list_models(module=torchvision.models)
    out = []
    for s in sets:
        if s == "tv":
            out += [_argv(f"torchvision:{m}") for m in tv]
        elif s in ("tv-bf16", "tv-fp16"):
            out += [_argv(f"torchvision:{m}", amp=s[3:]) for m in tv]
        elif s == "amp":        # one model per family under both autocast dtypes
            out += [_argv(f"torchvision:{m}", amp="fp16") for m in FAMILIES]
            out += [_argv(f"torchvision:{m}", amp="bf16") for m in FAMILIES[::2]]
        elif s == "plans":
            out += [_argv(f"torchvision:{m}", policy="checkpoint") for m in FAMILIES]
            for i, m in enumerate(FAMILIES):
                (policy,), opts = PLANS[1 + i % (len(PLANS) - 1)]
                out.append(_argv(f"torchvision:{m}", policy=policy, options=opts))
            for m in FAMILIES[::4]:
                out.append(_argv(f"torchvision:{m}", policy="cpu_offload",
                                 options=("pin_memory=true",)))
                out.append(_argv(f"torchvision:{m}", policy="superneurons"))
            for m in ("resnet18", "vit_b_32", "swin_t"):
                out.append(_argv(f"torchvision:{m}", policy="checkpoint", amp="bf16"))
                out.append(_argv(f"torchvision:{m}", policy="cpu_offload", amp="fp16",
                                 options=("pin_memory=true",)))
        elif s == "dense":      # torchvision's segmentation and video models (session 12)
            dense = (torchvision.models.list_models(module=torchvision.models.segmentation)
                     + torchvision.models.list_models(module=torchvision.models.video))
            for i, m in enumerate(dense):
                out.append(_argv(f"torchvision:{m}"))
                (policy,), opts = PLANS[i % len(PLANS)]
                out.append(_argv(f"torchvision:{m}", policy=policy, options=opts,
                                 amp=("bf16", "fp16", None)[i % 3]))
        elif s == "plans-all":  # every family under every plan
            for m in FAMILIES:
                for (policy,), opts in PLANS:
                    out.append(_argv(f"torchvision:{m}", policy=policy, options=opts))
        elif s == "optim":
            for m in ("resnet18", "vit_b_32"):
                for opt, impl in OPTIMIZERS[::2] if m != "resnet18" else OPTIMIZERS:
                    out.append(_argv(f"torchvision:{m}", optimizer=opt, impl=impl))
            for amp in ("bf16", "fp16"):
                out.append(_argv("torchvision:resnet18", optimizer="adamw", impl="fused", amp=amp))
        elif s == "hf":
            for m in HF:
                image = m in HF_IMAGE       # images, not token ids: no --seq
                out.append(_argv(f"hf:{m}", 1, seq=None if image else 1000, optimizer="adamw"))
                out.append(_argv(f"hf:{m}", 2, seq=None if image else 128, optimizer="adamw",
                                 amp="fp16"))
                out.append(_argv(f"hf:{m}", 1, seq=None if image else 256,
                                 policy="checkpoint", amp="bf16"))
            out.append(_argv("hf:gpt2", 3, seq=64, policy="cpu_offload",
                             options=("pin_memory=true",)))
            out.append(_argv("hf:Qwen2-0.5B", 1, seq=128, policy="superneurons"))
            out.append(_argv("hf:gpt2", 1, seq=2048))
        elif s == "builtin":
            for m in ("snsim:gpt", "snsim:transformer_encoder", "zoo:gpt2", "zoo:vit-b16",
                      "zoo:gpt:layers=2,width=128,heads=4,attention=eager"):
                seq = 128 if "vit" not in m else None
                out.append(_argv(m, 2, seq=seq, amp="fp16", optimizer="adamw"))
                out.append(_argv(m, 2, seq=seq, policy="checkpoint"))
            out.append(_argv("snsim:gpt", 2, seq=64, policy="cpu_offload",
                             options=("pin_memory=false",)))
            out.append(_argv("torchvision:resnet:1,1,1,1", 2, policy="checkpoint",
                             options=("modules=Bottleneck", "every=2")))
        elif s == "shapes":
            for m in ("vit_b_16", "swin_t", "maxvit_t", "inception_v3", "googlenet",
                      "efficientnet_b0", "convnext_tiny", "squeezenet1_0", "alexnet", "vgg11"):
                out.append(_argv(f"torchvision:{m}", shape="3,160,160"))
            for m in ("resnet18", "swin_v2_t", "maxvit_t", "vit_b_32"):
                out.append(_argv(f"torchvision:{m}", shape="3,96,128"))
            for m in ("resnet18", "inception_v3", "densenet121"):
                out.append(_argv(f"torchvision:{m}", shape="1,64,64"))
            out.append(_argv("torchvision:resnet18", shape="3,8,8"))
        elif s == "batches":
            for m in ("resnet18", "inception_v3", "googlenet", "mobilenet_v3_small",
                      "efficientnet_b0", "swin_t"):
                out.append(_argv(f"torchvision:{m}", 1))
            out.append(_argv("torchvision:densenet121", 7, amp="fp16", policy="checkpoint"))
            out.append(_argv("torchvision:vit_b_32", 3, policy="cpu_offload"))
            out.append(_argv("torchvision:inception_v3", 1, policy="superneurons"))
        elif s == "options":    # plan options off the default path, and budgets that do not fit
            for m, policy, opts in (
                    ("resnet50", "checkpoint", ("modules=Conv2d",)),
                    ("resnet50", "checkpoint", ("modules=ReLU",)),
                    ("resnet50", "checkpoint", ("modules=Sequential",)),
                    ("resnet50", "checkpoint", ("every=100",)),
                    ("resnet50", "checkpoint", ("modules=BasicBlock",)),
                    ("resnet50", "checkpoint", ("modules=Bottleneck,Conv2d",)),
                    ("densenet121", "checkpoint", ("modules=_DenseLayer", "every=3")),
                    ("resnet50", "cpu_offload", ("modules=Bottleneck", "pin_memory=false")),
                    ("vit_b_32", "checkpoint", ("modules=EncoderBlock", "selective=true")),
                    ("swin_t", "checkpoint", ("modules=SwinTransformerBlock", "every=3")),
                    ("vgg11", "checkpoint", ("every=2",)),
                    ("vgg11", "checkpoint", ("selective=true",)),
                    ("efficientnet_b0", "cpu_offload", ("modules=MBConv",)),
                    ("mobilenet_v2", "checkpoint",
                     ("modules=InvertedResidual,Conv2dNormActivation",)),
                    ("maxvit_t", "superneurons", ()),
                    ("inception_v3", "checkpoint", ("modules=InceptionA,InceptionC",))):
                out.append(_argv(f"torchvision:{m}", policy=policy, options=opts))
            out.append(_argv("torchvision:resnet18", 64) + ["--budget", "1GiB"])
            out.append(_argv("torchvision:resnet18", 64, policy="checkpoint") +
                       ["--budget", "1GiB"])
            out.append(_argv("torchvision:resnet18", 64, policy="superneurons") +
                       ["--budget", "1GiB"])
        elif s == "gpus":       # the other presets: no kernel table, other budgets
            for gpu in ("a100-40gb", "h100", "v100", "p100", "k40c"):
                a = _argv("torchvision:resnet18")
                a[a.index("h200")] = gpu
                out.append(a)
                a = _argv("hf:gpt2", 2, seq=128, amp="bf16" if gpu != "k40c" else "fp16",
                          policy="checkpoint")
                a[a.index("h200")] = gpu
                out.append(a)
            a = _argv("torchvision:resnet50", 256, policy="cpu_offload")
            a[a.index("h200")] = "k40c"
            out.append(a)
        elif s == "edge":       # plans under autocast, one-token sequences, training-size batches
            for m, policy, amp, opts in (
                    ("resnet50", "superneurons", "fp16", ()), ("vgg16", "offload", "bf16", ()),
                    ("densenet121", "recompute", "fp16", ()),
                    ("efficientnet_b0", "superneurons", "bf16", ()),
                    ("inception_v3", "cpu_offload", "fp16", ()),
                    ("googlenet", "checkpoint", "fp16", ()),
                    ("swin_v2_t", "cpu_offload", "bf16", ("pin_memory=false",))):
                out.append(_argv(f"torchvision:{m}", policy=policy, amp=amp, options=opts))
            out.append(_argv("torchvision:mobilenet_v3_small", optimizer="sgd", impl="fused",
                             amp="fp16"))
            for m in ("hf:gpt2", "snsim:gpt", "snsim:transformer_encoder"):
                out.append(_argv(m, 1, seq=1))
            out.append(_argv("hf:Qwen2-0.5B", 1, seq=128, policy="cpu_offload", amp="bf16"))
            out.append(_argv("hf:gpt2-medium", 1, seq=128, policy="superneurons", amp="fp16"))
            out.append(_argv("zoo:gpt2-xl", 1, seq=256, optimizer="adamw"))
            out.append(_argv("zoo:vit-l16", 2, policy="checkpoint", amp="bf16"))
            out.append(_argv("torchvision:resnet50", 256))
            out.append(_argv("torchvision:vit_b_16", 128, amp="bf16", optimizer="adamw"))
        elif s == "inputs":     # values at and past the rules: each ends ok or in one line
            r18 = _argv("torchvision:resnet18")
            for extra in (["--budget", "1TiB"], ["--budget", "0"], ["--budget", "lots"],
                          ["--seq", "128"], ["--input-shape", "224,224"],
                          ["--input-shape", "3,0,224"], ["--optimizer", "lion"],
                          ["--amp", "fp8"], ["--optimizer-impl", "capturable"],
                          ["--gpu", "nosuchgpu"], ["--option", "every=2"],
                          ["--plain-trace", "no/such/trace.json.gz"]):
                out.append(r18 + extra)
            out.append(_argv("torchvision:resnet18", 100000))
            out.append(_argv("torchvision:resnet18", 0))
            out.append(_argv("torchvision:resnet18", policy="checkpoint",
                             options=("every=0",)))
            out.append(_argv("torchvision:resnet18", policy="zero_offload",
                             options=("pin_memory=true",)))
            out.append(_argv("torchvision:resnet18", policy="zero_offload") +
                       ["--budget", "30MiB"])
            out.append(_argv("torchvision:fcn_resnet50"))
            out.append(_argv("torchvision:resnet:0,1,1,1"))
            out.append(_argv("hf:no-such-model", seq=128))
            out.append(_argv("hf:gpt2", seq=2048))
            out.append(_argv("hf:gpt2", shape="3,224,224"))
            out.append(_argv("zoo:resnet50"))
            out.append(_argv("snsim:nope"))
            out.append(_argv("os:getcwd"))
        elif s == "pure":       # pure 16-bit training (--param-dtype): every family, the plans
            for i, m in enumerate(FAMILIES):
                pd = ("bf16", "fp16")[i % 2]
                out.append(_argv(f"torchvision:{m}", param_dtype=pd, optimizer="adamw"))
                (policy,), opts = PLANS[i % len(PLANS)]
                out.append(_argv(f"torchvision:{m}", policy=policy, options=opts,
                                 param_dtype=pd))
            for m in ("hf:gpt2", "hf:SmolLM2-135M", "hf:bert-base-uncased", "snsim:gpt",
                      "snsim:transformer_encoder", "zoo:vit-b16"):
                seq = None if "vit" in m else 128
                out.append(_argv(m, 2, seq=seq, param_dtype="bf16", optimizer="adamw",
                                 impl="fused"))
                out.append(_argv(m, 2, seq=seq, param_dtype="fp16", policy="checkpoint"))
            for extra in (["--amp", "bf16"], ["--param-dtype", "fp8"],
                          ["--policy", "zero_offload"]):   # one-line refusals
                out.append(_argv("torchvision:resnet18", param_dtype="bf16") + extra)
        elif s == "zero":
            for m in ("torchvision:resnet18", "hf:gpt2"):
                seq = 128 if m.startswith("hf") else None
                for pol in ("zero_offload", "superneurons+zero_offload"):
                    out.append(_argv(m, 2, seq=seq, policy=pol, optimizer="adamw"))
        else:
            sys.exit(f"predict_sweep: unknown set {s!r}")
    return [(" ".join(a[1:]), a) for a in out]


# -- the worker: runs snsim.cli.main in-process -----------------------------------------------
def _run_one(argv):
    from snsim.cli import main
    out, err = io.StringIO(), io.StringIO()
    t0 = time.perf_counter()
    row = {}
    try:
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            rc = main(argv)
    except SystemExit as e:      # argparse
        rc = e.code if isinstance(e.code, int) else 2
    except BaseException:        # noqa: BLE001 — the point of the tool
        tb = traceback.format_exc()
        last = [ln for ln in tb.strip().splitlines() if ln.strip()][-1]
        return {"status": "traceback", "rc": "", "seconds": time.perf_counter() - t0,
                "error": last, "traceback": tb}
    row["seconds"] = time.perf_counter() - t0
    row["rc"] = rc
    lines = [ln for ln in err.getvalue().splitlines() if ln.strip()]
    errs = [ln for ln in lines if ln.startswith("snsim: error") or ln.startswith("usage")
            or "error:" in ln]
    if rc in (0, 3):
        try:
            doc = json.loads(out.getvalue())
        except ValueError:
            row.update(status="traceback", error="exit 0 without a JSON answer")
            return row
        row.update(status="ok", **{k: doc.get(k) for k in (
            "peak_allocated_bytes", "peak_reserved_bytes", "peak_requested_bytes",
            "static_bytes", "step_time_s", "feasible")})
        row["error"] = doc.get("failure") or ""
    else:
        row.update(status="error" if errs else "traceback",
                   error=(errs or lines or ["(no message)"])[-1])
    return row


def _worker(conn):
    while True:
        argv = conn.recv()
        if argv is None:
            return
        conn.send(_run_one(argv))


class Worker:
    def __init__(self):
        ctx = mp.get_context("spawn")
        self.conn, child = ctx.Pipe()
        self.proc = ctx.Process(target=_worker, args=(child,), daemon=True)
        self.proc.start()

    def run(self, argv, timeout_s):
        self.conn.send(argv)
        if self.conn.poll(timeout_s):
            try:
                return self.conn.recv()
            except EOFError:
                return {"status": "traceback", "error": "worker died (killed: out of memory?)"}
        return None

    def stop(self, kill=False):
        if kill:
            self.proc.kill()
        else:
            self.conn.send(None)
        self.proc.join(10)


def flags(rows):
    """The sanity flags of the ok rows (a ``;``-joined string per row id)."""
    out = {}
    plain = {}
    for r in rows:
        if r["status"] == "ok" and " --policy plain " in f" {r['id']} ":
            plain[r["id"].replace("--policy plain", "")] = r
    for r in rows:
        if r["status"] != "ok":
            continue
        f = []
        if str(r["feasible"]) in ("False", "false"):
            continue    # its peaks are those of a run that stopped
        alloc, res = int(r["peak_allocated_bytes"]), int(r["peak_reserved_bytes"])
        static = int(r["static_bytes"] or 0)
        st = r["step_time_s"]
        if alloc < static:
            f.append("allocated<static")
        if res < alloc:
            f.append("reserved<allocated")
        if r["feasible"] and (st is None or not math.isfinite(float(st)) or float(st) <= 0):
            f.append("step_time<=0")
        for pol in ("checkpoint", "cpu_offload"):
            if f"--policy {pol}" in r["id"]:
                base = r["id"].split(" --option")[0].replace(f"--policy {pol}", "")
                p = plain.get(base)
                if p and alloc > int(p["peak_allocated_bytes"]):
                    # requested bytes equal or below plain's: the caching allocator's block
                    # sizes (a reused block larger than asked counts whole), not the plan
                    req = r.get("peak_requested_bytes") or ""
                    why = ("" if not req or not p.get("peak_requested_bytes") or
                           int(req) > int(p["peak_requested_bytes"]) else ", requested not")
                    f.append(f"{pol}>plain({alloc - int(p['peak_allocated_bytes'])} B{why})")
        out[r["id"]] = ";".join(f)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sets", default="tv", help="comma-separated set names")
    ap.add_argument("--rerun", default=None, help="a CSV of an earlier sweep: rerun its "
                    "rows that are not ok, are flagged or do not fit")
    ap.add_argument("--out", required=False, default="predict_sweep.csv")
    ap.add_argument("--timeout", type=float, default=120.0, help="seconds per configuration")
    ap.add_argument("--list", action="store_true", help="print the argv of each config")
    ap.add_argument("--tracebacks", default=None, help="also write full tracebacks here")
    ap.add_argument("--merge", nargs="+", default=None, metavar="CSV",
                    help="no run: join these sweeps (a later row of an id replaces an earlier "
                         "one), recompute the flags over all of them, write --out")
    args = ap.parse_args(argv)
    if args.merge:
        byid = {}
        for path in args.merge:
            with open(path, newline="") as f:
                for r in csv.DictReader(f):
                    byid[r["id"]] = r
        return _write(list(byid.values()), args.out)
    if args.rerun:
        with open(args.rerun, newline="") as f:
            todo = [(r["id"], r["argv"].split(" ")) for r in csv.DictReader(f)
                    if r["status"] != "ok" or r["flags"] or r["feasible"] == "False"]
    else:
        todo = configs(args.sets.split(","))
    if args.list:
        for _, a in todo:
            print("python -m snsim " + " ".join(a))
        return 0
    rows, tbs = [], []
    worker = Worker()
    t_start = time.perf_counter()
    for i, (cid, a) in enumerate(todo):
        res = worker.run(a, args.timeout)
        if res is None:
            worker.stop(kill=True)
            worker = Worker()
            res = {"status": "timeout", "seconds": args.timeout,
                   "error": f"no answer in {args.timeout:.0f} s"}
        elif res["status"] == "traceback":
            tbs.append(f"== {cid}\n{res.pop('traceback', res.get('error'))}")
            worker.stop(kill=True)
            worker = Worker()
        res.pop("traceback", None)
        row = {k: "" for k in FIELDS}
        row.update({k: v for k, v in res.items() if k in FIELDS})
        row.update(id=cid, argv=" ".join(a), seconds=f"{float(res.get('seconds') or 0):.2f}")
        rows.append(row)
        print(f"[{i + 1}/{len(todo)} {time.perf_counter() - t_start:.0f}s] {row['status']:9s} "
              f"{row['seconds']:>7s}s {cid}  {row['error'][:160]}", flush=True)
    worker.stop()
    if args.tracebacks:
        with open(args.tracebacks, "w") as f:
            f.write("\n".join(tbs))
    return _write(rows, args.out)


def _write(rows, path):
    fl = flags(rows)
    for r in rows:
        r["flags"] = fl.get(r["id"], "")
    with open(path, "w", newline="") as f:
        w = csv.DictWriter(f, fieldnames=FIELDS)
        w.writeheader()
        w.writerows(rows)
    counts = {s: sum(r["status"] == s for r in rows) for s in
              ("ok", "error", "traceback", "timeout")}
    print("counts: " + ", ".join(f"{k} {v}" for k, v in counts.items()) +
          f"; flagged {sum(bool(r['flags']) for r in rows)}")
    for r in rows:
        if r["flags"]:
            print(f"flag: {r['id']}: {r['flags']}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
