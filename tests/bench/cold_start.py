#!/usr/bin/env python3
"""Issue 28's cold start: in a fresh process with an empty kernel cache, the wall-clock time of
`emmy.load("stdlib/nn.emmy")`, `.op(OP)` and the op's first call on CUDA tensors (to the
synchronized result), after torch has created the CUDA context. Then the same from a warm cache
in a second process. One line per phase and run.

Usage (on the GPU machine): cold_start.py --lib gpu-carry/libemmy.so [--op sdpa] [--shape 1,8,1024,64]
  [--runs 3]
"""
import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def one(lib, op_name, shape):
    import torch
    sys.path.insert(0, str(ROOT / "python"))
    import emmy
    emmy.load_library(lib)
    b, h, s, d = (int(x) for x in shape.split(","))
    q, k, v = (torch.randn(b, h, s, d, device="cuda", dtype=torch.float16) for _ in range(3))
    torch.cuda.synchronize()
    cache = Path(os.environ["EMMY_CACHE_DIR"])
    before = len(list(cache.glob("*.manifest")))
    t0 = time.perf_counter()
    prog = emmy.load(ROOT / "stdlib/nn.emmy")
    t1 = time.perf_counter()
    op = prog.op(op_name)
    t2 = time.perf_counter()
    o = op(q, k, v)
    torch.cuda.synchronize()
    t3 = time.perf_counter()
    op(q, k, v)
    torch.cuda.synchronize()
    t4 = time.perf_counter()
    after = len(list(cache.glob("*.manifest")))
    ref = torch.nn.functional.scaled_dot_product_attention(q.float(), k.float(), v.float(),
                                                           is_causal=op_name.endswith("causal"))
    err = (o.float() - ref).abs().max().item()
    print(f"load {1e3 * (t1 - t0):.0f} ms, op {1e3 * (t2 - t1):.0f} ms, first call {1e3 * (t3 - t2):.0f} ms, "
          f"total {1e3 * (t3 - t0):.0f} ms; second call {1e3 * (t4 - t3):.1f} ms; cache entries {before} -> {after} "
          f"(max |error| {err:.2e})", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lib", required=True)
    p.add_argument("--op", default="sdpa")
    p.add_argument("--shape", default="1,8,1024,64", help="B,H,S,D")
    p.add_argument("--runs", type=int, default=3)
    p.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = p.parse_args()
    if a.child:
        return one(a.lib, a.op, a.shape)
    for r in range(a.runs):
        with tempfile.TemporaryDirectory() as cache:
            env = dict(os.environ, EMMY_CACHE_DIR=cache)
            for state in ("cold", "warm"):
                out = subprocess.run([sys.executable, __file__, "--child", "--lib", a.lib, "--op", a.op, "--shape", a.shape],
                                     env=env, capture_output=True, text=True)
                line = out.stdout.strip() or out.stderr.strip().splitlines()[-1]
                print(f"run {r + 1} {state} cache: {line}", flush=True)


if __name__ == "__main__":
    main()
