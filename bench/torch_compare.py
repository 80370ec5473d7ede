#!/usr/bin/env python3
"""torch_compare.py — the driver of `make bench`: tjit and two PyTorch versions
on the same workloads, row by row.

bench_suite (bench/suite.c) writes, for every workload, its inputs, weights,
and each tjit variant's outputs and gradients as .npy files under
<out>/data/<workload>/, and describes the workloads in <out>/manifest.jsonl.
With --suite, this script runs bench_suite itself, one workload at a time, and
right after it measures the same workload in each PyTorch, so that all halves
of a row see the same load on a shared machine:

* PyTorch 2.x, from the venv tools/install-torch-venv.sh makes
  (build/torch-venv/bin/tjit-python): eager, torch.jit.trace, jit.trace with a
  CPU fuser, and torch.compile (Inductor, default mode);
* Debian's python3-torch 1.13 (/usr/bin/python3): eager and torch.jit.trace.

The two versions cannot share an interpreter, so each runs in a child process
of its own (bench/torch_worker.py), started once the thread count is known and
kept for the whole run. The first of them that works (2.x, else 1.13) also
checks tjit's outputs and gradients against its eager, writing the maximum
absolute errors to <out>/check.csv; the timings go to <out>/torch.csv (the
columns of bench_suite's tjit.csv), the versions and the machine's sharing to
<out>/torch_meta.json, each worker's warnings to <out>/<name>.log. This script
imports no PyTorch itself: a missing version is measured without, and said so.

The machine may be shared: before each half of a row the script waits (within a
budget) for idle CPUs, and it measures a half again when other processes used
the CPUs meanwhile.
Usage: torch_compare.py [--suite build/bench_suite] [--out DIR] [--budget S]
                        [--threads N] [--only ID,ID] [--idle-wait S] [--idle-each S]
                        [--retries N]
                        [--torch2 PYTHON] [--torch1 PYTHON] [--compile-modes M,M]
"""
import argparse
import csv
import json
import os
import re
import subprocess
import sys
import time

from progress import Progress
from report import read_manifest, tjit_blas, tjit_blas_core

# the status line of the run (main), which lines of results print around
progress = None
HERE = os.path.dirname(os.path.abspath(__file__))


def say(text):
    """Prints a line of results."""
    if progress:
        progress.say(text)
    else:
        print(text, flush=True)


# ---- the PyTorch workers ----------------------------------------------------------------

class TorchSide:
    """One PyTorch version in a worker process of its own interpreter."""

    def __init__(self, name, title, python, variants, missing_hint):
        self.name, self.title, self.python, self.variants = name, title, python, variants
        self.missing_hint = missing_hint
        self.proc = self.log = None
        self.info = {}  # the worker's description, or {"error": why it is not measured}

    def start(self, threads, out):
        """Starts the worker for `threads` threads; False (and info["error"]) when
        this PyTorch cannot be used."""
        if self.python:
            self.python = os.path.abspath(self.python)
        if not self.python:
            self.info = {"error": "no interpreter given"}
            return False
        if not os.path.exists(self.python):
            self.info = {"error": f"{self.python} is missing: {self.missing_hint}"}
            return False
        log_path = os.path.join(out, f"{self.name}.log")
        self.log = open(log_path, "w")
        self.proc = subprocess.Popen(
            [self.python, os.path.join(HERE, "torch_worker.py"), "--name", self.name,
             "--threads", str(threads), "--variants", ",".join(self.variants)],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=self.log, text=True, cwd=HERE)
        hello = self._read()
        if "error" in hello:
            hint = f" ({self.missing_hint})" if "No module named 'torch'" in hello["error"] else ""
            self.info = {"error": hello["error"] + hint}
            self.stop()
            return False
        self.info = hello
        return True

    def _read(self):
        line = self.proc.stdout.readline()
        if line:
            return json.loads(line)
        self.proc.wait()
        self.log.flush()
        with open(self.log.name) as f:
            tail = " | ".join(f.read().strip().splitlines()[-3:])
        return {"error": f"the worker exited with status {self.proc.returncode}: {tail[-400:]}"}

    def request(self, req):
        """Sends one workload; returns the worker's answer or {"error"}."""
        if not self.alive():
            return {"error": self.info.get("error", "not running")}
        try:
            self.proc.stdin.write(json.dumps(req) + "\n")
            self.proc.stdin.flush()
        except BrokenPipeError:
            pass
        answer = self._read()
        if "error" in answer and self.proc.poll() is not None:
            self.info = dict(self.info, error=answer["error"])
            self.stop()
        return answer

    def alive(self):
        return self.proc is not None and self.proc.poll() is None

    def cpu_seconds(self):
        """CPU seconds of the worker and of the children it waited for (g++ under
        Inductor), from /proc: its work, not others'."""
        if not self.alive():
            return 0.0
        try:
            with open(f"/proc/{self.proc.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        return sum(int(x) for x in fields[11:15]) / os.sysconf("SC_CLK_TCK")

    def stop(self):
        if self.proc is not None:
            if self.proc.poll() is None:
                self.proc.stdin.close()
                try:
                    self.proc.wait(timeout=30)
                except subprocess.TimeoutExpired:
                    self.proc.kill()
                    self.proc.wait()
            self.proc = None
        if self.log:
            self.log.close()
            self.log = None


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


def cpu_snapshot(sides=()):
    """(CPU seconds all processes have been busy, CPU seconds of this process,
    its waited-for children and its PyTorch workers, wall seconds)."""
    with open("/proc/stat") as f:
        ticks = [int(x) for x in f.readline().split()[1:9]]  # user .. steal
    busy = sum(ticks) - ticks[3] - ticks[4]  # less idle and iowait
    t = os.times()
    own = t[0] + t[1] + t[2] + t[3] + sum(side.cpu_seconds() for side in sides)
    return busy / os.sysconf("SC_CLK_TCK"), own, time.monotonic()


def others_share(before, after):
    """The share of the machine's CPUs that other processes used between two
    snapshots: what disturbed a measurement."""
    busy, own, wall = (b - a for a, b in zip(before, after))
    return max(0.0, busy - own) / max(1e-9, wall * (os.cpu_count() or 1))


class Measured:
    """Runs one half of a row, and again (within a budget of re-measures for
    the whole run) when others used more than `limit` of the CPUs meanwhile."""

    def __init__(self, idle, retries, sides, limit=0.15):
        self.idle, self.retries, self.sides, self.limit = idle, retries, sides, limit

    def run(self, what, fn):
        """Returns (fn's result, busy before, others' share during, re-measures)."""
        again = 0
        while True:
            busy = self.idle.wait()
            before = cpu_snapshot(self.sides)
            result = fn()
            share = others_share(before, cpu_snapshot(self.sides))
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


# What --isa avx2 sets, for both sides: tjit's CPU kernels and LLVM code,
# PyTorch's ATen kernels and Inductor's code, MKL's and oneDNN's kernels,
# OpenBLAS's (tjit's, and PyTorch 1.13's) -- unless already set.
AVX2_ENV = {"TJIT_ISA": "avx2", "ATEN_CPU_CAPABILITY": "avx2", "MKL_ENABLE_INSTRUCTIONS": "AVX2",
            "ONEDNN_MAX_CPU_ISA": "AVX2", "DNNL_MAX_CPU_ISA": "AVX2", "OPENBLAS_CORETYPE": "Haswell"}


def tjit_version(suite):
    """`tjit --version` beside bench_suite, under this process's environment:
    the lines naming the kernels tjit runs (BLAS, LLVM, ISA, CPU kernels)."""
    tool = os.path.join(os.path.dirname(os.path.abspath(suite)), "tjit")
    try:
        out = subprocess.run([tool, "--version"], capture_output=True, text=True).stdout
    except OSError:
        return []
    return [line for line in out.splitlines() if line.split(":")[0] in ("BLAS", "LLVM", "ISA", "CPU kernels")]


def match_blas(suite):
    """Runs PyTorch on the OpenBLAS build that tjit links, with the kernels tjit
    runs. Debian's PyTorch loads libblas.so.3 through the system's alternative
    (OpenBLAS's pthreads build unless changed), tjit links the OpenMP build when
    it is installed, and the two builds run GEMMs on different thread pools
    (docs/performance.md). When the directory of tjit's OpenBLAS holds a
    libblas.so.3 that is not first on LD_LIBRARY_PATH, this re-executes the
    script with it first: the loader reads LD_LIBRARY_PATH only when a process
    starts. Where tjit had OpenBLAS choose its kernels again (a CPU newer than
    the library), OPENBLAS_CORETYPE gives PyTorch 1.13 the same ones."""
    env = dict(os.environ)
    dirs = [os.path.dirname(p) for p in tjit_blas(suite)]
    dirs = [d for d in dirs if os.path.exists(os.path.join(d, "libblas.so.3"))]
    path = env.get("LD_LIBRARY_PATH", "")
    if dirs and path.split(":")[0] != dirs[0]:
        env["LD_LIBRARY_PATH"] = dirs[0] + (":" + path if path else "")
    core = tjit_blas_core(suite)
    if core and "OPENBLAS_CORETYPE" not in env:
        env["OPENBLAS_CORETYPE"] = core
    if env == dict(os.environ):
        return
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
    ap.add_argument("--idle-each", type=float, default=20.0,
                    help="seconds at most to wait for idle CPUs before one half of a row")
    ap.add_argument("--retries", type=int, default=4,
                    help="halves in all to measure again when others used the CPUs meanwhile")
    ap.add_argument("--system-blas", action="store_true",
                    help="leave PyTorch 1.13 on the system's BLAS, not on the OpenBLAS build tjit links")
    ap.add_argument("--torch2", default=os.path.join("build", "torch-venv", "bin", "tjit-python"),
                    help="the python of PyTorch 2.x ('' for none)")
    ap.add_argument("--torch1", default="/usr/bin/python3",
                    help="the python of Debian's PyTorch 1.13 ('' for none)")
    ap.add_argument("--isa", choices=("native", "avx2"), default="native",
                    help="avx2: both sides on their AVX2 code on an AVX-512 machine (AVX2_ENV)")
    ap.add_argument("--compile-modes", default="default",
                    help="torch.compile modes to time: default, max-autotune-no-cudagraphs")
    args = ap.parse_args()
    if args.isa == "avx2":  # bench_suite and the PyTorch workers inherit them
        os.environ.update({k: v for k, v in AVX2_ENV.items() if k not in os.environ})
    if args.suite and not args.system_blas:
        match_blas(args.suite)
    modes = {"default": "compile", "max-autotune-no-cudagraphs": "autotune"}
    unknown = [m for m in args.compile_modes.split(",") if m and m not in modes]
    if unknown:
        ap.error(f"--compile-modes: unknown mode {', '.join(unknown)} (known: {', '.join(modes)})")
    compiled = [modes[m] for m in args.compile_modes.split(",") if m]
    sides = [TorchSide("torch2", "PyTorch 2.x", args.torch2, ["eager", "trace", "fused"] + compiled,
                       "make bench-deps installs it: sh tools/install-torch-venv.sh BUILD_DIR"),
             TorchSide("torch1", "PyTorch 1.13", args.torch1, ["eager", "trace"],
                       "Debian: apt-get install python3-torch")]
    idle = IdleWaiter(args.idle_wait, args.idle_each)
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
    halves = Measured(idle, args.retries, sides)
    started, shared, reference = False, {}, None
    with open(os.path.join(args.out, "torch.csv"), "w", newline="") as tf, \
         open(os.path.join(args.out, "check.csv"), "w", newline="") as cf:
        writer, checker = csv.writer(tf), csv.writer(cf)
        writer.writerow(header)
        checker.writerow(["workload", "variant", "what", "max_abs_err", "max_abs_ref"])
        progress = Progress("make bench", len(ids))
        for done, wid in enumerate(ids):
            # per half (tjit, torch2, torch1): CPUs busy before, others' share during, re-measures
            shared[wid] = {"busy": {}, "others": {}, "again": {}}

            def note_half(half, facts):
                for key, value in zip(("busy", "others", "again"), facts):
                    shared[wid][key][half] = value

            if args.suite:
                progress.step(done, f"{wid}: tjit")
                _, *facts = halves.run("tjit", lambda: run_suite(args, wid))
                note_half("tjit", facts)
            workloads, run = read_manifest(args.out)
            if not started:  # the first workload: tjit's thread count is known now
                started = True
                for side in sides:
                    progress.step(done, f"starting {side.title}")
                    if side.start(run["threads"], args.out):
                        i = side.info
                        say(f"torch_compare: {side.title}: PyTorch {i['version']} ({i['executable']}), "
                            f"{i['threads']} threads, kernels {i['capability'] or '?'}, "
                            f"jit.trace + fuser: {i['fuser']}")
                        reference = reference or side.name
                    else:
                        say(f"torch_compare: {side.title} not measured: {side.info['error']}")
            w = next(x for x in workloads if x["id"] == wid)
            if not args.suite:  # bench_suite's lines name the row otherwise
                say(f"{wid} — {w['label']}")
            for side in sides:
                if not side.alive():
                    continue
                progress.step(done, f"{wid}: {side.title}")
                req = {"workload": w, "out": os.path.abspath(args.out), "budget": args.budget,
                       "min_reps": args.min_reps, "max_reps": args.max_reps,
                       "check": side.name == reference, "seed": 12345 + done}
                answer, *facts = halves.run(side.title, lambda: side.request(req))
                note_half(side.name, facts)
                if "error" in answer:
                    say(f"  {side.title} failed on {wid}: {answer['error']}")
                    continue
                for line in answer["lines"]:
                    say(line)
                writer.writerows(answer["rows"])
                checker.writerows(answer["checks"])
            tf.flush()
            cf.flush()
        progress.end(len(ids))
    for side in sides:
        side.stop()
    with open(os.path.join(args.out, "torch_meta.json"), "w") as f:
        json.dump({"sides": {s.name: s.info for s in sides}, "reference": reference,
                   "shared": shared, "isa": args.isa,
                   "isa_env": {k: os.environ[k] for k in AVX2_ENV if k in os.environ},
                   "tjit": tjit_version(args.suite) if args.suite else []}, f)
    return 0


if __name__ == "__main__":
    sys.exit(main())
