#!/usr/bin/env python3
"""report.py — the last step of `make bench`: merges bench_suite's tjit.csv and
torch_compare.py's torch.csv and check.csv into one table, printed and written
as <out>/results.md and <out>/results.csv: tjit's variants beside PyTorch 2.x's
(eager, jit.trace, jit.trace + fuser, torch.compile) and Debian's PyTorch
1.13's (eager, jit.trace), the ratios of tjit's best against torch.compile and
against 2.x eager, the per-op overhead in ns, the machine's limits (copy
bandwidth, OpenBLAS sgemm), the targets of issue 9 checked against the
figures, and a gnuplot chart of the speed-up over PyTorch 2.x eager per
workload (<out>/speedup.png).

--docs FILE also replaces the part of FILE between the lines
"<!-- bench:begin -->" and "<!-- bench:end -->" with the results (docs/performance.md).
Exits with status 1 when an output or gradient of tjit differs from PyTorch's
beyond the tolerance. Standard library only: it runs where PyTorch is missing too.
Usage: report.py [--out DIR] [--docs FILE]
"""
import argparse
import csv
import datetime
import json
import os
import re
import platform
import shutil
import statistics
import subprocess
import sys

# tjit's columns: (variant key, heading)
TJIT = [("eager", "tjit eager"), ("replay", "tjit replay"), ("fused", "tjit fused"),
        ("llvm", "tjit fused LLVM")]
# each PyTorch's variants, in the order of the table, with the heading's end;
# a column shows when torch.csv has a row of it
TORCH_SIDES = ("torch2", "torch1")
TORCH_VARIANTS = [("eager", "eager"), ("trace", "jit.trace"), ("fused", "jit.trace + fuser"),
                  ("compile", "compile"), ("autotune", "compile max-autotune")]
# a row measured while other processes used more than this share of the CPUs
# is marked: its medians say more about the neighbours than about tjit
DISTURBED = 0.15
# the side-by-side check passes when every output and gradient is within
# RTOL * max(1, largest magnitude of PyTorch's) of PyTorch eager's (2.x's, or
# 1.13's where 2.x is missing: torch_meta.json's reference): f32 results
# summed in another order (BLAS blocking, reductions) differ by some ulps of the
# largest magnitude; 1e-5 is about 80 ulps
RTOL = 1e-5


def read_csv(path):
    if not os.path.exists(path):
        return []
    with open(path, newline="") as f:
        return list(csv.DictReader(f))


def read_manifest(out):
    """bench_suite's manifest.jsonl: (the workloads, the latest entry per id in
    order of first appearance; the run: threads and LLVM from the last run line,
    load_before from the first, load_after from the last)."""
    workloads, runs = {}, []
    with open(os.path.join(out, "manifest.jsonl")) as f:
        for line in f:
            item = json.loads(line)
            if "run" in item:
                runs.append(item["run"])
            else:
                workloads[item["id"]] = item
    run = dict(runs[-1]) if runs else {"threads": 0}
    if runs:
        run["load_before"] = runs[0]["load_before"]
    return list(workloads.values()), run


def fmt_time(s):
    """A time in seconds as us or ms with 3 significant digits."""
    if s < 1e-3:
        return f"{s * 1e6:.3g} us"
    return f"{s * 1e3:.3g} ms"


def fmt_ratio(r):
    """2 decimals; 3 just below 1, so that a ratio under 1 never prints as 1.00x;
    2 significant digits below 0.1, so that none prints as 0.00x."""
    if 0.995 <= r < 1.0:
        return f"{r:.3f}x"
    if r < 0.1:
        return f"{r:.2g}x"
    return f"{r:.2f}x" if r < 10 else f"{r:.1f}x"


class Results:
    """All measurements: rows[workload][variant] = dict of the CSV row."""

    def __init__(self, out, suite=None):
        self.out, self.suite = out, suite
        self.workloads, self.manifest = read_manifest(out)
        self.rows = {}
        for r in read_csv(os.path.join(out, "tjit.csv")) + read_csv(os.path.join(out, "torch.csv")):
            self.rows.setdefault(r["workload"], {})[r["variant"]] = r
        self.checks = read_csv(os.path.join(out, "check.csv"))
        meta = os.path.join(out, "torch_meta.json")
        self.torch = json.load(open(meta)) if os.path.exists(meta) else {}
        self.sides = self.torch.get("sides", {})
        measured = {v for r in self.rows.values() for v in r}
        self.columns = list(TJIT)
        for side in TORCH_SIDES:
            for v, head in TORCH_VARIANTS:
                if f"{side}_{v}" in measured:
                    self.columns.append((f"{side}_{v}", f"{self.torch_name(side)} {head}"))
        # speed-ups are over PyTorch 2.x eager, or 1.13's where 2.x is missing
        self.base = next((v for v in ("torch2_eager", "torch1_eager") if v in measured), None)
        self.heading = dict(self.columns)

    def torch_name(self, side):
        """'torch 2.15' from the version the worker reported ('torch 2.x' unknown)."""
        version = self.sides.get(side, {}).get("version")
        if not version:
            return "torch 2.x" if side == "torch2" else "torch 1.x"
        return "torch " + ".".join(version.split("+")[0].split(".")[:2])

    def tjit_best(self, w, best=False):
        """(seconds, variant) of tjit's fastest variant on workload w, or (None, None)."""
        times = [(t, v) for t, v in ((self.time(w, v, best), v) for v, _ in TJIT) if t]
        return min(times) if times else (None, None)

    def ratio(self, w, against, best=False):
        """PyTorch variant `against`'s time over tjit's best: above 1, tjit is faster."""
        t, _ = self.tjit_best(w, best)
        other = self.time(w, against, best)
        return other / t if t and other else None

    def time(self, w, v, best=False):
        """The median (or best) seconds of variant v on workload w, or None."""
        r = self.rows.get(w, {}).get(v)
        return float(r["best_s" if best else "median_s"]) if r and r["status"] == "ok" else None

    def note(self, w, v):
        r = self.rows.get(w, {}).get(v)
        return r["note"] if r else "not measured"

    def speedup(self, w, v, best=False):
        t, base = self.time(w, v, best), self.time(w, self.base, best) if self.base else None
        return base / t if t and base else None

    def label(self, w):
        """A workload's label, marked when its row was disturbed."""
        return w["label"] + (" (disturbed)" if self.disturbed(w["id"]) else "")

    def disturbed(self, w):
        """Whether other processes used more than DISTURBED of the CPUs while a
        half of this row was measured (after the driver's re-measures)."""
        shares = self.torch.get("shared", {}).get(w, {}).get("others", {}).values()
        return any(x is not None and x > DISTURBED for x in shares)

    def max_error(self, w):
        """(max abs error over tjit variants and quantities, whether within tolerance)."""
        rows = [c for c in self.checks if c["workload"] == w]
        if not rows:
            return None, None
        err = max(float(c["max_abs_err"]) for c in rows)
        ok = all(float(c["max_abs_err"]) <= RTOL * max(1.0, float(c["max_abs_ref"])) for c in rows)
        return err, ok


# ---- the machine ----------------------------------------------------------------------------

def tjit_blas(suite):
    """The BLAS library bench_suite loads, resolved (from ldd); not cuBLAS, which
    a CUDA build links for its GPU."""
    try:
        out = subprocess.run(["ldd", suite], capture_output=True, text=True).stdout
    except OSError:
        return []
    return sorted({os.path.realpath(line.split("=>")[1].split()[0]) for line in out.splitlines()
                   if "blas" in line and "cublas" not in line and "=>" in line})


def tjit_blas_core(suite):
    """The OpenBLAS kernels tjit runs (`tjit --version`, beside bench_suite):
    tjit has OpenBLAS choose again where it fell back below the CPU's AVX2
    (backends/cpu/blas_core.c). None when unknown."""
    tool = os.path.join(os.path.dirname(os.path.abspath(suite)), "tjit")
    try:
        out = subprocess.run([tool, "--version"], capture_output=True, text=True).stdout
    except OSError:
        return None
    m = re.search(r"\(kernels for (\w+)\)", out)
    return m.group(1) if m else None


def cpu_isa():
    """The widest vector ISA the CPU offers tjit's and PyTorch's kernels, from
    /proc/cpuinfo's flags: AVX-512 (avx512f), AVX2, or neither."""
    try:
        with open("/proc/cpuinfo") as f:
            flags = next((line.split(":", 1)[1].split() for line in f if line.startswith("flags")), [])
    except OSError:
        flags = []
    if "avx512f" in flags:
        return "AVX-512 (avx512f" + (", avx512bw, avx512vl" if "avx512bw" in flags else "") + ")"
    return "AVX2" if "avx2" in flags else "neither AVX-512 nor AVX2"


def side_blas(info):
    """A PyTorch's BLAS: the libraries it mapped, or the one linked into it."""
    if info.get("blas"):
        return ", ".join(info["blas"])
    return f"{info.get('blas_info', '?')} (linked into libtorch)"


def header(res):
    """The lines at the top of the report: the ISA, both PyTorch versions."""
    lines = [f"- CPU ISA: {cpu_isa()} in /proc/cpuinfo's flags"
             + "".join(f"; {res.torch_name(s)}'s kernels: {i['capability']}"
                       for s, i in res.sides.items() if i.get("capability"))]
    if res.torch.get("isa") == "avx2":
        env = ", ".join(f"{k}={v}" for k, v in res.torch.get("isa_env", {}).items())
        lines.append(f"- both sides held to AVX2 code (torch_compare.py --isa avx2: {env})")
    tjit = [t for t in res.torch.get("tjit", []) if t.split(":")[0] in ("CPU kernels", "LLVM")]
    if tjit:
        lines.append("- tjit: " + "; ".join(tjit))
    where = {"torch2": "PyPI's, in build/torch-venv", "torch1": "Debian's python3-torch"}
    for side in TORCH_SIDES:
        info = res.sides.get(side)
        if info is None:
            continue
        title = "PyTorch 2.x" if side == "torch2" else "PyTorch 1.13"
        if "version" not in info:
            lines.append(f"- {title}: not measured: {info.get('error', '?')}")
            continue
        lines.append(f"- {title}: {info['version']} ({where[side]}, Python {info['python']})"
                     + (f", jit.trace + fuser: {info['fuser']}" if f"{side}_fused" in res.heading
                        else "")
                     + ("; the reference of the correctness check" if res.torch.get("reference") == side
                        else ""))
    if not res.sides:
        lines.append("- PyTorch: not measured")
    return lines


def machine(res):
    """Lines describing the machine and the run."""
    # the kernels of the measured run (its environment may have named them), else asked now
    ran = [re.search(r"\(kernels for (\w+)\)", t) for t in res.torch.get("tjit", []) if t.startswith("BLAS")]
    core = ran[0].group(1) if ran and ran[0] else tjit_blas_core(res.suite) if res.suite else None
    info = {}
    try:
        for line in subprocess.run(["lscpu"], capture_output=True, text=True).stdout.splitlines():
            k, _, v = line.partition(":")
            info[k.strip()] = v.strip()
    except OSError:
        pass
    mem = ""
    try:
        with open("/proc/meminfo") as f:
            kb = int(f.readline().split()[1])
            mem = f", {kb / 2**20:.0f} GiB memory"
    except (OSError, ValueError, IndexError):
        pass
    commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                            text=True).stdout.strip() or "unknown"
    loads = [w.get("load", -1) for w in res.workloads if w.get("load", -1) >= 0]
    shared = res.torch.get("shared", {})
    others = [x for r in shared.values() for x in r["others"].values() if x is not None]
    again = sum(sum(r["again"].values()) for r in shared.values())
    m = res.manifest
    lines = [
        f"- CPU: {info.get('Model name', platform.processor() or '?')}, "
        f"{info.get('CPU(s)', '?')} CPUs ({info.get('Core(s) per socket', '?')} cores per socket, "
        f"{info.get('Thread(s) per core', '?')} thread(s) per core), L2 {info.get('L2 cache', '?')}, "
        f"L3 {info.get('L3 cache', '?')}{mem}; {info.get('Hypervisor vendor', 'no') } hypervisor",
        f"- threads: {m['threads']} (tjit, OpenBLAS and torch.set_num_threads alike)",
        f"- load average (1 min): {m.get('load_before', -1):.2f} at the start, "
        + (f"{min(loads):.2f} to {max(loads):.2f} at the start of the rows" if loads else "")
        + (f"; the share of the CPUs other processes used while a half of a row was measured: "
           f"median {100 * statistics.median(others):.1f}%, at most {100 * max(others):.1f}% "
           f"({again} halves measured again for exceeding 15%)" if others else ""),
        f"- tjit commit {commit}, LLVM backend {'built' if m.get('llvm_built') else 'not built'}",
        "- BLAS: tjit " + (", ".join(tjit_blas(res.suite)) if res.suite else "?")
        + (f" (kernels for {core}, which PyTorch 1.13 gets too)" if core else "") + "; "
        + "; ".join(f"{res.torch_name(side)} {side_blas(info)}"
                    for side, info in res.sides.items() if "version" in info)
        + "; threading variables: "
        + (", ".join(f"{k}={v}" for k, v in sorted(os.environ.items())
                     if k.startswith(("OMP_", "GOMP_", "OPENBLAS_", "MKL_"))) or "none set"),
        f"- {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}",
    ]
    return lines


# ---- the tables ------------------------------------------------------------------------------

def ratio_columns(res):
    """(PyTorch variant, heading) of the ratio columns: tjit's best against
    torch.compile and against PyTorch 2.x eager, where measured."""
    return [(v, f"tjit best vs {res.heading[v]}") for v in ("torch2_compile", "torch2_eager")
            if v in res.heading]


# the chart's colour of each variant: tjit's in greens and blues, PyTorch 2.x's in
# reds and oranges, 1.13's in greys
COLORS = {"eager": "#9ed99e", "replay": "#3aa63a", "fused": "#5b9bd5", "llvm": "#1f4e9a",
          "torch2_eager": "#f4b183", "torch2_trace": "#e9822e", "torch2_fused": "#c55a11",
          "torch2_compile": "#c00000", "torch2_autotune": "#7b0000",
          "torch1_eager": "#bfbfbf", "torch1_trace": "#7f7f7f"}
SHORT = {"eager": "eager", "replay": "replay", "fused": "fused", "llvm": "LLVM"}


def main_table(res, best=False):
    """The table of medians (or, with best, of the fastest steps): every
    variant's time, then how many times faster tjit's best variant is than
    torch.compile and than 2.x eager (named in brackets; above 1x tjit is faster)."""
    ratios = ratio_columns(res)
    head = (["workload"] + [h for _, h in res.columns] + [h for _, h in ratios]
            + ([] if best else ["max abs err"]))
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for w in res.workloads:
        cells = [res.label(w)]
        for v, _ in res.columns:
            t = res.time(w["id"], v, best)
            cells.append("n/a" if t is None else fmt_time(t))
        _, fastest = res.tjit_best(w["id"], best)
        for v, _ in ratios:
            r = res.ratio(w["id"], v, best)
            cells.append("n/a" if r is None else f"{fmt_ratio(r)} ({SHORT[fastest]})")
        if not best:
            err, ok = res.max_error(w["id"])
            cells.append("n/a" if err is None else f"{err:.2g}" + ("" if ok else " FAIL"))
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def overhead_table(res):
    """The `overhead` workload (a chain of adds on 1-element tensors) as ns per op
    for every variant: each framework's cost of one op outside its arithmetic."""
    w = next((x for x in res.workloads if x["kind"] == "add_chain"), None)
    if w is None:
        return []
    lines = [f"Per-op overhead: the `{w['id']}` workload (a chain of {w['ops']} adds on 1-element "
             f"tensors), its median time / {w['ops']}"
             + (" (disturbed: see Notes)" if res.disturbed(w["id"]) else "") + ".", "",
             "| variant | ns per op |", "|---|---|"]
    for v, h in res.columns:
        t = res.time(w["id"], v)
        per_op = "n/a" if t is None else f"{t / w['ops'] * 1e9:.0f}"
        lines.append(f"| {h} | {per_op} |")
    return lines


def limits(res):
    """The machine's limits and the derived figures, as Markdown lines."""
    lines = []
    for w in res.workloads:
        wid = w["id"]
        if w["kind"] == "pointwise":
            copy = res.time(wid, "copy")
            n = w["bytes"] / 16
            if copy:
                copy_gbs = 8 * n / copy / 1e9
                parts = [f"copy {copy_gbs:.1f} GB/s"]
                for v in ("fused", "llvm", "torch2_eager", "torch2_compile", "torch1_eager"):
                    t = res.time(wid, v)
                    if t:
                        gbs = w["bytes"] / t / 1e9
                        share = 100 * gbs / copy_gbs
                        parts.append(f"{res.heading[v]} {gbs:.1f} GB/s ({share:.0f}% of copy)")
                lines.append(f"- {w['label']}: " + ", ".join(parts))
        elif w["kind"] == "mm":
            parts = []
            for v in ("openblas", "eager", "fused", "torch2_eager", "torch2_compile", "torch1_eager"):
                t = res.time(wid, v)
                if t:
                    name = "OpenBLAS cblas_sgemm" if v == "openblas" else res.heading[v]
                    parts.append(f"{name} {w['flops'] / t / 1e9:.0f} GFLOP/s")
            lines.append(f"- {w['label']}: " + ", ".join(parts))
    return lines


def targets(res):
    """Issue 9's targets, each with the figures it rests on."""
    lines = []
    fused = ("fused", "llvm")
    base = res.heading.get(res.base, "PyTorch eager")
    worse = []
    for w in res.workloads:
        best = max((s for s in (res.speedup(w["id"], v) for v in fused) if s), default=None)
        if best is None or best < 1.0:
            worse.append(f"{res.label(w)} ({'n/a' if best is None else fmt_ratio(best)})")
    lines.append(f"- tjit fused (the better of portable and LLVM) at least matches {base} "
                 "on every workload: " + ("**met**" if not worse else
                                          "**not met**: " + "; ".join(worse)))
    if "torch2_compile" in res.heading:
        worse = []
        for w in res.workloads:
            t = min((x for x in (res.time(w["id"], v) for v in fused) if x), default=None)
            c = res.time(w["id"], "torch2_compile")
            if not t or not c or c / t < 1.0:
                worse.append(f"{res.label(w)} ({fmt_ratio(c / t) if t and c else 'n/a'})")
        lines.append(f"- tjit fused at least matches {res.heading['torch2_compile']} on every "
                     "workload: " + ("**met**" if not worse else "**not met**: " + "; ".join(worse)))
    for wid in ("lstm_fwd_b1", "lstm_fwd_b64", "lstm_fwdbwd_b1", "lstm_fwdbwd_b64"):
        w = next((x for x in res.workloads if x["id"] == wid), None)
        if not w:
            continue
        s = {v: res.speedup(wid, v) for v in fused}
        best = max((x for x in s.values() if x), default=None)
        lines.append(f"- {res.label(w)}, at least 2x {base}: "
                     + ("**met**" if best and best >= 2 else "**not met**")
                     + " (portable " + (fmt_ratio(s["fused"]) if s["fused"] else "n/a")
                     + ", LLVM " + (fmt_ratio(s["llvm"]) if s["llvm"] else "n/a") + ")")
    for w in res.workloads:
        if w["kind"] != "pointwise" or not res.time(w["id"], "copy"):
            continue
        copy_gbs = 8 * (w["bytes"] / 16) / res.time(w["id"], "copy") / 1e9
        frac = {v: (w["bytes"] / res.time(w["id"], v) / 1e9) / copy_gbs
                for v in fused if res.time(w["id"], v)}
        best = max(frac.values(), default=0)
        lines.append(f"- {res.label(w)}: fused at least 80% of copy bandwidth: "
                     + ("**met**" if best >= 0.8 else "**not met**") + " ("
                     + ", ".join(f"{'portable' if v == 'fused' else 'LLVM'} {100 * f:.0f}%"
                                 for v, f in frac.items()) + ")")
    return lines


def notes(res):
    """Why cells say n/a, one line per variant and reason; the PyTorch fuser's
    groups; torch.compile's compile times."""
    reasons = {}  # (heading, reason) -> labels
    for w in res.workloads:
        for v, h in res.columns:
            r = res.rows.get(w["id"], {}).get(v)
            if r is None or r["status"] != "ok":
                reasons.setdefault((h, r["note"] if r else "not measured"), []).append(w["label"])
    lines = [f"- {h} n/a on {', '.join(labels)}: {why}" for (h, why), labels in reasons.items()]
    shared = res.torch.get("shared", {})
    halves = {"tjit": "tjit", "torch2": res.torch_name("torch2"), "torch1": res.torch_name("torch1")}
    for w in res.workloads:
        if res.disturbed(w["id"]):
            lines.append(f"- {res.label(w)}: other processes used "
                         + ", ".join(f"{100 * x:.0f}% of the CPUs during the {halves[h]} half"
                                     for h, x in shared[w["id"]]["others"].items() if x is not None)
                         + " even after the re-measures: read this row with care")
    for side in TORCH_SIDES:
        v = f"{side}_fused"
        groups = [f"{w['label']}: {res.note(w['id'], v).split(': ')[-1].split()[0]}"
                  for w in res.workloads if res.time(w["id"], v)]
        if groups:
            lines.append(f"- fusion groups in the last graph {res.heading[v]} ran: "
                         + "; ".join(groups))
    for side in TORCH_SIDES:
        for v in (f"{side}_compile", f"{side}_autotune"):
            done = [f"{w['label']}: {res.note(w['id'], v).split('compiled in ')[1].split(',')[0]}"
                    for w in res.workloads
                    if res.time(w["id"], v) and "compiled in " in res.note(w["id"], v)]
            if done:
                lines.append(f"- {res.heading[v]}: compile time of the first calls (warm-up, not "
                             "in the figures; a warm Inductor cache on disk shortens it): "
                             + "; ".join(done))
    return lines


# ---- outputs ---------------------------------------------------------------------------------

def write_csv(res, path):
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["workload", "label", "variant", "median_s", "best_s", "reps", "status",
                      f"speedup_vs_{res.base}", "max_abs_err", "others_cpu_share", "note"])
        shared = res.torch.get("shared", {})
        for w in res.workloads:
            err = {}
            for c in res.checks:
                if c["workload"] == w["id"]:
                    err[c["variant"]] = max(err.get(c["variant"], 0.0), float(c["max_abs_err"]))
            for v in [c for c, _ in res.columns] + ["copy", "openblas"]:
                r = res.rows.get(w["id"], {}).get(v)
                if r is None:
                    continue
                s = res.speedup(w["id"], v)
                half = v.split("_")[0] if v.startswith("torch") else "tjit"
                share = shared.get(w["id"], {}).get("others", {}).get(half)
                out.writerow([w["id"], w["label"], v, r["median_s"], r["best_s"], r["reps"],
                              r["status"], f"{s:.4g}" if s else "",
                              f"{err[v]:.3g}" if v in err else "",
                              "" if share is None else f"{share:.3f}", r["note"]])


def chart(res, out):
    """speedup.png: speed-up over PyTorch 2.x eager per workload and variant (log scale)."""
    if not shutil.which("gnuplot"):
        return "gnuplot not installed: no chart"
    if not res.base:
        return "no PyTorch measured: no chart"
    series = [c for c in res.columns if c[0] != res.base]
    dat = os.path.join(out, "speedup.dat")
    with open(dat, "w") as f:
        f.write("workload " + " ".join(f'"{h}"' for _, h in series) + "\n")
        for w in res.workloads:
            vals = [res.speedup(w["id"], v) for v, _ in series]
            f.write(f'"{w["label"]}" ' + " ".join(f"{x:.4g}" if x else "?" for x in vals) + "\n")
    script = f"""
set terminal pngcairo size 1600,900 font "DejaVu Sans,11"
set output "{os.path.join(out, 'speedup.png')}"
set title "Speed-up over {res.heading[res.base]} (higher is better; median times, {res.manifest['threads']} threads)"
set datafile missing "?"
set style data histograms
set style histogram clustered gap 1
set style fill solid 0.9 border -1
set boxwidth 0.9
set logscale y 2
set yrange [0.05:64]
set ytics ("1/16" 0.0625, "1/8" 0.125, "1/4" 0.25, "1/2" 0.5, "1" 1, "2" 2, "4" 4, \\
           "8" 8, "16" 16, "32" 32, "64" 64)
set grid ytics
set xtics rotate by -35 left noenhanced font ",10"
set key top left horizontal noenhanced
set bmargin 10
set rmargin 12
set arrow from graph 0, first 1 to graph 1, first 1 nohead lw 2 lc rgb "black"
colors = "{" ".join(COLORS.get(v, "#808080") for v, _ in series)}"
plot for [i=2:{len(series) + 1}] "{dat}" using i:xtic(1) title columnheader(i) lc rgb word(colors, i - 1)
"""
    gp = os.path.join(out, "speedup.gp")
    with open(gp, "w") as f:
        f.write(script)
    r = subprocess.run(["gnuplot", gp], capture_output=True, text=True)
    if r.returncode != 0:
        return "gnuplot: " + r.stderr
    return "chart: " + os.path.join(out, "speedup.png")


def report(res):
    md = ["## Results", ""] + header(res)
    md += ["", "Median time per step. The \"tjit best vs\" columns divide that PyTorch "
           "variant's time by tjit's fastest variant's (named in brackets): above 1x, tjit is "
           "faster.", ""]
    md += main_table(res)
    md += [""] + overhead_table(res)
    md += ["", "## Machine", ""] + machine(res)
    md += ["", "## Limits and derived figures", ""] + limits(res)
    md += ["", "## Targets", ""] + targets(res)
    md += ["", "## Notes", ""] + notes(res)
    return md


def update_docs(path, md, out, res):
    """Replaces the block between the markers in path with md, and copies the
    chart next to path as <name>-speedup.png, shown at the end of the block."""
    with open(path) as f:
        text = f.read()
    begin, end = "<!-- bench:begin -->", "<!-- bench:end -->"
    if begin not in text or end not in text:
        sys.exit(f"report.py: {path} has no {begin} ... {end} block")
    head, rest = text.split(begin, 1)
    _, tail = rest.split(end, 1)
    body = "\n".join(md).replace("## ", "### ")
    png = os.path.join(out, "speedup.png")
    if os.path.exists(png):
        name = os.path.splitext(os.path.basename(path))[0] + "-speedup.png"
        shutil.copyfile(png, os.path.join(os.path.dirname(path) or ".", name))
        body += f"\n\n![Speed-up over {res.heading.get(res.base, 'PyTorch eager')} per workload]({name})"
    with open(path, "w") as f:
        f.write(head + begin + "\n" + body + "\n" + end + tail)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", default="build/bench")
    ap.add_argument("--docs", default=None, help="a Markdown file to update between the markers")
    ap.add_argument("--suite", default=None, help="bench_suite, to name the BLAS library it loads")
    args = ap.parse_args()
    res = Results(args.out, args.suite)
    md = report(res)
    best = ["", "## Best times", "", "The fastest step of each variant (the ratios: of the "
            "fastest steps), which a busy machine disturbs less than the medians.", ""]
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write("# tjit benchmarks\n\n" + "\n".join(md + best + main_table(res, best=True)) + "\n")
    write_csv(res, os.path.join(args.out, "results.csv"))
    print("\n".join(md))
    print("\n" + chart(res, args.out))
    print(f"results: {os.path.join(args.out, 'results.md')}, {os.path.join(args.out, 'results.csv')}")
    if args.docs:
        update_docs(args.docs, md, args.out, res)
        print(f"updated {args.docs}")
    failed = [w["label"] for w in res.workloads if res.max_error(w["id"])[1] is False]
    if failed:  # a correctness failure fails the command; slow figures do not
        print("report.py: tjit and PyTorch disagree on: " + "; ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
