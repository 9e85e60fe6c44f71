#!/usr/bin/env python3
"""The fixed cost of a query tile: an attention op timed at one query length S over several key
lengths T, fitted as time = waves * (a + b * key_blocks), with a the tile's cost outside its key
loop (loading Q, filling the pipeline, the epilogue) and b one key block's. cuDNN at the same shapes
for comparison. With --matmul M,N the same for stdlib/linalg.emmy's matmul: time = waves * (a + b *
K chunks) over the K lengths of --keys, cuBLAS beside it. Prints one line per variant; with --out,
the raw times as JSON.

Usage (on the GPU machine): tile_overhead.py --lib gpu-carry/libemmy.so --shape 16,16,1024,128
  [--rows 128] [--keys 128,256,512,1024,2048,4096] [--causal] [--knobs KNOBS]... [--schedule NAME]...
  tile_overhead.py --lib gpu-carry/libemmy.so --matmul 4096,4096 --rows 128 --cols 256 --block 64 \
  --keys 1024,2048,4096,8192 [--knobs KNOBS]...
"""
import argparse
import json
import sys
from pathlib import Path

import torch

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "python"))
import emmy  # noqa: E402
from fold_variants import timed  # noqa: E402  (the median of n launches, L2 flushed before each)


def time_us(fn, n=20):
    return timed(torch, fn, n)


def fit(xs, ys):
    """Least squares y = a + b x."""
    mx, my = sum(xs) / len(xs), sum(ys) / len(ys)
    b = sum((x - mx) * (y - my) for x, y in zip(xs, ys)) / sum((x - mx) ** 2 for x in xs)
    return my - b * mx, b


def variants(a):
    """The Emmy variants asked for: named blocks, then knob lists, each with its label."""
    return [("schedule " + n, dict(schedule=n)) for n in a.schedule] + [("knobs " + k, dict(knobs=k)) for k in a.knobs]


def report(label, axis, keys, ts, block, waves, what):
    """One variant's line: a and b fitted over the blocks the lengths make (the times alone for one)."""
    blocks = [-(-k // block) for k in keys]
    times = ", ".join(f"{axis}={k}: {t:.1f}" for k, t in zip(keys, ts))
    if len(set(blocks)) < 2:
        print(f"{label}: {times}", flush=True)
        return
    a0, b0 = fit(blocks, [t / waves for t in ts])
    print(f"{label}: a = {a0:.2f} us a tile, b = {b0:.3f} us a {what} ({waves} waves); {times}", flush=True)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--lib", required=True)
    p.add_argument("--shape", default="16,16,1024,128", help="B,H,S,D")
    p.add_argument("--rows", type=int, default=128, help="query rows a tile (for the wave count)")
    p.add_argument("--block", type=int, default=128, help="keys a block")
    p.add_argument("--keys", default="128,256,512,1024,2048,4096")
    p.add_argument("--causal", action="store_true")
    p.add_argument("--matmul", help="M,N: time matmul over the K lengths of --keys instead")
    p.add_argument("--cols", type=int, default=256, help="with --matmul: columns a tile")
    p.add_argument("--knobs", action="append", default=[])
    p.add_argument("--schedule", action="append", default=[])
    p.add_argument("--sms", type=int, default=132)
    p.add_argument("--out")
    a = p.parse_args()
    emmy.load_library(a.lib)
    keys = [int(t) for t in a.keys.split(",")]
    if a.matmul:
        return matmul_overhead(a, keys)
    b, h, s, d = (int(x) for x in a.shape.split(","))
    op_name = "sdpa_causal" if a.causal else "sdpa"
    tiles = b * h * -(-s // a.rows)
    waves = -(-tiles // a.sms)
    raw = {}
    torch.manual_seed(0)
    q = torch.randn(b, h, s, d, device="cuda", dtype=torch.float16)
    for label, kw in variants(a) + [("cuDNN", None)]:
        ts = []
        for t in keys:
            k = torch.randn(b, h, t, d, device="cuda", dtype=torch.float16)
            v = torch.randn(b, h, t, d, device="cuda", dtype=torch.float16)
            if kw is None:
                from torch.nn.attention import SDPBackend, sdpa_kernel
                with sdpa_kernel([SDPBackend.CUDNN_ATTENTION]):
                    fn = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=a.causal)  # noqa: E731
                    ts.append(time_us(fn))
            else:
                op = emmy.load(ROOT / "stdlib/nn.emmy", target="sm_90a", stdlib_path=str(ROOT / "stdlib"), **kw).op(op_name)
                launch = op.bind(q, k, v)
                ts.append(time_us(launch))
        raw[label] = dict(keys=keys, us=ts)
        report(label, "T", keys, ts, a.block, waves, "key block")
    if a.out:
        Path(a.out).write_text(json.dumps(dict(shape=a.shape, waves=waves, raw=raw), indent=1))


def matmul_overhead(a, keys):
    m, n = (int(x) for x in a.matmul.split(","))
    tiles = -(-m // a.rows) * -(-n // a.cols)
    waves = -(-tiles // a.sms)
    raw = {}
    torch.manual_seed(0)
    x = torch.randn(m, max(keys), device="cuda", dtype=torch.float16)
    w = torch.randn(max(keys), n, device="cuda", dtype=torch.float16)
    for label, kw in variants(a) + [("cuBLAS", None)]:
        ts = []
        for k in keys:
            xa, wb = x[:, :k].contiguous(), w[:k].contiguous()
            if kw is None:
                ts.append(time_us(lambda: torch.matmul(xa, wb)))  # noqa: B023
            else:
                op = emmy.load(ROOT / "stdlib/linalg.emmy", target="sm_90a", stdlib_path=str(ROOT / "stdlib"), **kw).op("matmul")
                ts.append(time_us(op.bind(xa, wb)))
        raw[label] = dict(keys=keys, us=ts)
        report(label, "K", keys, ts, a.block, waves, "K chunk")
    if a.out:
        Path(a.out).write_text(json.dumps(dict(matmul=a.matmul, waves=waves, raw=raw), indent=1))


if __name__ == "__main__":
    main()
