"""Run 3's puzzle: an op whose launches take two blocks (a tiny call, then a large one through a
bound launch) timed slow on the second. Times each launch of one Op at a tiny and a large shape,
in both orders, with the warnings and the knobs each shape takes."""
import sys
import time

import torch

sys.path.insert(0, "python")
import emmy  # noqa: E402


def once(f):
    torch.cuda.synchronize()
    t = time.perf_counter()
    f()
    torch.cuda.synchronize()
    return (time.perf_counter() - t) * 1e6


lin = emmy.load("stdlib/linalg.emmy", target="sm_90a")
for order in ("tiny-first", "large-first"):
    op = lin.op("matmul")
    tiny = [torch.randn(16, 16, device="cuda", dtype=torch.float16) for _ in range(2)]
    big = [torch.randn(4096, 4096, device="cuda", dtype=torch.float16) for _ in range(2)]
    seq = [("tiny", tiny), ("large", big)] if order == "tiny-first" else [("large", big), ("tiny", tiny)]
    for name, xs in seq + seq:
        call = op.bind(*xs)
        us = [once(call) for _ in range(3)]
        err = (call.outputs[0].float() - xs[0].float() @ xs[1].float()).abs().max().item()
        print(f"{order} {name}: {['%.1f' % u for u in us]} us, err {err:.3g}, knobs {op.knobs_at(xs[0].shape, xs[1].shape)}")
    print("warnings", op.warnings)
