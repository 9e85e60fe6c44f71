#!/usr/bin/env python3
"""Step 12 (issue 27): a small transformer trained for 200 steps with Emmy's ops and with
PyTorch's, from the same initial weights on the same batches: the loss curves and the step time.

The model: token embedding, L blocks of x += attn(rmsnorm(x)) and x += mlp(rmsnorm(x)) (causal
attention over H heads of D, an MLP of F with GELU (tanh)), a final RMSNorm and the vocabulary
head. In the Emmy run, every op of the blocks is an Emmy op through emmy.torch (RMSNorm,
matmul + bias, GELU, causal attention returning its row statistics), each with its backward
derived by `grad` (attention's: `grad(sdpa_causal) saving o, m, l`); embedding, head and loss stay
torch's in both. Weights are float32 masters cast to f16 for the blocks; a static loss scale.
The task: token t+1 is (token t + token t-3) mod V, so attention must look back (the loss falls
from ln V towards 0 only if it learns to).

Before training, one step of each model from the same weights: every weight's gradient compared
(relative L2). usage (GPU machine, after scripts/gpu_stage.sh):

    EMMY_LIBRARY=gpu-carry/libemmy.so PYTHONPATH=python python3 tests/bench/step12_train.py \\
        [--steps 200] [--out DIR]

Exits 77 without torch or a CUDA device.
"""
import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path

SOURCE = """
import std.nn;
import std.linalg;

op attend_causal(q: f16[B, H, S, D], k: f16[B, H, S, D], v: f16[B, H, S, E]) -> (o: f16[B, H, S, E], m: f32[B, H, S], l: f32[B, H, S]) {
  s[b, h, i, j] = sum(d: q[b, h, i, d] * k[b, h, j, d]) * (1.0 / sqrt(D));
  m[b, h, i] = max(j where j <= i: s[b, h, i, j]);
  p[b, h, i, j] = exp(s[b, h, i, j] - m[b, h, i]);
  l[b, h, i] = sum(j where j <= i: p[b, h, i, j]);
  o[b, h, i, e] = sum(j where j <= i: p[b, h, i, j] * v[b, h, j, e]) / l[b, h, i];
}

op attend_causal_bwd = grad(sdpa_causal) saving o, m, l;
"""


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=200)
    ap.add_argument("--batch", type=int, default=8)
    ap.add_argument("--seq", type=int, default=256)
    ap.add_argument("--out", default="tests/bench/results/step12")
    args = ap.parse_args()
    try:
        import torch
        import torch.nn.functional as F
    except ImportError as e:
        print(f"step12_train: SKIPPED: {e}")
        return 77
    if not torch.cuda.is_available():
        print("step12_train: SKIPPED: no CUDA device")
        return 77
    import emmy
    import emmy.torch

    V, C, H, L, Fdim = 512, 256, 4, 2, 1024
    D = C // H
    B, S = args.batch, args.seq
    dev = "cuda"

    prog = emmy.compile(SOURCE, name="step12_train.emmy")
    ops = {
        "rmsnorm": emmy.torch.custom_op(prog, "rmsnorm", torch_name="train_rmsnorm"),
        "linear": emmy.torch.custom_op(prog, "matmul_bias", torch_name="train_matmul_bias"),
        "gelu": emmy.torch.custom_op(prog, "gelu", torch_name="train_gelu"),
        "attend": emmy.torch.custom_op(prog, "attend_causal", backward="attend_causal_bwd",
                                       torch_name="train_attend_causal"),
    }

    def init_weights(seed):
        g = torch.Generator().manual_seed(seed)
        w = lambda *s, scale: (torch.randn(*s, generator=g) * scale).to(dev).requires_grad_()
        params = {"embed": w(V, C, scale=0.02), "head": w(C, V, scale=C ** -0.5), "norm_f": w(C, scale=0)}
        with torch.no_grad():
            params["norm_f"].fill_(1.0)
        for i in range(L):
            params.update({
                f"n1.{i}": w(C, scale=0), f"n2.{i}": w(C, scale=0),
                f"wqkv.{i}": w(C, 3 * C, scale=C ** -0.5), f"bqkv.{i}": w(3 * C, scale=0),
                f"wo.{i}": w(C, C, scale=(2 * L * C) ** -0.5), f"bo.{i}": w(C, scale=0),
                f"w1.{i}": w(C, Fdim, scale=C ** -0.5), f"b1.{i}": w(Fdim, scale=0),
                f"w2.{i}": w(Fdim, C, scale=(2 * L * Fdim) ** -0.5), f"b2.{i}": w(C, scale=0)})
            with torch.no_grad():
                params[f"n1.{i}"].fill_(1.0), params[f"n2.{i}"].fill_(1.0)
        return params

    def heads(t):  # [B*S, C] -> [B, H, S, D]
        return t.view(B, S, H, D).transpose(1, 2).contiguous()

    def unheads(t):
        return t.transpose(1, 2).reshape(B * S, C)

    def block_emmy(x, p, i):
        h = ops["rmsnorm"](x, p[f"n1.{i}"].half())
        qkv = ops["linear"](h, p[f"wqkv.{i}"].half(), p[f"bqkv.{i}"].half())
        q, k, v = (heads(t) for t in qkv.split(C, dim=1))
        o, _, _ = ops["attend"](q, k, v)
        x = x + ops["linear"](unheads(o), p[f"wo.{i}"].half(), p[f"bo.{i}"].half())
        h = ops["rmsnorm"](x, p[f"n2.{i}"].half())
        u = ops["gelu"](ops["linear"](h, p[f"w1.{i}"].half(), p[f"b1.{i}"].half()))
        return x + ops["linear"](u, p[f"w2.{i}"].half(), p[f"b2.{i}"].half())

    def block_torch(x, p, i):
        h = F.rms_norm(x, (C,), p[f"n1.{i}"].half(), eps=1e-6)
        qkv = h @ p[f"wqkv.{i}"].half() + p[f"bqkv.{i}"].half()
        q, k, v = (heads(t) for t in qkv.split(C, dim=1))
        o = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + unheads(o) @ p[f"wo.{i}"].half() + p[f"bo.{i}"].half()
        h = F.rms_norm(x, (C,), p[f"n2.{i}"].half(), eps=1e-6)
        u = F.gelu(h @ p[f"w1.{i}"].half() + p[f"b1.{i}"].half(), approximate="tanh")
        return x + u @ p[f"w2.{i}"].half() + p[f"b2.{i}"].half()

    def loss_of(block, p, tokens, targets):
        x = p["embed"][tokens.view(-1)].half()
        for i in range(L):
            x = block(x, p, i)
        x = F.rms_norm(x.float(), (C,), p["norm_f"], eps=1e-6)
        return F.cross_entropy(x @ p["head"], targets.view(-1))

    def batch(g):
        tokens = torch.randint(0, V, (B, S + 3), generator=g)
        targets = (tokens[:, 3:] + tokens[:, :-3]) % V  # token t+1 from tokens t and t-3
        return tokens[:, 3:].to(dev), targets.to(dev)

    # One step from the same weights: the gradients of both models.
    rows = []
    p_e, p_t = init_weights(1), init_weights(1)
    tokens, targets = batch(torch.Generator().manual_seed(7))
    loss_e, loss_t = loss_of(block_emmy, p_e, tokens, targets), loss_of(block_torch, p_t, tokens, targets)
    g_e = torch.autograd.grad(loss_e, list(p_e.values()))
    g_t = torch.autograd.grad(loss_t, list(p_t.values()))
    worst = 0.0
    for name, a, b in zip(p_e, g_e, g_t):
        rel = ((a - b).norm() / b.norm().clamp_min(1e-30)).item()
        worst = max(worst, rel)
        rows.append({"case": f"gradient {name}", "rel_l2": rel, "finite": bool(torch.isfinite(a).all())})
    print(f"step12_train: one step from the same weights: loss emmy {loss_e.item():.6f} torch {loss_t.item():.6f}; "
          f"worst gradient relative L2 {worst:.3e}", flush=True)

    curves, times = {}, {}
    for name, block in (("emmy", block_emmy), ("torch", block_torch)):
        p = init_weights(1)
        opt = torch.optim.AdamW(p.values(), lr=3e-3, weight_decay=0.0)
        g = torch.Generator().manual_seed(11)
        scale = 1024.0
        curve, step_ms = [], []
        for step in range(args.steps):
            tokens, targets = batch(g)
            torch.cuda.synchronize()
            t0 = time.perf_counter()
            loss = loss_of(block, p, tokens, targets)
            opt.zero_grad(set_to_none=True)
            (loss * scale).backward()
            for t in p.values():
                t.grad.div_(scale)
            opt.step()
            torch.cuda.synchronize()
            step_ms.append((time.perf_counter() - t0) * 1e3)
            curve.append(loss.item())
            if step % 25 == 0 or step == args.steps - 1:
                print(f"{name} step {step:4d} loss {curve[-1]:.4f} ({step_ms[-1]:.2f} ms)", flush=True)
        curves[name] = curve
        times[name] = statistics.median(step_ms[10:]) if len(step_ms) > 10 else statistics.median(step_ms)
    for name in curves:
        finite = all(math.isfinite(x) for x in curves[name])
        rows.append({"case": f"train {name}", "first_loss": curves[name][0], "last_loss": curves[name][-1],
                     "median_step_ms": times[name], "finite": finite})
        print(json.dumps(rows[-1]), flush=True)
    # The acceptance: Emmy's loss within 1% of PyTorch's at every step (same weights, same batches).
    step_rel = [abs(a - b) / abs(b) for a, b in zip(curves["emmy"], curves["torch"])]
    worst_step = max(range(len(step_rel)), key=step_rel.__getitem__)
    rows.append({"case": "loss emmy vs torch", "worst_step": worst_step, "worst_rel": step_rel[worst_step],
                 "steps_over_1pct": sum(r > 0.01 for r in step_rel)})
    print(json.dumps(rows[-1]), flush=True)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "step12_train.json").write_text(json.dumps({"rows": rows, "curves": curves}, indent=1))
    ok = worst < 5e-2 and all(r.get("finite", True) for r in rows) and step_rel[worst_step] <= 0.01
    print(f"step12_train: median step emmy {times['emmy']:.2f} ms, torch {times['torch']:.2f} ms "
          f"(emmy / torch {times['emmy'] / times['torch']:.2f}); final loss emmy {curves['emmy'][-1]:.4f}, "
          f"torch {curves['torch'][-1]:.4f}; {'ok' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
