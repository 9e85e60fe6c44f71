#!/usr/bin/env python3
"""Step 12 (issue 27): where the derived attention backward's time goes, kernel by kernel. For each
schedule given (a knob string for `grad(sdpa) saving o, m, l`, and its causal twin) and each shape,
the op runs under torch.profiler and each kernel's mean CUDA time is printed beside the whole call's
and beside FlashAttention-2's and cuDNN's backward kernels at the same shape. Nothing is checked
here (tests/bench/step12_backward.py checks every element); this is for choosing schedules.
usage: EMMY_LIBRARY=gpu-carry/libemmy.so PYTHONPATH=python \\
         python3 tests/bench/step12_bwd_kernels.py [--shape B,H,S,D ...] [--knobs K ...] [--out DIR]
Skips (exit 77) without torch or a CUDA device.
"""
import argparse
import json
import sys
from pathlib import Path

SOURCE = """
import std.nn;
op bwd = grad(sdpa) saving o, m, l;
op bwd_causal = grad(sdpa_causal) saving o, m, l;
"""
DEFAULT_KNOBS = [
    "",  # the auto-schedule
    "PLACE=fuse,TILE=a:wgmma_m64n64k16_f16/w4x1/k8,STAGE=d2/tma/ring,FAST_EXP=1",
    "PLACE=fuse,TILE=a:mma_m16n8k16_f16/w4x1/f1x4/k8,STAGE=d2/tma/ring,FAST_EXP=1",
    # head dim 128 in one pass (value tiles of 128): no spill with 32-key blocks (ptxas, sm_90a)
    "PLACE=fuse,TILE=a:mma_m16n8k16_f16/w4x1/f1x4/k8,STAGE=d2/tma/ring,FAST_EXP=1,TILE@d=f128,TILE@e=f128",
    "PLACE=fuse,TILE=a:mma_m16n8k16_f16/w4x1/f1x4/k4,STAGE=d3/tma/ring,FAST_EXP=1,TILE@d=f128,TILE@e=f128",
]


def kernel_times(torch, fn, calls=5):
    """{kernel name: mean µs a call} of fn() under torch.profiler, after one warm call."""
    from torch.profiler import ProfilerActivity, profile
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(calls):
            fn()
        torch.cuda.synchronize()
    out = {}
    for e in prof.key_averages():
        t = getattr(e, "device_time_total", None) or getattr(e, "cuda_time_total", 0)
        if t > 0 and e.count >= calls:
            out[e.key[:60]] = t / calls
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--shape", action="append", default=[], metavar="B,H,S,D")
    ap.add_argument("--knobs", action="append", default=[])
    ap.add_argument("--out", default="tests/bench/results/step12")
    args = ap.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        print(f"step12_bwd_kernels: SKIPPED: {e}")
        return 77
    if not torch.cuda.is_available():
        print("step12_bwd_kernels: SKIPPED: no CUDA device")
        return 77
    import emmy
    from torch.nn.attention import SDPBackend, sdpa_kernel

    shapes = [tuple(int(x) for x in s.split(",")) for s in args.shape] or [(1, 8, 4096, 64), (4, 16, 4096, 128)]
    rows = []
    for B, H, S, D in shapes:
        torch.manual_seed(0)
        q, k, v, do = (torch.randn(B, H, S, D, device="cuda", dtype=torch.float16) for _ in range(4))
        for causal in (False, True):
            label = f"{B},{H},{S},{D}{' causal' if causal else ''}"
            qg, kg, vg = (t.clone().requires_grad_() for t in (q, k, v))
            o = F.scaled_dot_product_attention(qg, kg, vg, is_causal=causal)
            s = (q.float() @ k.float().transpose(-1, -2)) / D ** 0.5
            if causal:
                s = s.masked_fill(torch.ones(S, S, dtype=torch.bool, device="cuda").triu(1), float("-inf"))
            m = s.amax(-1)
            l = torch.exp(s - m[..., None]).sum(-1)
            del s
            saved = (o.detach().half(), m, l)
            for knobs in args.knobs or DEFAULT_KNOBS:
                try:
                    prog = emmy.compile(SOURCE, name="step12_bwd_kernels.emmy", knobs=knobs or None)
                    op = prog.op("bwd_causal" if causal else "bwd")
                    out = [torch.empty_like(t) for t in (q, k, v)]
                    launch = op.bind(q, k, v, *saved, do, out=out)
                    times = kernel_times(torch, launch)
                    row = {"case": f"emmy {label}", "knobs": knobs or "auto", "kernels": times,
                           "total_us": sum(times.values())}
                except Exception as e:  # a schedule that does not build at this shape: say so, go on
                    row = {"case": f"emmy {label}", "knobs": knobs or "auto", "error": str(e).splitlines()[0]}
                rows.append(row)
                print(json.dumps(row), flush=True)
            for backend in (SDPBackend.FLASH_ATTENTION, SDPBackend.CUDNN_ATTENTION):
                with sdpa_kernel(backend):
                    o2 = F.scaled_dot_product_attention(qg, kg, vg, is_causal=causal)
                    times = kernel_times(torch, lambda: torch.autograd.grad(o2, (qg, kg, vg), do, retain_graph=True))
                row = {"case": f"torch {backend.name} {label}", "kernels": times, "total_us": sum(times.values())}
                rows.append(row)
                print(json.dumps(row), flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "step12_bwd_kernels.json").write_text(json.dumps(rows, indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
