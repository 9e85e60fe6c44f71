"""(Run 6 adds (2,16,2048,256) and torch's cuDNN attention timed the same way beside each case.)
Issue 26's first point on the GPU: emmy.load("stdlib/nn.emmy").op("sdpa") with no schedule named,
called at head dims 64, 96, 128 and 256 (f16), and sdpa_causal at 128: the guarded stdlib blocks
choose per call; every output element (NaN-filled) against torch's float64 attention; the time by
CUDA events (median of 20 after a warm-up) and the knobs the call's sizes took."""
import math
import sys
import warnings

import torch

sys.path.insert(0, "python")
import emmy  # noqa: E402


def reference(q, k, v, causal):
    s = (q.double() @ k.double().transpose(-1, -2)) / math.sqrt(q.shape[-1])
    if causal:
        s = s.masked_fill(torch.ones_like(s, dtype=torch.bool).triu(1), float("-inf"))
    return torch.softmax(s, -1) @ v.double()


def timed(f):
    f()
    torch.cuda.synchronize()
    times = []
    for _ in range(20):
        a, b = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        a.record()
        f()
        b.record()
        torch.cuda.synchronize()
        times.append(a.elapsed_time(b) * 1000)
    return sorted(times)[len(times) // 2]


nn = emmy.load("stdlib/nn.emmy")
for op_name, (B, H, S, D) in [("sdpa", (1, 8, 1000, 64)), ("sdpa", (2, 8, 1000, 96)), ("sdpa", (4, 16, 1024, 128)),
                              ("sdpa", (1, 2, 300, 256)), ("sdpa_causal", (2, 8, 1001, 128)),
                              ("sdpa", (2, 16, 2048, 256)), ("sdpa_causal", (2, 16, 2048, 256))]:
    gen = torch.Generator(device="cuda").manual_seed(D)
    q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.float16, generator=gen) for _ in range(3))
    op = nn.op(op_name)
    out = torch.full((B, H, S, D), float("nan"), device="cuda", dtype=torch.float16)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        op(q, k, v, out=out)
        torch.cuda.synchronize()
    err = (out.double() - reference(q, k, v, op_name == "sdpa_causal")).abs().max().item()
    us = timed(lambda: op(q, k, v, out=out))
    try:
        from torch.nn.attention import SDPBackend, sdpa_kernel
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            f = lambda: torch.nn.functional.scaled_dot_product_attention(q, k, v, is_causal=op_name == "sdpa_causal")
            cudnn = f"{timed(f):.1f} us"
    except Exception as e:  # cuDNN's attention refuses some shapes
        cudnn = f"n/a ({type(e).__name__})"
    print(f"{op_name} {(B, H, S, D)}: max err {err:.3g} ({'ok' if err < 2e-2 else 'FAIL'}), {us:.1f} us, cuDNN {cudnn}, "
          f"knobs {op.knobs_at(q.shape, k.shape, v.shape)}; "
          f"warnings {[str(w.message)[:110] for w in caught] or 'none'}")
