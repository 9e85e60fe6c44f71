#!/usr/bin/env python3
"""Times the tensor-core folds of tests/unit/programs/fold_variants.emmy on the GPU against their
best peer, measured in the same run, and checks every output (NaN-filled before each Emmy launch)
against a float64 PyTorch reference.

    python3 tests/bench/fold_variants.py --lib gpu-carry/libemmy.so --out $OUT/fold_variants

Shapes: B (batch x heads) = 8, S = T = 4096 (the window's S), D = E = 64. Peers: FlexAttention
(torch.nn.attention.flex_attention under torch.compile) with a score_mod for soft cap, ALiBi and
the bias, a block mask for the window, return_lse for attention with its row log-sum-exp; torch
SDPA's best backend and FlexAttention for plain attention; torch.compile (Inductor) of the eager
formula for the reductions of q k^T (max, argmax, logsumexp, max-count) and for sigmoid attention
(FlexAttention's softmax cannot express it). Where an op has several peers, results.md divides by
the first, by the fastest and by FlexAttention's.
Writes results.json and results.md to --out; prints one line a row.
"""
import argparse
import json
import math
import re
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))

B, S, D = 8, 4096, 64
WINDOW = 9  # fold_variants.emmy's window: i - 9 < j <= i
CAP = 5.0
MMA = "TILE=a:mma_m16n8k16_f16/w4x1/f2x8/k4,TILE@e=f64,STAGE=d3/cp/ring,FAST_EXP=1"
WGMMA = "TILE=a:wgmma_m64n128k16_f16/w4x1/k4,TILE@e=f64,STAGE=d2/tma/ring,FAST_EXP=1"


def timed(torch, fn, n=30):
    """Median GPU microseconds of fn over n launches, L2 flushed before each."""
    flush = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
    fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(n):
        flush.zero_()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        fn()
        e.record()
        torch.cuda.synchronize()
        times.append(s.elapsed_time(e) * 1e3)
    return statistics.median(times)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--lib", default=None)
    ap.add_argument("--out", default=str(ROOT / "tests" / "bench" / "results" / "fold_variants"))
    ap.add_argument("--only", default=None, help="run only the ops whose name matches this regex")
    args = ap.parse_args()
    import torch
    import torch._dynamo
    # One compiled flex_attention serves every score_mod and block mask: past dynamo's default
    # cache of 8 it would fall back to eager FlexAttention (milliseconds, not a peer).
    torch._dynamo.config.cache_size_limit = 256
    if hasattr(torch._dynamo.config, "accumulated_cache_size_limit"):
        torch._dynamo.config.accumulated_cache_size_limit = 4096
    import torch.nn.functional as F
    from torch.nn.attention import SDPBackend, sdpa_kernel
    from torch.nn.attention.flex_attention import create_block_mask, flex_attention
    import emmy
    if args.lib:
        emmy.load_library(args.lib)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    torch.backends.cuda.matmul.allow_tf32 = False
    gen = torch.Generator(device="cuda").manual_seed(0)
    q, k, v = (torch.randn(B, S, D, device="cuda", dtype=torch.float16, generator=gen) for _ in range(3))
    slope = torch.rand(B, device="cuda", generator=gen) * 0.1
    bias = torch.randn(B, S, S, device="cuda", dtype=torch.float16, generator=gen)
    sink = torch.randn(B, device="cuda", generator=gen)
    sinkd = sink.double()
    q4, k4, v4 = (t.unsqueeze(0) for t in (q, k, v))  # (1, B, S, D): heads = B
    flex = torch.compile(flex_attention)
    scale = 1 / math.sqrt(D)
    qd, kd, vd = q.double(), k.double(), v.double()
    s_raw = qd @ kd.transpose(1, 2)

    def softmax_ref(s, mask=None):
        if mask is not None:
            s = s.masked_fill(~mask, -math.inf)
        return torch.softmax(s, -1) @ vd

    def sink_ref():
        s = s_raw * scale
        m = torch.maximum(s.amax(-1, keepdim=True), sinkd[:, None, None])
        p = torch.exp(s - m)
        return (p @ vd) / (p.sum(-1, keepdim=True) + torch.exp(sinkd[:, None, None] - m))

    ii = torch.arange(S, device="cuda")
    win = (ii[None, :] <= ii[:, None]) & (ii[None, :] > ii[:, None] - WINDOW)
    refs = {
        "top": [s_raw.max(-1).values],
        "nearest": [s_raw.argmax(-1)],
        "top_count": [s_raw.max(-1).values, (s_raw == s_raw.max(-1, keepdim=True).values).double().sum(-1)],
        "lse": [torch.logsumexp(s_raw * scale, -1)],
        "attend_lse": [softmax_ref(s_raw * scale), torch.logsumexp(s_raw * scale, -1)],
        "sigmoid_attend": [torch.sigmoid(s_raw * scale - 4) @ vd],
        "sink_attend": [sink_ref()],
        "capped": [softmax_ref(CAP * torch.tanh(s_raw / CAP))],
        "alibi": [softmax_ref(s_raw * scale + slope.double()[:, None, None] * (ii[None, :] - ii[:, None]).double())],
        "biased": [softmax_ref(s_raw * scale + bias.double())],
        "window": [softmax_ref(s_raw * scale, win)],
        "masked_select": [softmax_ref(s_raw * scale, ii[None, :] <= ii[:, None])],
        "scaled_exp": [softmax_ref(s_raw * 0.125)],
        "exp2_attend": [softmax_ref(s_raw * scale)],
        "normalized_pv": [softmax_ref(s_raw * scale)],
        # row 0 has no key before it: its empty sum is 0
        "normalized_strict": [torch.nan_to_num(softmax_ref(s_raw * scale, ii[None, :] < ii[:, None]), nan=0.0)],
    }
    inputs = {"top": (q, k), "nearest": (q, k), "top_count": (q, k), "lse": (q, k), "attend_lse": (q, k, v), "sigmoid_attend": (q, k, v), "sink_attend": (q, k, v, sink), "capped": (q, k, v),
              "alibi": (q, k, v, slope), "biased": (q, k, v, bias), "window": (q, k, v),
              "masked_select": (q, k, v), "scaled_exp": (q, k, v), "exp2_attend": (q, k, v),
              "normalized_pv": (q, k, v), "normalized_strict": (q, k, v)}
    # 4 S T D for attention (two contractions), 2 S T D for a reduction of q k^T; the window's keys.
    work = {n: (4.0 if len(inputs[n]) >= 3 else 2.0) * B * S * S * D for n in inputs}
    work["window"] = 4.0 * B * S * WINDOW * D

    def alibi_mod(score, b, h, i, j):
        return score + slope[h] * (j - i)

    def bias_mod(score, b, h, i, j):
        return score + bias[h, i, j]

    def cap_mod(score, b, h, i, j):
        return CAP * torch.tanh(score / CAP)

    causal_mask = create_block_mask(lambda b, h, i, j: j <= i, 1, B, S, S, device="cuda")
    full_mask = create_block_mask(lambda b, h, i, j: j >= 0, 1, B, S, S, device="cuda")
    strict_mask = create_block_mask(lambda b, h, i, j: j < i, 1, B, S, S, device="cuda")
    window_mask = create_block_mask(lambda b, h, i, j: (j <= i) & (j > i - WINDOW), 1, B, S, S, device="cuda")
    compiled = {
        "top": torch.compile(lambda q, k: (q @ k.transpose(1, 2)).float().amax(-1)),
        "nearest": torch.compile(lambda q, k: (q @ k.transpose(1, 2)).float().argmax(-1)),
        "top_count": torch.compile(lambda q, k: (lambda s: (s.amax(-1), (s == s.amax(-1, keepdim=True)).float()
                                                            .sum(-1)))((q @ k.transpose(1, 2)).float())),
        "lse": torch.compile(lambda q, k: torch.logsumexp((q @ k.transpose(1, 2)).float() * scale, -1)),
        # FlexAttention has no extra score outside the keys: the sink's formula under Inductor
        "sink_attend": torch.compile(lambda q, k, v, sink: (lambda s, m: (torch.exp(s - m).half() @ v).float() / (
            torch.exp(s - m).sum(-1, keepdim=True) + torch.exp(sink[:, None, None] - m)))(
            *(lambda s: (s, torch.maximum(s.amax(-1, keepdim=True), sink[:, None, None])))(
                (q @ k.transpose(1, 2)).float() * scale))),
        # FlexAttention normalizes by a softmax: sigmoid attention is Inductor's two matmuls around it
        "sigmoid_attend": torch.compile(lambda q, k, v: torch.sigmoid((q @ k.transpose(1, 2)).float() * scale - 4)
                                        .half() @ v),
    }
    def causal_mod(score, b, h, i, j):
        return torch.where(j <= i, score, -math.inf)

    sdpa = ("SDPA (cuDNN/flash, best backend)", lambda: F.scaled_dot_product_attention(q4, k4, v4))
    flex_plain = ("FlexAttention", lambda: flex(q4, k4, v4, block_mask=full_mask))
    # Each op's peers; the first is the one its "vs peer" column divides by, the fastest is the
    # best peer, and FlexAttention's own column is there wherever it can express the op.
    peers = {
        "top": ("Inductor (torch.compile)", lambda: compiled["top"](q, k)),
        "nearest": ("Inductor (torch.compile)", lambda: compiled["nearest"](q, k)),
        "top_count": ("Inductor (torch.compile)", lambda: compiled["top_count"](q, k)),
        "lse": ("Inductor (torch.compile)", lambda: compiled["lse"](q, k)),
        "attend_lse": ("FlexAttention return_lse", lambda: flex(q4, k4, v4, return_lse=True)),
        "sigmoid_attend": ("Inductor (torch.compile)", lambda: compiled["sigmoid_attend"](q, k, v)),
        "sink_attend": ("Inductor (torch.compile)", lambda: compiled["sink_attend"](q, k, v, sink)),
        "capped": ("FlexAttention score_mod", lambda: flex(q4, k4, v4, score_mod=cap_mod, scale=1.0)),
        "alibi": ("FlexAttention score_mod", lambda: flex(q4, k4, v4, score_mod=alibi_mod)),
        "biased": ("FlexAttention score_mod", lambda: flex(q4, k4, v4, score_mod=bias_mod)),
        "window": ("FlexAttention block_mask", lambda: flex(q4, k4, v4, block_mask=window_mask)),
        # the spellings of item 5: the best peer of the same math (the causal one skips masked blocks)
        # a select with -inf computes every block (0 * inf in the masked P @ V is NaN, as written):
        # FlexAttention's score_mod is the same math, its block mask the math that skips them
        "masked_select": [("FlexAttention causal block_mask", lambda: flex(q4, k4, v4, block_mask=causal_mask)),
                          ("FlexAttention score_mod -inf", lambda: flex(q4, k4, v4, score_mod=causal_mod))],
        "scaled_exp": [sdpa, flex_plain],
        "exp2_attend": [sdpa, flex_plain],
        "normalized_pv": [sdpa, flex_plain],
        "normalized_strict": [("FlexAttention block_mask j < i", lambda: flex(q4, k4, v4, block_mask=strict_mask))],
    }
    peers = {n: p if isinstance(p, list) else [p] for n, p in peers.items()}
    rows = []

    def err(got, want):
        got = got.reshape(want.shape)
        if not got.dtype.is_floating_point:
            return float((got != want).sum())
        return float((got.double() - want).abs().max())

    def add(row):
        rows.append(row)
        print(json.dumps(row), flush=True)

    path = ROOT / "tests" / "unit" / "programs" / "fold_variants.emmy"
    only = re.compile(args.only) if args.only else None
    for name in inputs:
        if only and not only.search(name):
            continue
        row = {"op": name, "shape": f"B={B} S={S} D={D}", "work": work[name]}
        for pname, pfn in peers[name]:
            try:
                got = pfn()
                got = got if isinstance(got, tuple) else (got,)
                us = timed(torch, pfn)
                add(dict(row, backend=pname, median_us=us, tflops=work[name] / us / 1e6,
                         max_err=[err(g.squeeze(0) if g.dim() >= 3 and g.shape[0] == 1 else g, w)
                                  for g, w in zip(got, refs[name])]))
            except Exception as e:  # a peer that cannot express it
                add(dict(row, backend=pname, error=f"{type(e).__name__}: {e}"[:300]))
        for label, knobs, target in (("mma.sync", MMA, "sm_90"), ("wgmma", WGMMA, "sm_90a")):
            try:
                op = emmy.load(str(path), target=target, knobs=knobs, stdlib_path=str(ROOT / "stdlib")).op(name)
                launch = op.bind(*inputs[name])
                for o in launch.outputs:  # an element the kernels never write fails the check
                    o.fill_(math.nan if o.is_floating_point() else torch.iinfo(o.dtype).max)
                launch()
                torch.cuda.synchronize()
                errs = [err(o, w) for o, w in zip(launch.outputs, refs[name])]
                us = timed(torch, launch)
                add(dict(row, backend=f"emmy {label}", median_us=us, tflops=work[name] / us / 1e6, max_err=errs))
            except Exception as e:
                add(dict(row, backend=f"emmy {label}", error=f"{type(e).__name__}: {e}"[:300]))
    (out / "results.json").write_text(json.dumps(rows, indent=1))
    lines = ["| op | backend | median us | TFLOP/s | vs peer | vs best peer | vs FlexAttention | max err |",
             "|---|---|---|---|---|---|---|---|"]

    def ratio(peer, r):
        return f"{peer['median_us'] / r['median_us']:.2f}x" if peer and "median_us" in r else ""

    for r in rows:
        timed_peers = [p for p in rows if p["op"] == r["op"] and not p["backend"].startswith("emmy") and "median_us" in p]
        first = timed_peers[0] if timed_peers else None
        best = min(timed_peers, key=lambda p: p["median_us"]) if timed_peers else None
        flexes = [p for p in timed_peers if p["backend"].startswith("FlexAttention")]
        flex_best = min(flexes, key=lambda p: p["median_us"]) if flexes else None
        lines.append(f"| {r['op']} | {r['backend']} | {r.get('median_us', float('nan')):.1f} | "
                     f"{r.get('tflops', float('nan')):.1f} | {ratio(first, r)} | {ratio(best, r)} | "
                     f"{ratio(flex_best, r)} | {r.get('max_err', r.get('error', ''))} |")
    (out / "results.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
