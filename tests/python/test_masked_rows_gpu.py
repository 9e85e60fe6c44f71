#!/usr/bin/env python3
"""On the GPU machine (issue 23): rows with -inf (leading, a run over two thirds, trailing, every
third, all of them) and with a NaN, through stdlib/nn.emmy's logsumexp (two-pass and one-pass),
softmax and cross_entropy on torch CUDA tensors, under the default and every named schedule,
against torch.logsumexp, torch.softmax and F.cross_entropy. Outputs are NaN-filled before the
launch; NaN must meet NaN and an infinity the same infinity.

usage: EMMY_LIBRARY=gpu-carry/libemmy.so PYTHONPATH=python python3 tests/python/test_masked_rows_gpu.py
Skips (exit 77) without torch or a CUDA device.
"""
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def rows(torch, n, c):
    x = ((torch.arange(c).float() * 7 % 9) * 0.5 - 2.0).repeat(n, 1)
    x += torch.arange(n).float()[:, None] % 3 * 0.25
    for r in range(n):
        kind = r % 7
        if kind == 0: x[r, 0] = float("-inf")
        if kind == 1: x[r, : 2 * c // 3] = float("-inf")
        if kind == 2: x[r, c - 1] = float("-inf")
        if kind == 3: x[r, ::3] = float("-inf")
        if kind == 4: x[r, :] = float("-inf")
        if kind == 5: x[r, c // 2] = float("nan")
    return x


def same(torch, got, want, tol):
    got, want = got.double().cpu(), want.double().cpu()
    nan = torch.isnan(want)
    inf = torch.isinf(want)
    ok = torch.where(nan, torch.isnan(got), torch.where(inf, got == want, (got - want).abs() <= tol * want.abs().clamp(min=1)))
    return int((~ok).sum())


def schedules(file, op):
    names = re.findall(r"schedule %s for sm_90 as \"([^\"]+)\"" % op, (ROOT / file).read_text())
    return [None] + names


def main():
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        print(f"test_masked_rows_gpu: SKIPPED: {e}")
        return 77
    if not torch.cuda.is_available():
        print("test_masked_rows_gpu: SKIPPED: no CUDA device")
        return 77
    import emmy
    failures = runs = 0
    for n, c in [(70, 37), (700, 4099)]:
        x32 = rows(torch, n, c).cuda()
        x16 = x32.half()
        target = (torch.arange(n, device="cuda") * 5 % c).long()
        want = {
            "logsumexp": lambda: torch.logsumexp(x16.float(), dim=1),
            "logsumexp_online": lambda: torch.logsumexp(x16.float(), dim=1),
            "softmax": lambda: torch.softmax(x16.float(), dim=1),
            "cross_entropy": lambda: F.cross_entropy(x32, target, reduction="none"),
        }
        for op, ref in want.items():
            for schedule in schedules("stdlib/nn.emmy", op):
                f = emmy.load(str(ROOT / "stdlib/nn.emmy"), schedule=schedule).op(op)
                args = (x32, target) if op == "cross_entropy" else (x16,)
                r = ref()
                out = torch.full(r.shape, float("nan"), device="cuda",
                                 dtype=torch.float16 if op == "softmax" else torch.float32)
                got = f(*args, out=out)
                torch.cuda.synchronize()
                bad = same(torch, got, r, 2e-3 if op == "softmax" else 1e-4)
                runs += 1
                failures += bad > 0
                print(f"{'ok  ' if bad == 0 else 'FAIL'} {op:17} {schedule or 'default':14} N={n},C={c}: "
                      f"{bad} of {r.numel()} elements off")
    print(f"test_masked_rows_gpu: {runs} runs, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
