#!/usr/bin/env python3
"""Times hand-written row kernels (row_variants_probe.cu: rows held in registers, exps kept, a row
over 32-256 threads) beside Emmy's emitted kernels for the same op and shape (CUDA from `emmyc
compile --ir cuda`, optionally edited) and beside Inductor, torch eager and a copy, in one process:
which form the COOP tier should take for short rows, measured before it is built.

    python3 tests/bench/row_variants_probe.py --emmyc gpu-carry/emmyc > $OUT/probe.txt

Timing: fold_variants.timed (a 256 MB L2 flush before each launch, CUDA events around it, the
median of --reps).
Every output is NaN-filled first and compared with a float64 reference (max abs error printed)."""
import argparse
import re
import subprocess
import sys
from pathlib import Path

import cupy
import numpy as np
import torch

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
sys.path.insert(0, str(HERE))
from fold_variants import timed  # noqa: E402  (median of n launches, L2 flushed before each)


def emitted(emmyc, op, n, c, dtype, knobs):
    args = [emmyc, "compile", str(ROOT / "stdlib/nn.emmy"), "--op", op, "--target", "sm_90a", "--ir", "cuda",
            "--shape", f"N={n},C={c}"]
    args += ["--knobs", knobs] if knobs else ["--schedule", "auto"]
    if dtype == "f32":
        args += ["--dtype", "f32"]
    src = subprocess.run(args, capture_output=True, text=True, check=True).stdout
    name = re.search(r"__global__ void (?:__launch_bounds__\([^)]*\) )?(\w+)\(", src).group(1)
    block = int(re.search(r"__launch_bounds__\((\d+)", src).group(1))
    rows = re.search(r"blockIdx\.x \* (\d+)LL", src)
    return src, name, block, int(rows.group(1)) if rows else 1


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--emmyc", required=True)
    ap.add_argument("--reps", type=int, default=40)
    ap.add_argument("--cases", default="", help="comma-separated indices of the cases to run (default: all)")
    a = ap.parse_args()
    torch.manual_seed(0)
    print(torch.cuda.get_device_name(), torch.__version__, flush=True)
    mod = cupy.RawModule(code=(HERE / "row_variants_probe.cu").read_text(), options=("-std=c++17",))
    inductor = {}

    def peer(op):
        if op not in inductor:
            f = (lambda x: torch.softmax(x.float(), -1).to(x.dtype)) if op == "softmax" else \
                (lambda x, w: (x.float() * torch.rsqrt(x.float().pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).to(x.dtype))
            inductor[op] = torch.compile(f)
        return inductor[op]

    cases = [("softmax", 4097, 1000, "f16", ["sm_h_t32v8r4e", "sm_h_t64v8r2e", "sm_h_t128v8r1e"],
              ["", "COOP=t32/v8/r4,PLACE=cut,FAST_EXP=1", "COOP=t64/v8/r2,PLACE=cut,FAST_EXP=1",
               "COOP=t128/v8/r1,PLACE=cut,FAST_EXP=1"]),
             ("rmsnorm", 4097, 1000, "f16", ["rms_h_t32v8r4", "rms_h_t64v8r2", "rms_h_t128v8r1"],
              ["", "COOP=t32/v8/r4,PLACE=fuse", "COOP=t64/v8/r2,PLACE=fuse", "COOP=t128/v8/r1,PLACE=fuse"]),
             ("softmax", 4097, 1000, "f32", ["sm_f_t32v4r8e", "sm_f_t64v4r4e", "sm_f_t128v4r2e"],
              ["", "COOP=t32/v4/r8,PLACE=fuse,FAST_EXP=1", "COOP=t64/v4/r4,PLACE=fuse,FAST_EXP=1",
               "COOP=t128/v4/r2,PLACE=fuse,FAST_EXP=1"]),
             ("rmsnorm", 4097, 1000, "f32", ["rms_f_t64v4r4", "rms_f_t128v4r2"],
              ["", "COOP=t64/v4/r4,PLACE=fuse", "COOP=t128/v4/r2,PLACE=fuse"]),
             ("softmax", 32768, 8192, "f16", ["sm_h8k_t256v8r4e", "sm_h8k_t512v8r2e"],
              ["", "COOP=t256/v8/r4,PLACE=cut,FAST_EXP=1"]),
             ("softmax", 32768, 8192, "f32", ["sm_f8k_t256v4r8e", "sm_f8k_t512v4r4e"],
              ["", "COOP=t256/v4/r8,PLACE=fuse,FAST_EXP=1", "COOP=t512/v4/r4,PLACE=fuse,FAST_EXP=1"]),
             ("rmsnorm", 32768, 8192, "f16", ["rms_h8k_t256v8r4", "rms_h8k_t512v8r2"],
              ["", "COOP=t256/v8/r4,PLACE=fuse", "COOP=t512/v8/r2,PLACE=fuse"]),
             ("rmsnorm", 32768, 8192, "f32", ["rms_f8k_t512v4r4"],
              ["", "COOP=t256/v4/r8,PLACE=fuse", "COOP=t512/v4/r4,PLACE=fuse"])]
    if a.cases:
        cases = [cases[int(i)] for i in a.cases.split(",")]
    for op, n, c, dt, mine, knobs in cases:
        tdt = torch.float16 if dt == "f16" else torch.float32
        x = torch.randn(n, c, device="cuda", dtype=tdt)
        w = torch.randn(c, device="cuda", dtype=tdt)
        y = torch.empty_like(x)
        xd = x.double()
        ref = torch.softmax(xd, -1) if op == "softmax" else xd * torch.rsqrt(xd.pow(2).mean(-1, keepdim=True) + 1e-6) * w.double()
        gb = 2 * x.numel() * x.element_size() / 1e9
        cx, cy, cw = cupy.from_dlpack(x), cupy.from_dlpack(y), cupy.from_dlpack(w)

        def report(label, fn):
            y.fill_(float("nan"))
            fn()
            torch.cuda.synchronize()
            err = (y.double() - ref).abs().max().item()
            us = timed(torch, fn, a.reps)
            print(f"{op:8s} {n}x{c} {dt}  {label:48s} {us:9.1f} us  {gb / us * 1e3:6.3f} TB/s  err {err:.2e}", flush=True)

        p = peer(op)
        report("torch.compile (Inductor)", lambda: y.copy_(p(x) if op == "softmax" else p(x, w)))
        report("copy", lambda: y.copy_(x))
        for k in mine:
            tpr = int(re.search(r"_t(\d+)", k).group(1))
            block = max(128, tpr) if tpr < 256 else tpr
            rows = block // tpr
            fn = mod.get_function(k)
            grid = ((n + rows - 1) // rows,)
            if op == "softmax":
                report(f"hand {k}", lambda fn=fn, grid=grid, block=block: fn(grid, (block,), (cx, cy, np.int32(n), np.int32(c))))
            else:
                report(f"hand {k}", lambda fn=fn, grid=grid, block=block: fn(grid, (block,), (cx, cw, cy, np.int32(n), np.int32(c))))
        for kn in knobs:
            src, name, block, rows = emitted(a.emmyc, op, n, c, dt, kn)
            forms = [("", src)]
            if "__syncthreads();" in src and re.search(r"COOP=t(\d+)", src) and int(re.search(r"COOP=t(\d+)", src).group(1)) <= 32:
                forms.append((" syncwarp", src.replace("__syncthreads();", "__syncwarp();")))
            # 32-bit index arithmetic (every index of these shapes fits): the registers and
            # instructions it saves, and with them twice the CTAs an SM the launch bounds ask for.
            narrow = re.sub(r"(\d)LL\b", r"\1", src.replace("long long", "int"))
            forms.append((" i32", narrow))
            # The kernel specialized to this row length: its tests of C against the cache's
            # capacity and the vector width decided here (NVRTC drops the peeled and streamed
            # bodies), to measure what a kernel compiled for a divisibility class would save.
            def decided(t):
                t = re.sub(r"if \(C <= (\d+)(?:LL)?\)", lambda m: "if (true)" if c <= int(m.group(1)) else m.group(0), t)
                return re.sub(r"if \(C % (\d+)(?:LL)? == 0(?:LL)?\)",
                              lambda m: "if (true)" if c % int(m.group(1)) == 0 else m.group(0), t)
            if decided(src) != src:
                forms += [(" spec", decided(src)), (" spec i32", decided(narrow))]
            lb = re.search(r"__launch_bounds__\((\d+), (\d+)\)", src)
            if lb and int(lb.group(1)) * int(lb.group(2)) * 2 <= 2048:
                twice = f"__launch_bounds__({lb.group(1)}, {int(lb.group(2)) * 2})"
                forms += [(" x2", src.replace(lb.group(0), twice)), (" i32 x2", narrow.replace(lb.group(0), twice))]
            for tag, s in forms:
                fn = cupy.RawModule(code=s, options=("-std=c++17",)).get_function(name)
                grid = ((n + rows - 1) // rows,)
                args = (cx, cy) if op == "softmax" else (cx, cw, cy)
                label = f"emmy {kn or 'auto'}{tag}"
                isz = np.int32 if " i32" in tag else np.int64
                report(label[:48], lambda fn=fn, grid=grid, block=block, args=args, isz=isz:
                       fn(grid, (block,), args + (isz(n), isz(c))))


if __name__ == "__main__":
    main()
