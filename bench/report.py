#!/usr/bin/env python3
"""report.py — the last step of `make bench`: merges bench_suite's tjit.csv and
torch_compare.py's torch.csv and check.csv into one table, printed and written
as <out>/results.md and <out>/results.csv, with the machine's limits (copy
bandwidth, OpenBLAS sgemm), the targets of issue 9 checked against the
figures, and a gnuplot chart of the speed-up over PyTorch eager per workload
(<out>/speedup.png).

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
import platform
import shutil
import statistics
import subprocess
import sys

# the table's columns: (variant key, heading)
COLUMNS = [("eager", "tjit eager"), ("replay", "tjit replay"), ("fused", "tjit fused"),
           ("llvm", "tjit fused LLVM"), ("torch_eager", "PyTorch eager"),
           ("torch_trace", "jit.trace"), ("torch_fused", "jit.trace + fuser")]
BASE = "torch_eager"
# a row measured while other processes used more than this share of the CPUs
# is marked: its medians say more about the neighbours than about tjit
DISTURBED = 0.15
# the side-by-side check passes when every output and gradient is within
# RTOL * max(1, largest magnitude of PyTorch's) of PyTorch eager's: f32 results
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
    """2 decimals; 3 just below 1, so that a ratio under 1 never prints as 1.00x."""
    if 0.995 <= r < 1.0:
        return f"{r:.3f}x"
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
        self.torch = json.load(open(meta)) if os.path.exists(meta) else None

    def time(self, w, v, best=False):
        """The median (or best) seconds of variant v on workload w, or None."""
        r = self.rows.get(w, {}).get(v)
        return float(r["best_s" if best else "median_s"]) if r and r["status"] == "ok" else None

    def note(self, w, v):
        r = self.rows.get(w, {}).get(v)
        return r["note"] if r else "not measured"

    def speedup(self, w, v, best=False):
        t, base = self.time(w, v, best), self.time(w, BASE, best)
        return base / t if t and base else None

    def label(self, w):
        """A workload's label, marked when its row was disturbed."""
        return w["label"] + (" (disturbed)" if self.disturbed(w["id"]) else "")

    def disturbed(self, w):
        """Whether other processes used more than DISTURBED of the CPUs while a
        half of this row was measured (after the driver's re-measures)."""
        shares = (self.torch or {}).get("shared", {}).get(w, {}).get("others", [])
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
    """The BLAS library bench_suite loads, resolved (from ldd)."""
    try:
        out = subprocess.run(["ldd", suite], capture_output=True, text=True).stdout
    except OSError:
        return []
    return sorted({os.path.realpath(line.split("=>")[1].split()[0]) for line in out.splitlines()
                   if "blas" in line and "=>" in line})


def machine(res):
    """Lines describing the machine and the run."""
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
    shared = (res.torch or {}).get("shared", {})
    others = [x for r in shared.values() for x in r["others"] if x is not None]
    again = sum(sum(r["again"]) for r in shared.values())
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
        f"- tjit commit {commit}, LLVM backend {'built' if m.get('llvm_built') else 'not built'}; "
        + (f"PyTorch {res.torch['version']}, fused variant: {res.torch['fuser']}" if res.torch
           else "PyTorch: not installed"),
        "- BLAS: tjit " + (", ".join(tjit_blas(res.suite)) if res.suite else "?") + "; PyTorch "
        + (", ".join(res.torch.get("blas", [])) if res.torch else "?") + "; threading variables: "
        + (", ".join(f"{k}={v}" for k, v in sorted(os.environ.items())
                     if k.startswith(("OMP_", "GOMP_", "OPENBLAS_"))) or "none set"),
        f"- {datetime.datetime.now().strftime('%Y-%m-%d %H:%M')}, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}",
    ]
    return lines


# ---- the tables ------------------------------------------------------------------------------

def main_table(res, best=False):
    """The table of medians (or, with best, of the fastest steps) with speed-ups."""
    head = ["workload"] + [h for _, h in COLUMNS] + ([] if best else ["max abs err"])
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for w in res.workloads:
        cells = [res.label(w)]
        for v, _ in COLUMNS:
            t = res.time(w["id"], v, best)
            if t is None:
                cells.append("n/a")
                continue
            s = res.speedup(w["id"], v, best)
            cells.append(fmt_time(t) + ("" if s is None or v == BASE else f" ({fmt_ratio(s)})"))
        if not best:
            err, ok = res.max_error(w["id"])
            cells.append("n/a" if err is None else f"{err:.2g}" + ("" if ok else " FAIL"))
        lines.append("| " + " | ".join(cells) + " |")
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
                for v in ("fused", "llvm", "torch_eager", "torch_fused"):
                    t = res.time(wid, v)
                    if t:
                        gbs = w["bytes"] / t / 1e9
                        share = 100 * gbs / copy_gbs
                        parts.append(f"{dict(COLUMNS)[v]} {gbs:.1f} GB/s ({share:.0f}% of copy)")
                lines.append(f"- {w['label']}: " + ", ".join(parts))
        elif w["kind"] == "mm":
            parts = []
            for v in ("openblas", "eager", "fused", "torch_eager"):
                t = res.time(wid, v)
                if t:
                    name = "OpenBLAS cblas_sgemm" if v == "openblas" else dict(COLUMNS)[v]
                    parts.append(f"{name} {w['flops'] / t / 1e9:.0f} GFLOP/s")
            lines.append(f"- {w['label']}: " + ", ".join(parts))
        elif w["kind"] == "add_chain":
            parts = []
            for v, h in COLUMNS:
                t = res.time(wid, v)
                if t:
                    parts.append(f"{h} {t / w['ops'] * 1e9:.0f} ns")
            lines.append(f"- per op (time / {w['ops']} adds): " + ", ".join(parts))
    return lines


def targets(res):
    """Issue 9's targets, each with the figures it rests on."""
    lines = []
    fused = ("fused", "llvm")
    worse = []
    for w in res.workloads:
        best = max((s for s in (res.speedup(w["id"], v) for v in fused) if s), default=None)
        if best is None or best < 1.0:
            worse.append(f"{res.label(w)} ({'n/a' if best is None else fmt_ratio(best)})")
    lines.append("- tjit fused (the better of portable and LLVM) at least matches PyTorch eager "
                 "on every workload: " + ("**met**" if not worse else
                                          "**not met**: " + "; ".join(worse)))
    for wid in ("lstm_fwd_b1", "lstm_fwd_b64", "lstm_fwdbwd_b1", "lstm_fwdbwd_b64"):
        w = next((x for x in res.workloads if x["id"] == wid), None)
        if not w:
            continue
        s = {v: res.speedup(wid, v) for v in fused}
        best = max((x for x in s.values() if x), default=None)
        lines.append(f"- {res.label(w)}, at least 2x PyTorch eager: "
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
    """Why cells say n/a, one line per variant and reason; the PyTorch fuser's groups."""
    reasons = {}  # (heading, reason) -> labels
    for w in res.workloads:
        for v, h in COLUMNS:
            r = res.rows.get(w["id"], {}).get(v)
            if r is None or r["status"] != "ok":
                reasons.setdefault((h, r["note"] if r else "not measured"), []).append(w["label"])
    lines = [f"- {h} n/a on {', '.join(labels)}: {why}" for (h, why), labels in reasons.items()]
    shared = (res.torch or {}).get("shared", {})
    for w in res.workloads:
        if res.disturbed(w["id"]):
            tj, pt = shared[w["id"]]["others"]
            lines.append(f"- {res.label(w)}: other processes used "
                         + ", ".join(f"{100 * x:.0f}% of the CPUs during the {side} half"
                                     for x, side in ((tj, "tjit"), (pt, "PyTorch")) if x is not None)
                         + " even after the re-measures: read this row with care")
    groups = [f"{w['label']}: {res.note(w['id'], 'torch_fused').split(': ')[-1].split()[0]}"
              for w in res.workloads if res.time(w["id"], "torch_fused")]
    if groups:
        lines.append("- fusion groups in the last graph jit.trace + fuser ran: " + "; ".join(groups))
    return lines


# ---- outputs ---------------------------------------------------------------------------------

def write_csv(res, path):
    with open(path, "w", newline="") as f:
        out = csv.writer(f)
        out.writerow(["workload", "label", "variant", "median_s", "best_s", "reps", "status",
                      "speedup_vs_torch_eager", "max_abs_err", "others_cpu_share", "note"])
        shared = (res.torch or {}).get("shared", {})
        for w in res.workloads:
            err = {}
            for c in res.checks:
                if c["workload"] == w["id"]:
                    err[c["variant"]] = max(err.get(c["variant"], 0.0), float(c["max_abs_err"]))
            for v in [c for c, _ in COLUMNS] + ["copy", "openblas"]:
                r = res.rows.get(w["id"], {}).get(v)
                if r is None:
                    continue
                s = res.speedup(w["id"], v)
                share = shared.get(w["id"], {}).get("others", [None, None])[v.startswith("torch")]
                out.writerow([w["id"], w["label"], v, r["median_s"], r["best_s"], r["reps"],
                              r["status"], f"{s:.4g}" if s else "",
                              f"{err[v]:.3g}" if v in err else "",
                              "" if share is None else f"{share:.3f}", r["note"]])


def chart(res, out):
    """speedup.png: speed-up over PyTorch eager per workload and variant (log scale)."""
    if not shutil.which("gnuplot"):
        return "gnuplot not installed: no chart"
    series = [c for c in COLUMNS if c[0] != BASE]
    dat = os.path.join(out, "speedup.dat")
    with open(dat, "w") as f:
        f.write("workload " + " ".join(f'"{h}"' for _, h in series) + "\n")
        for w in res.workloads:
            vals = [res.speedup(w["id"], v) for v, _ in series]
            f.write(f'"{w["label"]}" ' + " ".join(f"{x:.4g}" if x else "?" for x in vals) + "\n")
    script = f"""
set terminal pngcairo size 1600,900 font "DejaVu Sans,11"
set output "{os.path.join(out, 'speedup.png')}"
set title "Speed-up over PyTorch eager (higher is better; median times, {res.manifest['threads']} threads)"
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
plot for [i=2:{len(series) + 1}] "{dat}" using i:xtic(1) title columnheader(i)
"""
    gp = os.path.join(out, "speedup.gp")
    with open(gp, "w") as f:
        f.write(script)
    r = subprocess.run(["gnuplot", gp], capture_output=True, text=True)
    if r.returncode != 0:
        return "gnuplot: " + r.stderr
    return "chart: " + os.path.join(out, "speedup.png")


def report(res):
    md = ["## Results", "", "Median time per step (speed-up over PyTorch eager in brackets; "
          "higher is better).", ""]
    md += main_table(res)
    md += ["", "## Machine", ""] + machine(res)
    md += ["", "## Limits and derived figures", ""] + limits(res)
    md += ["", "## Targets", ""] + targets(res)
    md += ["", "## Notes", ""] + notes(res)
    return md


def update_docs(path, md, out):
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
        body += f"\n\n![Speed-up over PyTorch eager per workload]({name})"
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
    best = ["", "## Best times", "", "The fastest step of each variant (speed-up over PyTorch "
            "eager's fastest), which a busy machine disturbs less than the medians.", ""]
    with open(os.path.join(args.out, "results.md"), "w") as f:
        f.write("# tjit benchmarks\n\n" + "\n".join(md + best + main_table(res, best=True)) + "\n")
    write_csv(res, os.path.join(args.out, "results.csv"))
    print("\n".join(md))
    print("\n" + chart(res, args.out))
    print(f"results: {os.path.join(args.out, 'results.md')}, {os.path.join(args.out, 'results.csv')}")
    if args.docs:
        update_docs(args.docs, md, args.out)
        print(f"updated {args.docs}")
    failed = [w["label"] for w in res.workloads if res.max_error(w["id"])[1] is False]
    if failed:  # a correctness failure fails the command; slow figures do not
        print("report.py: tjit and PyTorch disagree on: " + "; ".join(failed), file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
