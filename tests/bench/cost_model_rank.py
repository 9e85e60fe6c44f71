#!/usr/bin/env python3
"""How well the auto-scheduler's cost model ranks schedules: every Emmy row the harness stored
(tests/bench/results/**/results.json: op, sizes, knobs, dtype, median time on its GPU) is predicted
with `emmyc compile --ir cost`, and the predictions are compared with the measured times, by
Spearman's rank correlation within each (op, sizes, dtype, GPU) group of three schedules or more, and over
all rows (log-log Pearson too).

  python3 tests/bench/cost_model_rank.py --emmyc build/emmyc [--json out.json]
  python3 tests/bench/cost_model_rank.py --fit     # fit the model's constants (EMMY_COST_FIT) on them
  python3 tests/bench/cost_model_rank.py --constants cta_overhead_us=5   # report under other constants

--fit searches the constants of autosched::Fitted one at a time (a few multiples of each) for the
least squared error of log(predicted / measured), within each group after its own scale and over
all points, and prints the best assignment for src/autosched/cost_model.hpp.
"""
import argparse
import concurrent.futures as cf
import glob
import json
import math
import os
import re
import statistics
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


# Rows known to be void, by results.json folder and label: what they measured is not the kernel.
VOID = {"step11/2026-12-04-auto/run1": ("[auto", "the API spawned a thread a launch for the cached decision")}


def rows():
    """(source, op, target, sizes, knobs) -> the measured medians, one list a distinct point."""
    points = {}
    for path in sorted(glob.glob(os.path.join(ROOT, "tests/bench/results/**/results.json"), recursive=True)):
        try:
            data = json.load(open(path))
        except (OSError, ValueError):
            continue
        if not isinstance(data, dict):
            continue
        for r in data.get("rows", []):
            if r.get("kind") != "emmy" or not r.get("knobs") or not r.get("median_us") or not r.get("pass", True):
                continue
            void = next((v for k, v in VOID.items() if k in path), None)
            if void and void[0] in r.get("backend", ""):
                continue
            m = re.match(r"emmy (\w+) \[", r.get("backend", ""))
            if not m:
                continue
            source = r.get("source") or ""
            source = source[source.find("stdlib/"):] if "stdlib/" in source else source
            source = source[source.find("examples/"):] if "examples/" in source else source
            if not os.path.exists(os.path.join(ROOT, source)):
                continue
            knobs = r["knobs"]
            target = "sm_90a" if ("sm_90a" in r["backend"] or "wgmma" in knobs) else "sm_90"
            shape = ",".join(f"{k}={v}" for k, v in sorted(r["shape"].items()))
            # The dtype emmy.load read the op's tensors as (the label's ", f32]") and the GPU: a row
            # measured at f32 or on an H100 is its own point, not another of the f16 H200 one.
            dtype = next((t for t in ("f32", "bf16", "f64") if f", {t}]" in r["backend"]), "f16")
            device = (data.get("meta") or {}).get("device", "NVIDIA H200")
            device = "H100" if "H100" in device else "H200"
            points.setdefault((source, m.group(1), target, shape, knobs, dtype, device), []).append(r["median_us"])
    return points


def predict(emmyc, key, fits=("",)):
    """The predictions of `key` under each constant set of `fits` (None where emmyc failed)."""
    source, op, target, shape, knobs, dtype, _ = key
    cmd = [emmyc, "compile", os.path.join(ROOT, source), "--op", op, "--target", target, "--shape", shape,
           "--knobs", knobs, "--ir", "cost"] + (["--dtype", dtype] if dtype != "f16" else [])
    env = dict(os.environ, EMMY_COST_FIT=";".join(fits))
    p = subprocess.run(cmd, capture_output=True, text=True, env=env)
    out = [None] * len(fits)
    for m in re.finditer(r"^predicted(?:\[(\d+)\])?: ([0-9.]+) us", p.stdout, re.M):
        out[int(m.group(1) or 0)] = float(m.group(2))
    return out


def ranks(values):
    order = sorted(range(len(values)), key=lambda i: values[i])
    out = [0.0] * len(values)
    i = 0
    while i < len(order):
        j = i
        while j + 1 < len(order) and values[order[j + 1]] == values[order[i]]:
            j += 1
        for k in range(i, j + 1):
            out[order[k]] = (i + j) / 2
        i = j + 1
    return out


def pearson(a, b):
    ma, mb = statistics.fmean(a), statistics.fmean(b)
    num = sum((x - ma) * (y - mb) for x, y in zip(a, b))
    den = math.sqrt(sum((x - ma) ** 2 for x in a) * sum((y - mb) ** 2 for y in b))
    return num / den if den else float("nan")


def spearman(a, b):
    return pearson(ranks(a), ranks(b))


FITTED = {"cta_overhead_us": 4, "exposed_none": 0.25, "exposed_overlap": 0.25, "exposed_turns": 0.25,
          "lone_warpgroup": 0.78, "cp_wgmma": 0.4, "accesses_in_flight": 4, "step_cycles": 10, "pass_us": 1.4,
          "sync_us": 0.04}  # src/autosched/cost_model.hpp's Fitted: the search starts there
BOUNDED = {"exposed_none", "exposed_overlap", "exposed_turns", "lone_warpgroup", "cp_wgmma"}  # at most 1


def loss(points, keys, predicted):
    groups = {}
    errs = []
    for k in keys:
        if not predicted.get(k):
            continue
        e = math.log(predicted[k]) - math.log(statistics.median(points[k]))
        errs.append(e)
        groups.setdefault(k[:4] + k[5:], []).append(e)
    within = [e - statistics.fmean(g) for g in groups.values() for e in g]
    return statistics.fmean(x * x for x in within) + 0.3 * statistics.fmean(x * x for x in errs)


def text_of(c):
    return ",".join(f"{k}={v:g}" for k, v in c.items())


def fit(emmyc, points, keys, jobs):
    """Sweeps: every constant times each factor, all in one emmyc call a point; the best single
    change is kept, until none lowers the loss."""
    current = dict(FITTED)
    factors = (0.25, 0.5, 0.8, 1.25, 2.0, 4.0)
    for sweep in range(12):
        trials = [dict(current)]
        for name in FITTED:
            for factor in factors:
                t = dict(current)
                t[name] = min(current[name] * factor, 1.0) if name in BOUNDED else current[name] * factor
                # Overlap hides at least as much as none, turns at least as much as overlap.
                ordered = t["exposed_turns"] <= t["exposed_overlap"] <= t["exposed_none"]
                if t[name] != current[name] and ordered:
                    trials.append(t)
        fits = [text_of(t) for t in trials]
        with cf.ThreadPoolExecutor(jobs) as pool:
            preds = dict(zip(keys, pool.map(lambda k: predict(emmyc, k, fits), keys)))
        losses = [loss(points, keys, {k: preds[k][i] for k in keys}) for i in range(len(trials))]
        best = min(range(len(trials)), key=lambda i: losses[i])
        print(f"sweep {sweep + 1}: loss {losses[0]:.4f} -> {losses[best]:.4f} ({text_of(trials[best])})", flush=True)
        if best == 0 or losses[best] > losses[0] - 1e-4:
            break
        current = trials[best]
    print("fitted: " + text_of(current))
    return current


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--emmyc", default=os.path.join(ROOT, "build/emmyc"))
    ap.add_argument("--json", help="write the points and the correlations here")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--fit", action="store_true", help="fit the model's constants first, then report with them")
    ap.add_argument("--ops", default="", help="only the ops this regular expression matches (e.g. 'softmax|layernorm|rmsnorm')")
    ap.add_argument("--constants", default="", help="report with these constants (NAME=V,...; EMMY_COST_FIT's form)")
    args = ap.parse_args()
    points = {k: v for k, v in rows().items() if re.fullmatch(args.ops, k[1])} if args.ops else rows()
    keys = sorted(points)
    text = args.constants
    if args.fit:
        text = text_of(fit(args.emmyc, points, keys, args.jobs))
    with cf.ThreadPoolExecutor(args.jobs) as pool:
        predicted = dict(zip(keys, pool.map(lambda k: predict(args.emmyc, k, (text,))[0], keys)))
    data = [(k, statistics.median(points[k]), predicted[k]) for k in keys if predicted[k]]
    groups = {}
    for k, measured, pred in data:
        groups.setdefault(k[:4] + k[5:], []).append((measured, pred, k[4]))
    print(f"{len(points)} measured points, {len(data)} predicted; groups of three schedules or more:")
    rhos, weights, regrets = [], [], []
    for g, items in sorted(groups.items()):
        if len(items) < 3:
            continue
        rho = spearman([m for m, _, _ in items], [p for _, p, _ in items])
        best_measured = min(items)[2]
        # The model's pick: where several tie for its least time (within 0.5%), the mean of their
        # measured times (a tie is broken by the order candidates are tried in, not by the model).
        least = min(p for _, p, _ in items)
        tied = [m for m, p, _ in items if p <= least * 1.005]
        regret = statistics.fmean(tied) / min(items)[0]
        rhos.append(rho)
        weights.append(len(items))
        regrets.append(regret)
        print(f"  {g[1]:<14} {g[2]:<7} {g[3]:<34} {g[4]:<4} {g[5]} n={len(items):3}  spearman {rho:+.2f}  "
              f"model's pick {regret:.2f}x the best measured")
        del best_measured
    overall = spearman([m for _, m, _ in data], [p for _, _, p in data])
    logs = pearson([math.log(m) for _, m, _ in data], [math.log(p) for _, _, p in data])
    mean_rho = sum(r * w for r, w in zip(rhos, weights)) / max(sum(weights), 1)
    print(f"loss {loss(points, keys, predicted):.4f}")
    print(f"all points: spearman {overall:+.2f}, log-log pearson {logs:+.2f}; "
          f"within groups (weighted by size): spearman {mean_rho:+.2f} over {len(rhos)} groups; the model's picks "
          f"{math.exp(statistics.fmean(math.log(r) for r in regrets or [1])):.3f}x the best measured (geometric mean)")
    if args.json:
        json.dump({"points": [{"source": k[0], "op": k[1], "target": k[2], "sizes": k[3], "knobs": k[4],
                               "dtype": k[5], "device": k[6],
                               "measured_us": m, "predicted_us": p} for k, m, p in data],
                   "spearman_all": overall, "pearson_log": logs, "spearman_groups": mean_rho},
                  open(args.json, "w"), indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
