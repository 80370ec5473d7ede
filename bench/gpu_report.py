#!/usr/bin/env python3
"""gpu_report.py — issue 22's GPU table (make bench-gpu): runs bench_cuda --json
(tjit unfused, fused, fused + CUDA graph), builds the same workloads in PyTorch
(bench/torch_models.py, from the sizes bench_cuda describes) and times them
eager and under torch.compile (Inductor; mode="reduce-overhead", CUDA graphs,
on the LSTM cell rows unless --reduce-overhead says otherwise), then prints
one markdown table: the GPU's name, medians, ratios measured in this run, and
the targets' verdicts. f32 throughout, TF32 off on both sides (tjit's default).

Timing is bench_cuda's: warm-up (compilation happens there), then windows of
k back-to-back steps each closed by torch.cuda.synchronize(), k chosen so that
a window takes about a tenth of the budget; the row is the median of
window / k.

Usage: python3 bench/gpu_report.py --bench build-gpu/bench_cuda [--budget S]
           [--reduce-overhead lstm|all|none] [--no-compile] [--only ID,...] [--smoke]
Without a GPU (bench_cuda says so, or torch sees none) it says why and exits 0.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)


def run_tjit(bench, budget, smoke):
    """bench_cuda's JSON lines: (copy, {id: workload}, {(id, variant): seconds or error}, error)."""
    cmd = [bench, "--json"] + (["--smoke"] if smoke else ["--budget", str(budget)])
    try:
        proc = subprocess.run(cmd, stdout=subprocess.PIPE, text=True, check=False)
    except OSError as e:
        return None, {}, {}, f"cannot run {bench}: {e} (build it: make build-gpu)"
    copy, workloads, times, error = None, {}, {}, None
    for line in proc.stdout.splitlines():
        if not line.startswith("{"):
            continue
        obj = json.loads(line)
        kind = obj.get("kind")
        if kind == "copy":
            copy = obj
        elif kind == "workload":
            workloads[obj["id"]] = obj
        elif kind == "time":
            times[(obj["id"], obj["variant"])] = obj.get("median_s", obj.get("error", "failed"))
        elif kind == "error":
            if "id" in obj:
                times[(obj["id"], "unfused")] = obj["error"]
            else:
                error = obj["error"]
    if proc.returncode != 0 and error is None:
        error = f"bench_cuda exited with status {proc.returncode}"
    return copy, workloads, times, error


class Timer:
    """bench_cuda's windows, with torch.cuda.synchronize()."""

    def __init__(self, torch, budget):
        self.torch, self.budget = torch, budget

    def __call__(self, step):
        sync = self.torch.cuda.synchronize
        t0 = time.perf_counter()
        for _ in range(3):
            step()
        sync()
        warm = (time.perf_counter() - t0) / 3
        window = self.budget / 10
        k = min(10000, int(window / warm)) if 0 < warm < window else 1
        per, start = [], time.perf_counter()
        while len(per) < 50 and (len(per) < 5 or time.perf_counter() - start < self.budget):
            w0 = time.perf_counter()
            for _ in range(k):
                step()
            sync()
            per.append((time.perf_counter() - w0) / k)
        return statistics.median(per)


def build(torch, tm, w, dev, seed):
    """The workload's PyTorch model (weights of the sizes tjit's have) and inputs."""
    gen = torch.Generator(device=dev).manual_seed(seed)
    weights = {}
    for p in w["params"]:
        weights[p["name"]] = torch.randn(p["sizes"], generator=gen, device=dev) * 0.1
    model = tm.MODELS[w["model"]](weights).to(dev)
    inputs = []
    for spec in w["inputs"]:
        if spec["dtype"] == "i64":
            inputs.append(torch.randint(0, max(1, spec["high"]), spec["sizes"], generator=gen, device=dev))
        elif w["model"] == "pointwise":  # bench_cuda's values: tanh's and sigmoid's ordinary range
            inputs.append(torch.full(spec["sizes"], (0.5, 1.5, -0.25)[len(inputs)], device=dev))
        else:
            inputs.append(torch.randn(spec["sizes"], generator=gen, device=dev))
    return model, inputs


def run_torch(workloads, budget, reduce_overhead, compile_on):
    """{(id, variant): seconds or error}, the GPU's name and PyTorch's version."""
    try:
        import torch
    except ImportError:
        return {}, None, "PyTorch is not installed here"
    if not torch.cuda.is_available():
        return {}, None, "PyTorch sees no GPU"
    import torch_models as tm
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    dev = torch.device("cuda:0")
    timer = Timer(torch, budget)
    rows = {}
    for n, w in enumerate(workloads.values()):
        try:
            model, inputs = build(torch, tm, w, dev, n)
        except Exception as e:  # a model this PyTorch cannot build: n/a, go on
            rows[(w["id"], "eager")] = f"{type(e).__name__}: {e}"
            continue
        variants = [("eager", None)]
        if compile_on:
            variants.append(("compile", "default"))
            if reduce_overhead == "all" or (reduce_overhead == "lstm" and w["id"].startswith("lstm")):
                variants.append(("compile reduce-overhead", "reduce-overhead"))
        for name, mode in variants:
            try:
                fn = model if mode is None else torch.compile(model, mode=mode)
                rows[(w["id"], name)] = timer(tm.make_step(model, inputs, w, run=fn))
            except Exception as e:  # no Triton, no compiler: n/a, go on
                rows[(w["id"], name)] = f"{type(e).__name__}: {str(e).splitlines()[0][:120]}"
        del model, inputs
        torch.cuda.empty_cache()
    return rows, torch.cuda.get_device_name(0), f"PyTorch {torch.__version__}"


TJIT = ["unfused", "fused", "fused + CUDA graph"]
TORCH = ["eager", "compile", "compile reduce-overhead"]


def cell(v, nbytes):
    """A median (with GB/s when the workload moves nbytes a step), or why not."""
    if v is None:
        return ""
    if isinstance(v, str):
        return "n/a: " + v.replace("|", "/")[:80]
    return f"{v * 1e3:.3f} ms" + (f" ({nbytes / v * 1e-9:.0f} GB/s)" if nbytes else "")


def best_tjit(times, wid):
    got = [times.get((wid, v)) for v in TJIT]
    got = [g for g in got if isinstance(g, float)]
    return min(got) if got else None


def num(v):
    return v if isinstance(v, float) else None


def verdicts(workloads, tj, pt, copy):
    """The targets of issue 22, each (text, verdict)."""
    out = []
    chain = next((w for w in workloads.values() if w["id"] == "pointwise_1e8"), None)
    gbps = copy.get("gbps") if copy else None
    if chain and gbps:
        t = best_tjit(tj, chain["id"])
        if t:
            pct = chain["bytes"] / t * 1e-9 / gbps * 100
            out.append((f"pointwise chain 1e8 at {chain['bytes'] / t * 1e-9:.0f} GB/s = {pct:.0f}% of the "
                        f"copy's {gbps:.0f} GB/s (target >= 85%)", pct >= 85))
    graph, eager = num(tj.get(("lstm_fwd_b1", "fused + CUDA graph"))), num(pt.get(("lstm_fwd_b1", "eager")))
    comp = [num(pt.get(("lstm_fwd_b1", v))) for v in TORCH[1:]]
    comp = [c for c in comp if c]
    if graph and eager:
        out.append((f"LSTM cell B=1 fwd with CUDA graphs {eager / graph:.2f}x PyTorch eager (target >= 3x)",
                    eager / graph >= 3))
    if graph and comp:
        out.append((f"LSTM cell B=1 fwd with CUDA graphs {min(comp) / graph:.2f}x the best torch.compile "
                    "(target >= 1x)", min(comp) / graph >= 1))
    slower = []
    for wid in workloads:
        t, e = best_tjit(tj, wid), num(pt.get((wid, "eager")))
        if t and e and t > e:
            slower.append(wid)
    if any(num(pt.get((wid, "eager"))) for wid in workloads):
        out.append(("every workload at least as fast as PyTorch eager (tjit's best variant)"
                    + (f": slower on {', '.join(slower)}" if slower else ""), not slower))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--bench", default="build-gpu/bench_cuda", help="the bench_cuda binary")
    ap.add_argument("--budget", type=float, default=0.5, help="timed seconds per workload and variant")
    ap.add_argument("--reduce-overhead", choices=["lstm", "all", "none"], default="lstm",
                    help="which rows also run torch.compile(mode='reduce-overhead')")
    ap.add_argument("--no-compile", action="store_true", help="PyTorch eager only")
    ap.add_argument("--only", default="",
                    help="comma-separated workload ids (or prefixes): the PyTorch rows and the "
                         "table keep only these")
    ap.add_argument("--smoke", action="store_true",
                    help="bench_cuda --smoke (tiny sizes; the host harness too), no PyTorch rows")
    args = ap.parse_args()
    copy, workloads, tj, error = run_tjit(args.bench, args.budget, args.smoke)
    if error:
        print(f"gpu_report: {error}")
        return 0
    if args.only:
        keep = tuple(args.only.split(","))
        workloads = {k: w for k, w in workloads.items() if k.startswith(keep)}
    pt, gpu, version = ({}, None, "--smoke") if args.smoke else \
        run_torch(workloads, args.budget, args.reduce_overhead, not args.no_compile)
    if gpu is None:
        print(f"gpu_report: PyTorch rows left out: {version}")
        gpu, version = "cuda:0", "PyTorch: none"
    print(f"\n## {gpu}: tjit and {version}, f32, TF32 off, medians of windows\n")
    print("| workload | " + " | ".join(f"tjit {v}" for v in TJIT) + " | " +
          " | ".join(f"PyTorch {v}" for v in TORCH) + " | tjit best / eager | tjit best / compile |")
    print("|---" * (len(TJIT) + len(TORCH) + 3) + "|")
    if copy:
        print(f"| device copy ({copy['bytes'] / 1e6:.0f} MB read + written) | {copy.get('gbps', 0):.0f} GB/s |"
              + " |" * (len(TJIT) + len(TORCH) + 1))
    for wid, w in workloads.items():
        best, eager = best_tjit(tj, wid), num(pt.get((wid, "eager")))
        comp = [num(pt.get((wid, v))) for v in TORCH[1:]]
        comp = min([c for c in comp if c], default=None)
        cells = [cell(tj.get((wid, v)), w["bytes"]) for v in TJIT] + \
            [cell(pt.get((wid, v)), w["bytes"]) for v in TORCH]
        ratio_e = f"{eager / best:.2f}x" if best and eager else ""
        ratio_c = f"{comp / best:.2f}x" if best and comp else ""
        print(f"| {w['label']} | " + " | ".join(cells) + f" | {ratio_e} | {ratio_c} |")
    print("\nRatios: PyTorch's time over tjit's best variant (above 1: tjit is faster).\n")
    for text, ok in verdicts(workloads, tj, pt, copy):
        print(f"- {'MET' if ok else 'NOT MET'}: {text}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
