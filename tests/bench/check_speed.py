#!/usr/bin/env python3
"""Times `emmyc check --explain` (parse, sema and the law prover) on each stdlib file.

Usage: tests/bench/check_speed.py build/emmyc [RUNS]
Prints one line per file: median and max wall time over RUNS runs (default 11).
"""
import statistics
import subprocess
import sys
import time
from pathlib import Path

emmyc = sys.argv[1]
runs = int(sys.argv[2]) if len(sys.argv) > 2 else 11
for f in sorted((Path(__file__).resolve().parents[2] / "stdlib").glob("*.emmy")):
    times = []
    for _ in range(runs):
        t = time.perf_counter()
        r = subprocess.run([emmyc, "check", "--explain", str(f)], capture_output=True)
        times.append(time.perf_counter() - t)
        if r.returncode != 0:
            sys.exit(f"{f.name}: emmyc check failed\n{r.stderr.decode()}")
    print(f"{f.name}: median {statistics.median(times) * 1000:.1f} ms, max {max(times) * 1000:.1f} ms ({runs} runs)")
