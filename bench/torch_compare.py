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

Forward-only workloads run with autograd off, as under torch.no_grad() (tjit's
forward programs keep no autograd state either). The machine may be shared:
before each half of a row the script waits (within a budget) for idle CPUs, and
it measures a half again when other processes used the CPUs meanwhile
(torch_meta.json records how much they did).
Usage: torch_compare.py [--suite build/bench_suite] [--out DIR] [--budget S]
                        [--threads N] [--only ID,ID] [--idle-wait S] [--retries N]
"""
import argparse
import csv
import importlib
import json
import os
import random
import subprocess
import sys
import time

from progress import Progress
from report import read_manifest, tjit_blas

# set by load_torch(): numpy, torch and bench/torch_models.py, or None when missing
np = torch = tm = None
# the status line of the run (main), which lines of results print around
progress = None


def say(text):
    """Prints a line of results."""
    if progress:
        progress.say(text)
    else:
        print(text, flush=True)


def load_torch(threads):
    """Imports PyTorch for `threads` threads: its OpenMP pool and its BLAS
    (Debian's links OpenBLAS, which sizes its own pool from the environment at
    load time, whatever torch.set_num_threads says). False when not installed."""
    global np, torch, tm
    os.environ["OMP_NUM_THREADS"] = os.environ["OPENBLAS_NUM_THREADS"] = str(threads)
    try:
        np = importlib.import_module("numpy")
        torch = importlib.import_module("torch")
        tm = importlib.import_module("torch_models")
    except ImportError:  # make bench installs python3-torch; say so clearly if it is missing
        return False
    torch.set_num_threads(threads)
    return True


def loaded_blas():
    """The BLAS libraries this process has mapped (PyTorch's), resolved."""
    torch.mm(torch.ones(64, 64), torch.ones(64, 64))  # make sure BLAS is in use
    with open("/proc/self/maps") as f:
        paths = {line.split()[-1] for line in f
                 if "/" in line and "blas" in os.path.basename(line.split()[-1])}
    return sorted(os.path.realpath(p) for p in paths)


# ---- one workload ------------------------------------------------------------------------

def load_workload(out_dir, w):
    """(its data directory, inputs, weights by name) of a workload, from its .npy files."""
    data = os.path.join(out_dir, "data", w["id"])
    inputs = [np.load(os.path.join(data, f"in_{k}.npy")) for k in range(w["n_in"])]
    weights = {p: np.load(os.path.join(data, f"param_{p}.npy")) for p in w["params"]}
    return data, inputs, weights


def make_step(model, inputs, w):
    """A function doing one step of the workload on model, as tjit's harness does:
    the forward; for backward workloads, backward of the loss, the SGD update
    when w["lr"] > 0, and dropping the gradients."""
    params = list(model.parameters())
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
    model = tm.MODELS[w["kind"]](weights)
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
        ran = os.path.exists(os.path.join(data, f"out_{v}_0.npy"))
        for p in w["params"] if w["backward"] and ran else []:
            path = os.path.join(data, f"grad_{v}_{p}.npy")
            if named[p].grad is None:
                continue
            ref = named[p].grad.numpy()
            if not os.path.exists(path):  # a variant that ran but gave no gradient fails
                rows.append((v, f"grad {p} missing", float("inf"), float(np.max(np.abs(ref)))))
                continue
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


def check_workload(out_dir, w, checker):
    """PyTorch eager against every tjit variant's outputs and gradients."""
    data, arrays, weights = load_workload(out_dir, w)
    inputs = [torch.from_numpy(a.copy()) for a in arrays]
    for v, what, err, ref in check(data, w, weights, inputs, ("eager", "replay", "fused", "llvm")):
        checker.writerow([w["id"], v, what, f"{err:.3g}", f"{ref:.3g}"])


def time_workload(out_dir, w, fuser, args, rng):
    """Times the PyTorch variants of one workload; returns their CSV rows."""
    _, arrays, weights = load_workload(out_dir, w)
    inputs = [torch.from_numpy(a.copy()) for a in arrays]
    torch.set_grad_enabled(w["backward"])  # forward workloads: no autograd state
    nothing = lambda: None
    eager = tm.MODELS[w["kind"]](weights)
    steps = {"torch_eager": (make_step(eager, inputs, w), nothing, nothing)}
    notes = {"torch_eager": "", "torch_trace": "profiling executor, no CPU fusion (the default)"}
    try:
        traced = torch.jit.trace(tm.MODELS[w["kind"]](weights), tuple(inputs), check_trace=False)
        steps["torch_trace"] = (make_step(traced, inputs, w), nothing, nothing)
        fuser.on()
        fused = torch.jit.trace(tm.MODELS[w["kind"]](weights), tuple(inputs), check_trace=False)
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
        notes["torch_fused"] = f"{fuser.name}: {tm.count_groups()} fusion groups in the last graph run"
        fuser.off()
    torch.set_grad_enabled(True)

    say(f"{w['id']} — {w['label']}")
    rows = []
    for name in ("torch_eager", "torch_trace", "torch_fused"):
        r = results[name]
        if isinstance(r, list):
            med = float(np.median(r))
            rows.append([w["id"], w["label"], name, f"{med:.9g}", f"{r[0]:.9g}", len(r), "ok",
                         notes.get(name, "")])
            say(f"  {name:12s} {med * 1e3:10.4f} ms  (best {r[0] * 1e3:.4f})")
        else:
            rows.append([w["id"], w["label"], name, "", "", 0, "n/a", r])
            say(f"  {name:12s}        n/a  ({r})")
    sys.stdout.flush()
    return rows


# ---- sharing the machine ------------------------------------------------------------------

def cpu_busy(seconds=0.5):
    """The fraction of all CPUs busy over `seconds`, while this process sleeps:
    the work of others on the machine."""
    def sample():
        with open("/proc/stat") as f:
            ticks = [int(x) for x in f.readline().split()[1:]]
        return sum(ticks), ticks[3] + ticks[4]  # all, idle + iowait

    total0, idle0 = sample()
    time.sleep(seconds)
    total1, idle1 = sample()
    return 1.0 - (idle1 - idle0) / max(1, total1 - total0)


class IdleWaiter:
    """Before each half of a row, waits (at most `each` seconds, `total` in all)
    for the others on a shared machine to leave the CPUs at most 10% busy."""

    def __init__(self, total, each=20.0):
        self.left, self.each = total, each

    def wait(self):
        """Waits; returns the busy fraction found last."""
        busy, waited = cpu_busy(), 0.0
        while busy > 0.10 and self.left > 0 and waited < self.each:
            time.sleep(1.5)
            busy = cpu_busy()
            waited += 2.0
            self.left -= 2.0
        return busy


def cpu_snapshot():
    """(CPU seconds all processes have been busy, CPU seconds of this process and
    its waited-for children, wall seconds)."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:9]]  # user .. steal
    busy = sum(ticks) - ticks[3] - ticks[4]  # less idle and iowait
    t = os.times()
    return busy / os.sysconf("SC_CLK_TCK"), t[0] + t[1] + t[2] + t[3], time.monotonic()


def others_share(before, after):
    """The share of the machine's CPUs that other processes used between two
    snapshots: what disturbed a measurement."""
    busy, own, wall = (b - a for a, b in zip(before, after))
    return max(0.0, busy - own) / max(1e-9, wall * (os.cpu_count() or 1))


class Measured:
    """Runs one half of a row, and again (within a budget of re-measures for
    the whole run) when others used more than `limit` of the CPUs meanwhile."""

    def __init__(self, idle, retries, limit=0.15):
        self.idle, self.retries, self.limit = idle, retries, limit

    def run(self, what, fn):
        """Returns (fn's result, busy before, others' share during, re-measures)."""
        again = 0
        while True:
            busy = self.idle.wait()
            before = cpu_snapshot()
            result = fn()
            share = others_share(before, cpu_snapshot())
            if share <= self.limit or self.retries <= 0:
                return result, round(busy, 3), round(share, 3), again
            self.retries -= 1
            again += 1
            say(f"  ({what}: others used {100 * share:.0f}% of the CPUs meanwhile: measuring again)")


def run_suite(args, wid):
    """bench_suite on one workload, adding to the files in args.out; its lines
    of results pass through say(), around the status line."""
    cmd = [args.suite, "--out", args.out, "--append", "--only", wid, "--budget", str(args.budget),
           "--no-progress"]
    if args.threads:
        cmd += ["--threads", str(args.threads)]
    sys.stdout.flush()
    with subprocess.Popen(cmd, stdout=subprocess.PIPE, text=True) as child:
        for line in child.stdout:
            say(line.rstrip("\n"))
    if child.returncode != 0:
        sys.exit(f"torch_compare: {' '.join(cmd)} failed")


def match_blas(suite):
    """Runs PyTorch on the OpenBLAS build that tjit links. Debian's PyTorch loads
    libblas.so.3 through the system's alternative (OpenBLAS's pthreads build
    unless changed), tjit links the OpenMP build when it is installed, and the
    two builds run GEMMs on different thread pools (docs/performance.md). When
    the directory of tjit's OpenBLAS holds a libblas.so.3 that is not first on
    LD_LIBRARY_PATH, this re-executes the script with it first: the loader reads
    LD_LIBRARY_PATH only when a process starts."""
    dirs = [os.path.dirname(p) for p in tjit_blas(suite)]
    dirs = [d for d in dirs if os.path.exists(os.path.join(d, "libblas.so.3"))]
    path = os.environ.get("LD_LIBRARY_PATH", "")
    if not dirs or path.split(":")[0] == dirs[0]:
        return
    env = dict(os.environ, LD_LIBRARY_PATH=dirs[0] + (":" + path if path else ""))
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable] + sys.argv, env)


def main():
    global progress
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="build/bench", help="bench_suite's output directory")
    ap.add_argument("--suite", default=None,
                    help="run this bench_suite first, workload by workload (a fresh run)")
    ap.add_argument("--budget", type=float, default=4.0, help="timed seconds per workload and side")
    ap.add_argument("--threads", type=int, default=0, help="threads (default: tjit's default)")
    ap.add_argument("--min-reps", type=int, default=5)
    ap.add_argument("--max-reps", type=int, default=2000)
    ap.add_argument("--only", default=None, help="comma-separated workload ids")
    ap.add_argument("--idle-wait", type=float, default=120.0,
                    help="seconds in all to wait for idle CPUs before the halves of the rows")
    ap.add_argument("--retries", type=int, default=4,
                    help="halves in all to measure again when others used the CPUs meanwhile")
    ap.add_argument("--system-blas", action="store_true",
                    help="leave PyTorch on the system's BLAS, not on the OpenBLAS build tjit links")
    args = ap.parse_args()
    if args.suite and not args.system_blas:
        match_blas(args.suite)
    idle = IdleWaiter(args.idle_wait)
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
    rng = random.Random(12345)
    halves = Measured(idle, args.retries)
    fuser, have_torch, shared = None, None, {}
    with open(os.path.join(args.out, "torch.csv"), "w", newline="") as tf, \
         open(os.path.join(args.out, "check.csv"), "w", newline="") as cf:
        writer, checker = csv.writer(tf), csv.writer(cf)
        writer.writerow(header)
        checker.writerow(["workload", "variant", "what", "max_abs_err", "max_abs_ref"])
        progress = Progress("make bench", len(ids))
        for done, wid in enumerate(ids):
            # per half (tjit, PyTorch): CPUs busy before, others' share during, re-measures
            shared[wid] = {"busy": [None, None], "others": [None, None], "again": [0, 0]}
            if args.suite:
                progress.step(done, f"{wid}: tjit")
                _, *facts = halves.run("tjit", lambda: run_suite(args, wid))
                for key, value in zip(("busy", "others", "again"), facts):
                    shared[wid][key][0] = value
            workloads, run = read_manifest(args.out)
            if have_torch is None:  # the first workload: tjit's thread count is known now
                have_torch = load_torch(run["threads"])
                if not have_torch:
                    say("torch_compare: PyTorch is not installed (Debian: apt-get install "
                        "python3-torch); measuring tjit only")
                    continue
                fuser = tm.Fuser()
                say(f"torch_compare: PyTorch {torch.__version__}, {torch.get_num_threads()} "
                    f"threads, fused variant: {fuser.name}")
            if not have_torch:
                continue
            w = next(x for x in workloads if x["id"] == wid)
            progress.step(done, f"{wid}: PyTorch")
            rows, *facts = halves.run("PyTorch", lambda: time_workload(args.out, w, fuser, args, rng))
            for key, value in zip(("busy", "others", "again"), facts):
                shared[wid][key][1] = value
            writer.writerows(rows)
            check_workload(args.out, w, checker)
            tf.flush()
            cf.flush()
        progress.end(len(ids))
    if have_torch:
        with open(os.path.join(args.out, "torch_meta.json"), "w") as f:
            json.dump({"version": torch.__version__, "threads": torch.get_num_threads(),
                       "fuser": fuser.name if fuser else "none", "shared": shared,
                       "blas": loaded_blas()}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
