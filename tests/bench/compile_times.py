#!/usr/bin/env python3
"""Compile time of every stdlib op (issue 28): `emmyc compile FILE --op OP --ir ptx` as a whole
process, median of --repeat runs, beside its phases (`--timings`, median per phase) and ptxas
alone on the same PTX (the toolkit's ptxas binary, -v, for the same target). No GPU needed.

    python3 tests/bench/compile_times.py --emmyc build/emmyc [--target sm_90a] [--repeat 5]
        [--ops sdpa,softmax] [--ptxas /usr/local/cuda/bin/ptxas] [--json out.json]
"""
import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

FILES = ["stdlib/nn.emmy", "stdlib/linalg.emmy"]


def ops_of(emmyc, path):
    # `emmyc compile FILE --ir ptx` without --op names the file's ops in its error.
    r = subprocess.run([emmyc, "compile", path, "--ir", "kernel"], capture_output=True, text=True)
    m = re.search(r"this file defines (.*)", r.stderr)
    if not m:
        return []
    return [o.strip() for o in m.group(1).split(",")]


def timed_run(cmd):
    start = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True)
    return time.perf_counter() - start, r


def phases(stderr):
    out = {}
    for line in stderr.splitlines():
        m = re.match(r"^( +)(.+?) +([0-9.]+) s$", line)
        if m:
            out[m.group(2).strip()] = float(m.group(3))
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--emmyc", required=True)
    ap.add_argument("--target", default="sm_90a")
    ap.add_argument("--repeat", type=int, default=5)
    ap.add_argument("--ops", default="")
    ap.add_argument("--ptxas", default=os.path.join(os.environ.get("CUDA_HOME", "/usr/local/cuda"), "bin", "ptxas"))
    ap.add_argument("--json", default="")
    args = ap.parse_args()
    wanted = set(o for o in args.ops.split(",") if o)
    rows = []
    for path in FILES:
        for op in ops_of(args.emmyc, path):
            if wanted and op not in wanted:
                continue
            cmd = [args.emmyc, "compile", path, "--op", op, "--target", args.target, "--ir", "ptx"]
            walls, parts = [], []
            ptx = ""
            for _ in range(args.repeat):
                wall, r = timed_run(cmd + ["--timings"])
                if r.returncode != 0:
                    print(f"{path} {op}: emmyc failed\n{r.stderr}", file=sys.stderr)
                    break
                walls.append(wall)
                parts.append(phases(r.stderr))
                ptx = r.stdout
            if not walls:
                continue
            ptxas = []
            if ptx and os.path.exists(args.ptxas):
                with tempfile.TemporaryDirectory() as tmp:
                    src = os.path.join(tmp, "k.ptx")
                    with open(src, "w") as f:
                        f.write(ptx)
                    for _ in range(args.repeat):
                        t, r = timed_run([args.ptxas, "-v", f"-arch={args.target}", src, "-o", os.path.join(tmp, "k.cubin")])
                        if r.returncode == 0:
                            ptxas.append(t)
            row = {"file": path, "op": op, "wall": statistics.median(walls),
                   "ptxas_alone": statistics.median(ptxas) if ptxas else None}
            for name in parts[0]:
                row[name] = statistics.median(p.get(name, 0.0) for p in parts)
            rows.append(row)
            print(f"{op:28s} wall {row['wall']:.3f} s  prove {row.get('prove', 0):.3f}  load NVRTC "
                  f"{row.get('load NVRTC', 0):.3f}  front end {row.get('CUDA C++ Frontend', 0):.3f}  NVVM "
                  f"{row.get('NVVM Optimizer', 0):.3f}  ptxas (in NVRTC) {row.get('PTX Translation', 0):.3f}  "
                  f"ptxas alone {row['ptxas_alone'] or float('nan'):.3f}", flush=True)
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"target": args.target, "repeat": args.repeat, "rows": rows}, f, indent=1)


if __name__ == "__main__":
    main()
