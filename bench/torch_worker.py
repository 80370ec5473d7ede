#!/usr/bin/env python3
"""torch_worker.py — one PyTorch's half of `make bench`, run by
bench/torch_compare.py as a long-lived child process in the interpreter that
has that PyTorch: the PyTorch 2.x venv's (build/torch-venv/bin/tjit-python) and
Debian's /usr/bin/python3 (python3-torch 1.13). Both versions cannot live in
one interpreter, and one process per version imports torch once and keeps
torch.compile's caches warm from workload to workload.

Protocol: one JSON object a line. On start, the worker writes what it is
({"version", "threads", "fuser", "capability", "blas", ...}, or {"error"} when
torch does not import). Then for each request on stdin ({"workload": one entry
of bench_suite's manifest, "out", "budget", "min_reps", "max_reps", "check",
"seed"}) it rebuilds the workload's model in PyTorch (bench/torch_models.py)
from tjit's exported weights and inputs, times its variants, and answers
{"rows": torch.csv rows, "checks": check.csv rows, "lines": text to print}.
Anything else the process prints (PyTorch's warnings) goes to stderr, which the
driver sends to a log file: stdout carries the protocol only.

Variants (--variants): eager; trace (torch.jit.trace, PyTorch's defaults);
fused (torch.jit.trace with a CPU fuser, see torch_models.Fuser); compile
(torch.compile, default mode: Inductor's C++ kernels); autotune
(torch.compile(mode="max-autotune-no-cudagraphs")). Compilation happens in the
warm-up, outside the timed steps; its time goes into the row's note.
Usage: torch_worker.py --name torch2 --threads N [--variants eager,trace,...]
"""
import argparse
import importlib
import json
import os
import random
import sys
import time
import types
import warnings

np = torch = tm = None  # imported once the thread count is set (load_torch)


def load_torch(threads):
    """Imports PyTorch for `threads` threads. OpenMP and OpenBLAS (Debian's
    PyTorch calls OpenBLAS) size their pools from the environment when they
    load, whatever torch.set_num_threads says later."""
    global np, torch, tm
    for var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
        os.environ[var] = str(threads)
    # Inductor compiles in this process: no pool of compile workers whose CPU
    # time the driver would count as other processes' load
    os.environ.setdefault("TORCHINDUCTOR_COMPILE_THREADS", "1")
    warnings.filterwarnings("ignore")
    np = importlib.import_module("numpy")
    torch = importlib.import_module("torch")
    tm = importlib.import_module("torch_models")
    torch.set_num_threads(threads)


def describe(fuser):
    """What this PyTorch is: its version, threads, fuser, kernels' ISA, BLAS."""
    cap = getattr(getattr(torch.backends, "cpu", None), "get_cpu_capability", None)
    config = torch.__config__.show()
    blas = next((line.split("BLAS_INFO=")[1].split(",")[0] for line in config.splitlines()
                 if "BLAS_INFO=" in line), "?")
    return {"version": torch.__version__, "threads": torch.get_num_threads(),
            "fuser": fuser.name, "capability": cap() if cap else None,
            "compile": hasattr(torch, "compile"), "blas_info": blas, "blas": loaded_blas(),
            "python": sys.version.split()[0], "executable": sys.executable, "pid": os.getpid()}


def loaded_blas():
    """The BLAS libraries this process has mapped, resolved (none where the
    BLAS is linked into libtorch, as MKL is in PyPI's wheels)."""
    torch.mm(torch.ones(64, 64), torch.ones(64, 64))  # make sure BLAS is in use
    def cpu_blas(path):  # not cuBLAS (a CUDA build's), nor numpy's own OpenBLAS
        name = os.path.basename(path)
        return "blas" in name and "cublas" not in name and "numpy" not in path

    with open("/proc/self/maps") as f:
        paths = {line.split()[-1] for line in f if "/" in line and cpu_blas(line.split()[-1])}
    return sorted(os.path.realpath(p) for p in paths)


# ---- one workload ------------------------------------------------------------------------

def load_workload(out_dir, w):
    """(its data directory, inputs as tensors, weights by name) of a workload."""
    data = os.path.join(out_dir, "data", w["id"])
    inputs = [torch.from_numpy(np.load(os.path.join(data, f"in_{k}.npy")).copy())
              for k in range(w["n_in"])]
    weights = {p: np.load(os.path.join(data, f"param_{p}.npy")) for p in w["params"]}
    return data, inputs, weights


def as_list(out):
    return list(out) if isinstance(out, (tuple, list)) else [out]


def check(data, w, weights, inputs):
    """This PyTorch's eager on the exported data against each tjit variant's
    outputs and gradients: rows [workload, variant, what, max_abs_err, max_abs_ref]."""
    model = tm.MODELS[w["kind"]](weights)
    with torch.set_grad_enabled(w["backward"]):
        out = model(*inputs)
        if w["backward"]:
            out.backward()
    outs = [o.detach().numpy() for o in as_list(out)]
    named = dict(model.named_parameters())
    rows = []

    def row(v, what, got, ref):
        err = float(np.max(np.abs(got - ref), initial=0)) if got is not None else float("inf")
        rows.append([w["id"], v, what, f"{err:.3g}", f"{float(np.max(np.abs(ref), initial=0)):.3g}"])

    for v in ("eager", "replay", "fused", "llvm"):
        for k, ref in enumerate(outs):
            path = os.path.join(data, f"out_{v}_{k}.npy")
            if os.path.exists(path):
                row(v, f"output {k}", np.load(path), ref)
        ran = os.path.exists(os.path.join(data, f"out_{v}_0.npy"))
        for p in w["params"] if w["backward"] and ran else []:
            if named[p].grad is None:
                continue
            path = os.path.join(data, f"grad_{v}_{p}.npy")
            # a variant that ran but gave no gradient fails
            row(v, f"grad {p}" if os.path.exists(path) else f"grad {p} missing",
                np.load(path) if os.path.exists(path) else None, named[p].grad.numpy())
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
            results[name] = error_text(e)
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


def own_code(cls):
    """A subclass of model class cls whose forward has a code object of its own.
    Dynamo keeps compiled code per code object and reuses it for every instance
    whose guards pass, whatever mode the instance was compiled with: without
    this, max-autotune would run default mode's kernels compiled before it."""
    f = cls.forward
    forward = types.FunctionType(f.__code__.replace(), f.__globals__, f.__name__,
                                 f.__defaults__, f.__closure__)
    return type(cls.__name__, (cls,), {"forward": forward})


def error_text(e):
    lines = str(e).strip().splitlines()
    return f"{type(e).__name__}: {lines[0][:200] if lines else ''}"


class Worker:
    def __init__(self, name, variants):
        self.name, self.variants = name, variants
        self.fuser = tm.Fuser()

    def compiled(self, w, weights, inputs, mode, notes, key):
        """A step of torch.compile(model, mode=mode), compiled by its first call
        (timed for the note) and checked against eager once."""
        model = torch.compile(own_code(tm.MODELS[w["kind"]])(weights), mode=mode)
        step = tm.make_step(model, inputs, w)
        # the first forward compiles it (and is checked before any SGD update
        # changes the weights), the first step the backward, if any
        t0 = time.perf_counter()
        got = [o.detach().numpy() for o in as_list(model(*inputs))]
        step()
        seconds = time.perf_counter() - t0
        ref = [o.detach().numpy() for o in as_list(tm.MODELS[w["kind"]](weights)(*inputs))]
        diff = max(float(np.max(np.abs(a - b), initial=0)) for a, b in zip(got, ref))
        notes[key] = f"{mode} mode, compiled in {seconds:.1f} s, output within {diff:.2g} of eager"
        return step

    def steps(self, w, weights, inputs, notes):
        """name -> (step, before, after) of the variants that could be built,
        and name -> reason of those that could not."""
        nothing = lambda: None
        steps, failed = {}, {}
        for v in self.variants:
            key = f"{self.name}_{v}"
            try:
                if v == "eager":
                    step = tm.make_step(tm.MODELS[w["kind"]](weights), inputs, w)
                    steps[key] = (step, nothing, nothing)
                elif v == "trace":
                    traced = torch.jit.trace(tm.MODELS[w["kind"]](weights), tuple(inputs),
                                             check_trace=False)
                    steps[key] = (tm.make_step(traced, inputs, w), nothing, nothing)
                    notes[key] = "profiling executor, no CPU fusion (the default)"
                elif v == "fused":
                    self.fuser.on()
                    try:
                        fused = torch.jit.trace(tm.MODELS[w["kind"]](weights), tuple(inputs),
                                                check_trace=False)
                    finally:
                        self.fuser.off()
                    steps[key] = (tm.make_step(fused, inputs, w), self.fuser.on, self.fuser.off)
                elif v in ("compile", "autotune"):
                    if not hasattr(torch, "compile"):
                        raise RuntimeError(f"PyTorch {torch.__version__} has no torch.compile")
                    mode = "default" if v == "compile" else "max-autotune-no-cudagraphs"
                    steps[key] = (self.compiled(w, weights, inputs, mode, notes, key),
                                  nothing, nothing)
            except Exception as e:  # n/a with the reason
                failed[key] = f"{v} failed: {error_text(e)}"
        return steps, failed

    def run(self, req):
        """Times this PyTorch's variants of one workload (and checks tjit's
        outputs against its eager when asked)."""
        w = req["workload"]
        data, inputs, weights = load_workload(req["out"], w)
        checks = check(data, w, weights, inputs) if req.get("check") else []
        torch.set_grad_enabled(w["backward"])  # forward workloads: no autograd state
        notes = {}
        try:
            steps, results = self.steps(w, weights, inputs, notes)
            results.update(measure(steps, req["budget"], 5, req["min_reps"], req["max_reps"],
                                   random.Random(req.get("seed", 12345))))
            fkey = f"{self.name}_fused"
            if fkey in steps and isinstance(results.get(fkey), list):
                self.fuser.on()  # one more call to read the fused graph (forward, or backward last)
                steps[fkey][0]()
                notes[fkey] = f"{self.fuser.name}: {tm.count_groups()} fusion groups in the last graph run"
                self.fuser.off()
        finally:
            torch.set_grad_enabled(True)
            if hasattr(torch, "_dynamo"):
                torch._dynamo.reset()  # the next workload's compiles start clean
        rows, lines = [], []
        for key in [f"{self.name}_{v}" for v in self.variants]:
            r = results[key]
            if isinstance(r, list):
                med = float(np.median(r))
                rows.append([w["id"], w["label"], key, f"{med:.9g}", f"{r[0]:.9g}", len(r), "ok",
                             notes.get(key, "")])
                lines.append(f"  {key:15s} {med * 1e3:10.4f} ms  (best {r[0] * 1e3:.4f})"
                             + (f"  [{notes[key]}]" if key.endswith(("compile", "autotune")) else ""))
            else:
                rows.append([w["id"], w["label"], key, "", "", 0, "n/a", r])
                lines.append(f"  {key:15s}        n/a  ({r})")
        return {"rows": rows, "checks": checks, "lines": lines}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--name", required=True, help="the variants' prefix: torch2, torch1")
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--variants", default="eager,trace")
    args = ap.parse_args()
    proto = os.fdopen(os.dup(1), "w")
    os.dup2(2, 1)  # whatever else prints goes to stderr
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

    def send(obj):
        proto.write(json.dumps(obj) + "\n")
        proto.flush()

    try:
        load_torch(args.threads)
        worker = Worker(args.name, args.variants.split(","))
        send(describe(worker.fuser))
    except Exception as e:  # the driver measures without this PyTorch, saying why
        send({"error": error_text(e)})
        return 1
    for line in sys.stdin:
        req = json.loads(line)
        try:
            send(worker.run(req))
        except Exception as e:
            send({"error": error_text(e)})
    return 0


if __name__ == "__main__":
    sys.exit(main())
