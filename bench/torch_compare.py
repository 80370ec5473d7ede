#!/usr/bin/env python3
"""torch_compare.py — the PyTorch half of `make bench`, and its driver.

bench_suite (bench/suite.c) writes, for every workload, its inputs, weights,
and each tjit variant's outputs and gradients as .npy files under
<out>/data/<workload>/, and describes the workloads in <out>/manifest.jsonl.
With --suite, this script runs bench_suite itself, one workload at a time, and
measures PyTorch on that workload right after, so that both halves of a row
see the same load on a shared machine. For each workload it rebuilds the model
in PyTorch with exactly tjit's weights and inputs, and:

* checks correctness: PyTorch eager's outputs (and gradients, for the
  workloads with a backward pass) against every tjit variant's, writing the
  maximum absolute error to <out>/check.csv;
* times PyTorch eager, torch.jit.trace, and torch.jit.trace with a CPU fuser
  switched on, interleaved in a random order per repetition, medians after
  warm-up, with tjit's thread count, writing <out>/torch.csv (the same
  columns as bench_suite's tjit.csv).

Forward-only workloads run under torch.no_grad() (tjit's forward programs
keep no autograd state either).
Usage: torch_compare.py [--suite build/bench_suite] [--out DIR] [--budget S] [--only ID,ID]
"""
import argparse
import csv
import json
import math
import os
import random
import subprocess
import sys
import time

from report import read_manifest

try:
    import numpy as np
    import torch
    import torch.nn.functional as F
    from torch import nn
except ImportError:  # make bench installs python3-torch; say so clearly if it is missing
    torch = nn = None


# ---- models: the same math as the C models in examples/models/ ----------------------

class Params(nn.Module if nn else object):
    """Holds named weights loaded from param_<name>.npy; dots in names become
    nested modules so that 'fc1.weight' is self.fc1.weight."""

    def __init__(self, weights):
        super().__init__()
        for name, value in weights.items():
            owner = self
            *path, leaf = name.split(".")
            for part in path:
                if not hasattr(owner, part):
                    owner.add_module(part, nn.Module())
                owner = getattr(owner, part)
            owner.register_parameter(leaf, nn.Parameter(torch.from_numpy(value.copy())))


class LSTMCell(Params):
    """examples/models/lstm.c: gates i, f, g, o from one chunk of two linears."""

    def forward(self, x, h, c):
        gates = F.linear(x, self.weight_ih, self.bias_ih) + F.linear(h, self.weight_hh, self.bias_hh)
        i, f, g, o = gates.chunk(4, 1)
        c2 = torch.sigmoid(f) * c + torch.sigmoid(i) * torch.tanh(g)
        h2 = torch.sigmoid(o) * torch.tanh(c2)
        return h2, c2


class LSTMCellLoss(LSTMCell):
    """bench/suite.c's lstm_cell_loss: sum(h') + sum(c')."""

    def forward(self, x, h, c):
        h2, c2 = super().forward(x, h, c)
        return h2.sum() + c2.sum()


class Pointwise(Params):
    def forward(self, x, a, b):
        return torch.tanh(x * a + b) * torch.sigmoid(x) + 1


class AddChain(Params):
    """100 adds on 1-element tensors: per-op overhead."""

    def forward(self, x, b):
        for _ in range(100):
            x = x + b
        return x


class MatMul(Params):
    def forward(self, a, b):
        return torch.mm(a, b)


class MLPLoss(Params):
    """examples/models/mlp.c under bench/suite.c's mlp_loss: nll of log_softmax."""

    def forward(self, x, target):
        h = F.relu(F.linear(x, self.fc1.weight, self.fc1.bias))
        h = F.relu(F.linear(h, self.fc2.weight, self.fc2.bias))
        y = F.log_softmax(F.linear(h, self.fc3.weight, self.fc3.bias), 1)
        return F.nll_loss(y, target)


class CNN(Params):
    """examples/models/cnn.c: (conv3x3 - batch_norm (training mode) - relu -
    max_pool 2x2) x 2, linear. Running statistics start at 0 and 1, as there."""

    def __init__(self, weights):
        super().__init__(weights)
        for i, ch in ((1, 16), (2, 32)):
            bn = getattr(self, f"bn{i}")
            bn.register_buffer("running_mean", torch.zeros(ch))
            bn.register_buffer("running_var", torch.ones(ch))

    def forward(self, x):
        for i in (1, 2):
            conv, bn = getattr(self, f"conv{i}"), getattr(self, f"bn{i}")
            x = F.conv2d(x, conv.weight, conv.bias, 1, 1)
            x = F.batch_norm(x, bn.running_mean, bn.running_var, bn.weight, bn.bias, True, 0.1, 1e-5)
            x = F.max_pool2d(F.relu(x), 2, 2)
        return F.linear(torch.flatten(x, 1), self.fc.weight, self.fc.bias)


class Transformer(Params):
    """examples/models/transformer.c: post-norm encoder block, in_proj as one
    linear then chunk, 4 heads, softmax attention, exact (erf) gelu."""

    heads = 4

    def forward(self, x):
        b, s, w = x.shape
        dh = w // self.heads
        q, k, v = F.linear(x, self.attn.in_proj_weight, self.attn.in_proj_bias).chunk(3, -1)
        q, k, v = (t.view(b, s, self.heads, dh).transpose(1, 2) for t in (q, k, v))
        scores = torch.matmul(q, k.transpose(-2, -1)) * (1.0 / math.sqrt(dh))
        attn = torch.matmul(torch.softmax(scores, -1), v).transpose(1, 2).reshape(b, s, w)
        proj = F.linear(attn, self.attn.out_proj.weight, self.attn.out_proj.bias)
        x1 = F.layer_norm(x + proj, (w,), self.norm1.weight, self.norm1.bias, 1e-5)
        mlp = F.linear(F.gelu(F.linear(x1, self.linear1.weight, self.linear1.bias)),
                       self.linear2.weight, self.linear2.bias)
        return F.layer_norm(x1 + mlp, (w,), self.norm2.weight, self.norm2.bias, 1e-5)


MODELS = {"lstm_cell": LSTMCell, "lstm_cell_loss": LSTMCellLoss, "pointwise": Pointwise,
          "add_chain": AddChain, "mm": MatMul, "mlp_train": MLPLoss, "cnn": CNN,
          "transformer": Transformer}


# ---- the CPU fuser ----------------------------------------------------------------------

class Fuser:
    """Switches torch.jit's CPU fuser on and off around the fused variant's calls.

    PyTorch 1.13's default fuser, NNC (torch._C._jit_override_can_fuse_on_cpu(True)
    with torch._C._jit_set_texpr_fuser_enabled(True), the profiling executor),
    compiles CPU kernels only through LLVM; a build without LLVM (Debian's
    python3-torch) raises "LLVM Backend not found" on the first fused call, and
    with _jit_set_te_must_use_llvm_cpu(False) runs NNC's IR interpreter, orders
    of magnitude slower than eager. There the legacy fuser is used instead:
    torch._C._jit_override_can_fuse_on_cpu_legacy(True) with the legacy
    executor (_jit_set_profiling_executor(False), _jit_set_profiling_mode(False)),
    which compiles fused kernels with the system C++ compiler."""

    def __init__(self):
        self.nnc = bool(torch._C._llvm_enabled())
        self.name = ("NNC (texpr) fuser" if self.nnc else
                     "legacy fuser, legacy executor (no LLVM in this PyTorch build, so no NNC)")

    def on(self):
        if self.nnc:
            torch._C._jit_override_can_fuse_on_cpu(True)
            torch._C._jit_set_texpr_fuser_enabled(True)
        else:
            torch._C._jit_set_profiling_executor(False)
            torch._C._jit_set_profiling_mode(False)
            torch._C._jit_override_can_fuse_on_cpu_legacy(True)

    def off(self):
        """Back to PyTorch's defaults: profiling executor, no CPU fusion."""
        if self.nnc:
            torch._C._jit_override_can_fuse_on_cpu(False)
        else:
            torch._C._jit_override_can_fuse_on_cpu_legacy(False)
            torch._C._jit_set_profiling_executor(True)
            torch._C._jit_set_profiling_mode(True)


def count_groups():
    """Fusion groups in the graph torch.jit executed last."""
    text = str(torch.jit.last_executed_optimized_graph())
    return text.count("= prim::FusionGroup") + text.count("= prim::TensorExprGroup")


# ---- one workload ------------------------------------------------------------------------

def load_workload(out_dir, w):
    """(model factory, inputs, reference weights) of a workload from its .npy files."""
    data = os.path.join(out_dir, "data", w["id"])
    inputs = [np.load(os.path.join(data, f"in_{k}.npy")) for k in range(w["n_in"])]
    weights = {p: np.load(os.path.join(data, f"param_{p}.npy")) for p in w["params"]}
    return data, inputs, weights


def make_step(model, inputs, w, fuser=None):
    """A function doing one step of the workload on model, as tjit's harness does:
    the forward; for backward workloads, backward of the loss, the SGD update
    when w["lr"] > 0, and dropping the gradients."""
    params = [p for p in model.parameters()]
    lr = w["lr"]

    def forward():
        return model(*inputs)

    def train():
        model(*inputs).backward()
        if lr > 0:
            with torch.no_grad():
                for p in params:
                    p.sub_(p.grad, alpha=lr)
        for p in params:
            p.grad = None

    return train if w["backward"] else forward


def as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def check(data, w, weights, inputs, variants):
    """PyTorch eager on the exported data against each tjit variant's outputs
    and gradients: rows (variant, what, max_abs_err, max_abs_ref)."""
    model = MODELS[w["kind"]](weights)
    with torch.set_grad_enabled(w["backward"]):
        out = model(*inputs)
        if w["backward"]:
            out.backward()
    outs = [o.detach() for o in as_list(out)]
    named = dict(model.named_parameters())
    rows = []
    for v in variants:
        for k, ref in enumerate(outs):
            path = os.path.join(data, f"out_{v}_{k}.npy")
            if os.path.exists(path):
                got = np.load(path)
                rows.append((v, f"output {k}", float(np.max(np.abs(got - ref.numpy()), initial=0)),
                             float(np.max(np.abs(ref.numpy()), initial=0))))
        for p in w["params"] if w["backward"] else []:
            path = os.path.join(data, f"grad_{v}_{p}.npy")
            if os.path.exists(path) and named[p].grad is not None:
                ref = named[p].grad.numpy()
                rows.append((v, f"grad {p}", float(np.max(np.abs(np.load(path) - ref), initial=0)),
                             float(np.max(np.abs(ref), initial=0))))
    return rows


def measure(steps, budget, warmup, min_reps, max_reps, rng):
    """Times the steps (name -> (step, before, after)) interleaved in a random
    order per round; before/after run outside the timer (fuser switches).
    Returns name -> sorted times, or the error message of a failing step."""
    results, warm = {}, {}
    for name, (step, before, after) in steps.items():
        try:
            best = float("inf")
            for _ in range(warmup):
                before()
                t0 = time.perf_counter()
                step()
                best = min(best, time.perf_counter() - t0)
                after()
            warm[name] = best
        except Exception as e:  # report it as n/a, keep going
            after()
            results[name] = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
    live = [n for n in steps if n not in results]
    round_s = sum(warm[n] for n in live)
    reps = max(min_reps, min(max_reps, int(budget / round_s) if round_s > 0 else max_reps))
    times = {n: [] for n in live}
    for _ in range(reps):
        order = live[:]
        rng.shuffle(order)
        for name in order:
            step, before, after = steps[name]
            before()
            t0 = time.perf_counter()
            step()
            times[name].append(time.perf_counter() - t0)
            after()
    for n in live:
        results[n] = sorted(times[n])
    return results


def run_workload(out_dir, w, fuser, args, rng, writer, checker):
    data, arrays, weights = load_workload(out_dir, w)
    inputs = [torch.from_numpy(a.copy()) for a in arrays]
    tjit_variants = ("eager", "replay", "fused", "llvm")
    for v, what, err, ref in check(data, w, weights, inputs, tjit_variants):
        checker.writerow([w["id"], v, what, f"{err:.3g}", f"{ref:.3g}"])

    torch.set_grad_enabled(w["backward"])  # forward workloads: no autograd state
    nothing = lambda: None
    eager = MODELS[w["kind"]](weights)
    steps = {"torch_eager": (make_step(eager, inputs, w), nothing, nothing)}
    notes = {"torch_eager": "", "torch_trace": "profiling executor, no CPU fusion (the default)"}
    try:
        traced = torch.jit.trace(MODELS[w["kind"]](weights), tuple(inputs), check_trace=False)
        steps["torch_trace"] = (make_step(traced, inputs, w), nothing, nothing)
        fuser.on()
        fused = torch.jit.trace(MODELS[w["kind"]](weights), tuple(inputs), check_trace=False)
        fuser.off()
        steps["torch_fused"] = (make_step(fused, inputs, w), fuser.on, fuser.off)
    except Exception as e:  # n/a with the reason
        fuser.off()
        failed = f"torch.jit.trace failed: {type(e).__name__}: {str(e).splitlines()[0][:200]}"
    else:
        failed = None
    results = measure(steps, args.budget, 5, args.min_reps, args.max_reps, rng)
    for name in ("torch_trace", "torch_fused"):
        results.setdefault(name, failed)
    if "torch_fused" in steps and not isinstance(results.get("torch_fused"), str):
        fuser.on()  # one more call to read the fused graph (forward, or backward last)
        steps["torch_fused"][0]()
        notes["torch_fused"] = f"{fuser.name}: {count_groups()} fusion groups in the last graph run"
        fuser.off()
    torch.set_grad_enabled(True)

    print(f"{w['id']} — {w['label']}")
    for name in ("torch_eager", "torch_trace", "torch_fused"):
        r = results[name]
        if isinstance(r, list):
            med = float(np.median(r))
            writer.writerow([w["id"], w["label"], name, f"{med:.9g}", f"{r[0]:.9g}", len(r), "ok",
                             notes.get(name, "")])
            print(f"  {name:12s} {med * 1e3:10.4f} ms  (best {r[0] * 1e3:.4f})")
        else:
            writer.writerow([w["id"], w["label"], name, "", "", 0, "n/a", r])
            print(f"  {name:12s}        n/a  ({r})")
    sys.stdout.flush()


def run_suite(args, wid):
    """bench_suite on one workload, adding to the files in args.out."""
    cmd = [args.suite, "--out", args.out, "--append", "--only", wid, "--budget", str(args.budget)]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    sys.stdout.flush()
    if subprocess.run(cmd).returncode != 0:
        sys.exit(f"torch_compare: {' '.join(cmd)} failed")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="build/bench", help="bench_suite's output directory")
    ap.add_argument("--suite", default=None,
                    help="run this bench_suite first, workload by workload (a fresh run)")
    ap.add_argument("--budget", type=float, default=4.0, help="timed seconds per workload and side")
    ap.add_argument("--threads", type=int, default=0, help="threads (default: tjit's default)")
    ap.add_argument("--min-reps", type=int, default=5)
    ap.add_argument("--max-reps", type=int, default=2000)
    ap.add_argument("--only", default=None, help="comma-separated workload ids")
    args = ap.parse_args()
    only = set(args.only.split(",")) if args.only else None
    header = ["workload", "label", "variant", "median_s", "best_s", "reps", "status", "note"]
    if args.suite:
        ids = subprocess.run([args.suite, "--list"], capture_output=True, text=True,
                             check=True).stdout.split()
        ids = [i for i in ids if only is None or i in only]
        os.makedirs(args.out, exist_ok=True)
        for name in ("tjit.csv", "manifest.jsonl", "torch.csv", "check.csv", "torch_meta.json"):
            if os.path.exists(os.path.join(args.out, name)):
                os.remove(os.path.join(args.out, name))
    else:
        ids = [w["id"] for w in read_manifest(args.out)[0] if only is None or w["id"] in only]
    if torch is None:
        print("torch_compare: PyTorch is not installed (Debian: apt-get install python3-torch); "
              "measuring tjit only")
    rng = random.Random(12345)
    fuser = None
    with open(os.path.join(args.out, "torch.csv"), "w", newline="") as tf, \
         open(os.path.join(args.out, "check.csv"), "w", newline="") as cf:
        writer, checker = csv.writer(tf), csv.writer(cf)
        writer.writerow(header)
        checker.writerow(["workload", "variant", "what", "max_abs_err", "max_abs_ref"])
        for wid in ids:
            if args.suite:
                run_suite(args, wid)
            if torch is None:
                continue
            workloads, run = read_manifest(args.out)
            if fuser is None:  # the first workload: the thread count is known now
                torch.set_num_threads(run["threads"])  # the same thread count as tjit's
                fuser = Fuser()
                print(f"torch_compare: PyTorch {torch.__version__}, {torch.get_num_threads()} "
                      f"threads, fused variant: {fuser.name}")
            w = next(x for x in workloads if x["id"] == wid)
            run_workload(args.out, w, fuser, args, rng, writer, checker)
            tf.flush()
            cf.flush()
    if torch is not None:
        with open(os.path.join(args.out, "torch_meta.json"), "w") as f:
            json.dump({"version": torch.__version__, "threads": torch.get_num_threads(),
                       "fuser": fuser.name if fuser else "none"}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
