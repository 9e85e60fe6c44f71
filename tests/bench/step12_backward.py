#!/usr/bin/env python3
"""Step 12 (issue 27): the derived attention backward on the GPU against torch's, in one process.

Emmy's `grad(sdpa)` and `grad(sdpa_causal)` (each on its auto-schedule; and `grad(sdpa) saving o, m, l`,
FlashAttention-2's inputs: the output and each row's max and sum given) are called from Python on torch CUDA tensors, every gradient element
(NaN-filled outputs) checked against float64 torch.autograd of the same attention; then each is
timed (CUDA events, L2 flushed, median) beside torch's SDPA backward on each backend that runs
(flash, cuDNN, memory-efficient) and FlexAttention's, in TFLOP/s at 2.5x the forward's FLOPs.

usage: EMMY_LIBRARY=gpu-carry/libemmy.so PYTHONPATH=python \\
         python3 tests/bench/step12_backward.py [--shape B,H,S,D ...] [--out DIR]
Skips (exit 77) without torch or a CUDA device. First run on the H200 on 2026-12-05
(tests/bench/RESULTS.md, Step 12).
"""
import argparse
import json
import math
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from fold_variants import timed  # noqa: E402  (the median of n launches, L2 flushed before each)

BLOCKS = """
schedule {op} for sm_90a where D <= 64 {{
  PLACE = fuse;
  TILE = a:mma_m16n8k16_f16/w4x1/f1x8/k4;
  STAGE = d2/cp/ring;
}}
schedule {op} for sm_90a where D <= 128 {{
  PLACE = fuse;
  TILE = a:mma_m16n8k16_f16/w4x1/f1x8/k8;
  STAGE = d2/cp/ring;
}}
"""

# The same folds on wgmma (explicit; the auto-schedule keeps such folds on mma.sync, see
# docs/auto_schedule.md): 64 x 64 tiles, d2 TMA ring, no producer warps.
WGMMA_BLOCKS = """
schedule {op} for sm_90a where D <= 64 {{
  PLACE = fuse;
  TILE = a:wgmma_m64n64k16_f16/w4x1/k4;
  STAGE = d2/tma/ring;
}}
schedule {op} for sm_90a where D <= 128 {{
  PLACE = fuse;
  TILE = a:wgmma_m64n64k16_f16/w4x1/k8;
  STAGE = d2/tma/ring;
}}
"""

# FlashAttention-2's split of the backward, given the forward's o and each row's max and sum: dq
# over query rows, dk and dv over key rows, each a fold over the other axis on the tensor cores.
SOURCE = """
import std.nn;

op sdpa_bwd = grad(sdpa);
op sdpa_causal_bwd = grad(sdpa_causal);
op sdpa_saved_bwd = grad(sdpa) saving o, m, l;
op sdpa_causal_saved_bwd = grad(sdpa_causal) saving o, m, l;
op sdpa_saved_auto_bwd = grad(sdpa) saving o, m, l;
op sdpa_causal_saved_auto_bwd = grad(sdpa_causal) saving o, m, l;
op sdpa_saved_wgmma_bwd = grad(sdpa) saving o, m, l;
op sdpa_causal_saved_wgmma_bwd = grad(sdpa_causal) saving o, m, l;
""" + "".join(b.format(op=f"sdpa{c}_saved{w}_bwd") for c in ("", "_causal")
              for (w, b) in (("", BLOCKS), ("_wgmma", WGMMA_BLOCKS)))

FIRST_CALL_CAP_S = 20.0  # a derived op slower than this a call is checked, not timed


def reference(torch, q, k, v, do, causal):
    """float64 gradients of softmax(q k^T / sqrt(D)) v, and o, m, l."""
    q64, k64, v64 = (t.double().requires_grad_() for t in (q, k, v))
    s = q64 @ k64.transpose(-1, -2) / math.sqrt(q.shape[-1])
    if causal:
        n = s.shape[-1]
        s = s.masked_fill(torch.ones(n, n, dtype=torch.bool, device=s.device).triu(1), float("-inf"))
    m = s.amax(-1)
    p = torch.exp(s - m[..., None])
    l = p.sum(-1)
    o = (p @ v64) / l[..., None]
    dq, dk, dv = torch.autograd.grad(o, (q64, k64, v64), do.double())
    return (dq, dk, dv), (o.detach(), m.detach(), l.detach())


def check(torch, name, got, want):
    """Every element within 2e-2 * max|want| + 2e-2 * |want| (f16 inputs and outputs)."""
    worst, bad = 0.0, 0
    for g, w in zip(got, want):
        g = g.double()
        bound = 2e-2 * w.abs().max() + 2e-2 * w.abs()
        err = (g - w).abs()
        bad += int(((err > bound) | torch.isnan(g)).sum())
        worst = max(worst, float(err.max()))
    return {"case": name, "max_abs_err": worst, "elements_off": bad, "ok": bad == 0}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", action="append", default=[], metavar="B,H,S,D")
    ap.add_argument("--out", default="tests/bench/results/step12")
    ap.add_argument("--no-flex", action="store_true", help="leave FlexAttention out (its compiles take minutes)")
    args = ap.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        print(f"step12_backward: SKIPPED: {e}")
        return 77
    if not torch.cuda.is_available():
        print("step12_backward: SKIPPED: no CUDA device")
        return 77
    import emmy

    shapes = [tuple(int(x) for x in s.split(",")) for s in args.shape] or [(1, 8, 1024, 64), (1, 8, 4096, 64),
                                                                           (4, 16, 4096, 128)]
    program = emmy.compile(SOURCE, name="step12_backward.emmy")
    rows = []
    for B, H, S, D in shapes:
        torch.manual_seed(0)
        q, k, v, do = (torch.randn(B, H, S, D, device="cuda", dtype=torch.float16) for _ in range(4))
        for causal in (False, True):
            flops = 2.5 * 4 * B * H * S * S * D * (0.5 if causal else 1.0)
            (want, (o64, m64, l64)) = reference(torch, q, k, v, do, causal)
            label = f"{B},{H},{S},{D}{' causal' if causal else ''}"
            saved = (o64.half(), m64.float(), l64.float())
            variants = [(f"sdpa{'_causal' if causal else ''}_saved{auto}_bwd", (q, k, v) + saved + (do,))
                        for auto in ("", "_auto", "_wgmma")]  # the blocks above; the auto-schedule
            if S <= 1024:  # the auto-schedule's (rows, recomputing the forward): slow, checked at small S only
                variants.append(("sdpa_causal_bwd" if causal else "sdpa_bwd", (q, k, v, do)))
            for opname, inputs in variants:
                op = program.op(opname)
                out = [torch.full_like(t, float("nan")) for t in (q, k, v)]
                t0 = time.perf_counter()
                op(*inputs, out=out)
                torch.cuda.synchronize()
                first_s = time.perf_counter() - t0
                row = check(torch, f"emmy {opname} {label}", out, want)
                row["knobs"] = op.knobs_at(*[tuple(t.shape) for t in inputs])  # the schedule this run took
                row["first_call_s"] = first_s
                if first_s < FIRST_CALL_CAP_S:
                    launch = op.bind(*inputs, out=out)
                    row["median_us"] = timed(torch, launch, n=5 if first_s > 1 else 20)
                    row["tflops"] = flops / row["median_us"] / 1e6
                rows.append(row)
                print(json.dumps(row), flush=True)
            # Peers: torch's SDPA backward on each backend, and FlexAttention's.
            from torch.nn.attention import SDPBackend, sdpa_kernel
            for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION, SDPBackend.EFFICIENT_ATTENTION):
                qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))
                try:
                    with sdpa_kernel(backend):
                        o = F.scaled_dot_product_attention(qg, kg, vg, is_causal=causal)
                        grads = torch.autograd.grad(o, (qg, kg, vg), do, retain_graph=True)
                        row = check(torch, f"torch {backend.name} {label}", grads, want)
                        row["median_us"] = timed(
                            torch, lambda: torch.autograd.grad(o, (qg, kg, vg), do, retain_graph=True))
                except RuntimeError as e:
                    row = {"case": f"torch {backend.name} {label}", "error": str(e).splitlines()[0]}
                if "median_us" in row:
                    row["tflops"] = flops / row["median_us"] / 1e6
                rows.append(row)
                print(json.dumps(row), flush=True)
            if args.no_flex:
                continue
            try:
                from torch.nn.attention.flex_attention import create_block_mask, flex_attention
                import torch._functorch.config as functorch_config
                functorch_config.donated_buffer = False  # its backward is timed with retain_graph=True
                flex = torch.compile(flex_attention)
                mask = create_block_mask(lambda b, h, i, j: i >= j, None, None, S, S) if causal else None
                qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))
                o = flex(qg, kg, vg, block_mask=mask)
                grads = torch.autograd.grad(o, (qg, kg, vg), do, retain_graph=True)
                row = check(torch, f"flex {label}", grads, want)
                row["median_us"] = timed(torch, lambda: torch.autograd.grad(o, (qg, kg, vg), do, retain_graph=True))
                row["tflops"] = flops / row["median_us"] / 1e6
            except Exception as e:  # FlexAttention's compile may fail on an install: say so, go on
                row = {"case": f"flex {label}", "error": f"{type(e).__name__}: {str(e).splitlines()[0]}"}
            rows.append(row)
            print(json.dumps(row), flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "step12_backward.json").write_text(json.dumps(rows, indent=1))
    failed = [r["case"] for r in rows if r.get("ok") is False]
    print(f"step12_backward: {len(rows)} rows, {len(failed)} with elements off: {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
