#!/usr/bin/env python3
"""examples/causal_attention.emmy's causal_self_attention (q, k, v projections, std.nn's
sdpa_causal, the output projection summed over heads and head dims) against the same block in
PyTorch (cuBLAS matmuls, SDPA with its default backend), in one process: CUDA-event medians with
the L2 flushed before each launch; every element of Emmy's output against PyTorch's float32.

    python3 tests/bench/attention_block.py --lib gpu-carry/libemmy.so --shape 4,2048,1024,16,64 \
        --schedule auto --schedule sm_90-block
"""
import argparse
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
import emmy  # noqa: E402
from fold_variants import timed  # noqa: E402 (the same timing loop: L2 flushed, CUDA events, median)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default=None)
    ap.add_argument("--shape", default="4,2048,1024,16,64", help="B,S,C,H,D")
    ap.add_argument("--schedule", action="append", default=[],
                    help="auto (the auto-schedule), sm_90-block (the file's block for sm_90), or knobs")
    args = ap.parse_args()
    if args.lib:
        emmy.load_library(args.lib)
    B, S, C, H, D = (int(v) for v in args.shape.split(","))
    gen = torch.Generator(device="cuda").manual_seed(5)
    f16 = torch.float16

    def rnd(*shape, scale=1.0):
        return (torch.randn(*shape, device="cuda", dtype=torch.float32, generator=gen) * scale).to(f16)

    x = rnd(B, S, C)
    wq, wk, wv = (rnd(C, H, D, scale=C ** -0.5) for _ in range(3))
    wo = rnd(H, D, C, scale=(H * D) ** -0.5)

    def torch_block():
        q = torch.einsum("bic,chd->bhid", x, wq)
        k = torch.einsum("bic,chd->bhid", x, wk)
        v = torch.einsum("bic,chd->bhid", x, wv)
        o = torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=True)
        return torch.einsum("bhid,hdc->bic", o, wo)

    with torch.no_grad():
        ref = torch_block().float()
        t_torch = timed(torch, torch_block)
    print(f"block B={B} S={S} C={C} H={H} D={D}: torch (cuBLAS + SDPA) {t_torch:,.1f} us")
    path = str(ROOT / "examples" / "causal_attention.emmy")
    for sched in args.schedule or ["auto"]:
        if sched == "auto":
            prog = emmy.load(path, schedule="auto")
        elif sched == "sm_90-block":
            prog = emmy.load(path, target="sm_90")
        else:
            prog = emmy.load(path, knobs=sched)
        op = prog.op("causal_self_attention")
        y = torch.full((B, S, C), float("nan"), device="cuda", dtype=f16)
        op(x, wq, wk, wv, wo, out=y)
        torch.cuda.synchronize()
        err = (y.float() - ref).abs()
        bad = int((~(err <= 2e-2 + 2e-2 * ref.abs())).sum())
        t = timed(torch, lambda: op(x, wq, wk, wv, wo, out=y), n=5 if "COOP" in sched else 20)
        print(f"  emmy [{sched}] {t:,.1f} us ({t / t_torch:.2f}x torch's time), max |err| {float(err.max()):.3g}, "
              f"{bad} of {err.numel()} elements past 2e-2 + 2e-2 |ref|")


if __name__ == "__main__":
    main()
