#!/usr/bin/env python3
"""Ops built from library calls against PyTorch in one process: examples/matmul_epilogue.emmy's mlp
(two products with bias and GELU epilogues) against cuBLAS + eager epilogues and Inductor,
examples/rmsnorm.emmy's embed_rmsnorm (a gather by token id, then RMSNorm) against eager and
Inductor, and examples/causal_attention.emmy's block kernel by kernel (torch.profiler's CUDA
activities: every kernel launched in the process, Emmy's included). CUDA-event medians, L2 flushed;
every element of Emmy's output (NaN-filled first) against PyTorch's float32.

    python3 tests/bench/library_calls.py --lib gpu-carry/libemmy.so --case mlp=4096,1024,4096 \
        --case embed=50000,8192,4096 --case block=4,2048,1024,16,64
"""
import argparse
import sys
from pathlib import Path

import torch
import torch.nn.functional as F

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
import emmy  # noqa: E402
from fold_variants import timed  # noqa: E402

GEN = None


def rnd(*shape, scale=1.0, dtype=torch.float16):
    return (torch.randn(*shape, device="cuda", dtype=torch.float32, generator=GEN) * scale).to(dtype)


def check(y, ref, tol=2e-2):
    err = (y.float() - ref.float()).abs()
    bad = int((~(err <= tol + tol * ref.float().abs())).sum())
    return f"max |err| {float(err.max()):.3g}, {bad} of {err.numel()} past {tol} + {tol} |ref|"


def compare(label, emmy_fn, y, torch_fn, ref, schedules):
    """One line a peer and a schedule: median us and the ratio to the best peer."""
    with torch.no_grad():
        comp = torch.compile(torch_fn)
        comp()
        peers = {"torch eager": timed(torch, torch_fn), "Inductor": timed(torch, comp)}
    best = min(peers.values())
    print(f"{label}: " + ", ".join(f"{k} {v:,.1f} us" for k, v in peers.items()))
    for sched in schedules:
        run = emmy_fn(sched)
        y.fill_(float("nan"))
        run()
        torch.cuda.synchronize()
        t = timed(torch, run)
        print(f"  emmy [{sched}] {t:,.1f} us = {best / t:.2f}x the best peer; {check(y, ref)}")


def load(path, sched):
    if sched == "auto":
        return emmy.load(path, schedule="auto")
    if sched.startswith("target="):
        return emmy.load(path, target=sched.split("=", 1)[1])
    return emmy.load(path, knobs=sched)


def case_mlp(dims, schedules):
    M, C, Fd = dims
    x = rnd(M, C)
    w1, b1 = rnd(C, Fd, scale=C ** -0.5), rnd(Fd)
    w2, b2 = rnd(Fd, C, scale=Fd ** -0.5), rnd(C)
    y = torch.empty(M, C, device="cuda", dtype=torch.float16)

    def torch_fn():
        return F.gelu(x @ w1 + b1, approximate="tanh") @ w2 + b2

    ref = (F.gelu(x.float() @ w1.float() + b1.float(), approximate="tanh").half().float() @ w2.float()
           + b2.float())

    def emmy_fn(sched):
        op = load(str(ROOT / "examples" / "matmul_epilogue.emmy"), sched).op("mlp")
        return lambda: op(x, w1, b1, w2, b2, out=y)

    compare(f"mlp M={M} C={C} F={Fd}", emmy_fn, y, torch_fn, ref, schedules)


def case_embed(dims, schedules):
    V, N, C = dims
    table = rnd(V, C)
    ids = torch.randint(0, V, (N,), device="cuda", dtype=torch.int32, generator=GEN)
    w = rnd(C)
    y = torch.empty(N, C, device="cuda", dtype=torch.float16)

    def torch_fn():
        x = F.embedding(ids, table).float()
        return (x * torch.rsqrt(x.pow(2).mean(-1, keepdim=True) + 1e-6) * w.float()).half()

    ref = torch_fn()

    def emmy_fn(sched):
        op = load(str(ROOT / "examples" / "rmsnorm.emmy"), sched).op("embed_rmsnorm")
        return lambda: op(table, ids, w, out=y)

    compare(f"embed_rmsnorm V={V} N={N} C={C}", emmy_fn, y, torch_fn, ref, schedules)
    moved = (2 * N * C * 2 + N * 4 + C * 2) / 1e6
    print(f"  (bytes that must move: {moved:.1f} MB)")


def case_block_profile(dims, schedules):
    """Each kernel of the attention block's schedules, from torch.profiler's CUDA activities."""
    B, S, C, H, D = dims
    x = rnd(B, S, C)
    wq, wk, wv = (rnd(C, H, D, scale=C ** -0.5) for _ in range(3))
    wo = rnd(H, D, C, scale=(H * D) ** -0.5)
    y = torch.empty(B, S, C, device="cuda", dtype=torch.float16)

    def torch_block():
        q, k, v = (torch.einsum("bic,chd->bhid", x, w) for w in (wq, wk, wv))
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        return torch.einsum("bhid,hdc->bic", o, wo)

    runs = [("torch", torch_block)]
    for sched in schedules:
        op = load(str(ROOT / "examples" / "causal_attention.emmy"), sched).op("causal_self_attention")
        runs.append((f"emmy [{sched}]", lambda op=op: op(x, wq, wk, wv, wo, out=y)))
    for label, fn in runs:
        with torch.no_grad():
            for _ in range(3):
                fn()
            torch.cuda.synchronize()
            with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CUDA]) as prof:
                for _ in range(10):
                    fn()
                torch.cuda.synchronize()
        totals = {}
        for ev in prof.events():
            if ev.device_type == torch.autograd.DeviceType.CUDA:
                totals.setdefault(ev.name, []).append(ev.device_time)
        print(f"block {dims} {label}: kernels (mean us of 10 calls)")
        for name, ts in sorted(totals.items(), key=lambda kv: -sum(kv[1])):
            print(f"    {sum(ts) / 10:9.1f}  x{len(ts) // 10:<2} {name[:110]}")


CASES = {"mlp": case_mlp, "embed": case_embed, "block": case_block_profile}


def main():
    global GEN
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default=None)
    ap.add_argument("--case", action="append", default=[], help="mlp=M,C,F | embed=V,N,C | block=B,S,C,H,D")
    ap.add_argument("--schedule", action="append", default=[],
                    help="auto, target=<T> (the file's block for T), or knobs; default: auto")
    args = ap.parse_args()
    if args.lib:
        emmy.load_library(args.lib)
    GEN = torch.Generator(device="cuda").manual_seed(7)
    for case in args.case:
        kind, dims = case.split("=")
        CASES[kind](tuple(int(v) for v in dims.split(",")), args.schedule or ["auto"])


if __name__ == "__main__":
    main()
