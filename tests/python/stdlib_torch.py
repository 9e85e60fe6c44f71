"""The stdlib ops with a float input, each with its spelling in torch and ragged input shapes:
shared by test_emmy_torch.py (Emmy's derived gradients against torch.autograd, where torch is
installed) and make_grad_golden.py (torch.autograd's gradients recorded for CI, which has none).
"""
import torch


def attention_reference(q, k, v, causal):
    s = (q.double() @ k.double().transpose(-1, -2)) / q.shape[-1] ** 0.5
    if causal:
        S = q.shape[-2]
        s = s.masked_fill(torch.ones(S, S, dtype=torch.bool, device=q.device).triu(1), float("-inf"))
    return torch.softmax(s, -1) @ v.double()


def _gelu_tanh(x):
    return 0.5 * x * (1 + torch.tanh(0.7978845608 * (x + 0.044715 * x * x * x)))  # the stdlib's constants


def _layernorm(x, g, b):
    mean = x.mean(-1)
    d = x - mean[:, None]
    rstd = torch.rsqrt((d * d).mean(-1) + 1e-5)
    return d * rstd[:, None] * g + b, mean, rstd


def _gqa(q, k, v):
    G = q.shape[1] // k.shape[1]
    return attention_reference(q, k.repeat_interleave(G, 1), v.repeat_interleave(G, 1), False)


# Every stdlib op with a float input: its torch spelling and ragged input shapes (i64 inputs: a
# tuple (shape, high) of random class indices).
STDLIB_OPS = [
    ("nn", "softmax", lambda x: torch.softmax(x, -1), [(3, 7)]),
    ("nn", "logsumexp", lambda x: torch.logsumexp(x, -1), [(3, 7)]),
    ("nn", "logsumexp_online", lambda x: torch.logsumexp(x, -1), [(3, 7)]),
    ("nn", "layernorm", _layernorm, [(3, 7), (7,), (7,)]),
    ("nn", "rmsnorm", lambda x, w: x * torch.rsqrt((x * x).mean(-1, keepdim=True) + 1e-6) * w, [(3, 7), (7,)]),
    ("nn", "gelu", _gelu_tanh, [(3, 7)]),
    ("nn", "gelu_erf", lambda x: 0.5 * x * (1 + torch.erf(x * 0.7071067812)), [(3, 7)]),
    ("nn", "silu", lambda x: x * torch.sigmoid(x), [(3, 7)]),
    ("nn", "cross_entropy", lambda lg, t: torch.nn.functional.cross_entropy(lg, t, reduction="none"),
     [(3, 7), ((3,), 7)]),
    ("nn", "cross_entropy_mean", lambda lg, t: torch.nn.functional.cross_entropy(lg, t), [(3, 7), ((3,), 7)]),
    ("nn", "sdpa", lambda q, k, v: attention_reference(q, k, v, False), [(1, 2, 3, 4), (1, 2, 5, 4), (1, 2, 5, 3)]),
    ("nn", "sdpa_causal", lambda q, k, v: attention_reference(q, k, v, True), [(1, 2, 4, 3), (1, 2, 4, 3),
                                                                               (1, 2, 4, 2)]),
    ("nn", "sdpa_gqa", _gqa, [(1, 4, 3, 3), (1, 2, 5, 3), (1, 2, 5, 2)]),
    ("nn", "sdpa_explicit", lambda q, k, v: attention_reference(q, k, v, False), [(1, 2, 3, 4), (1, 2, 5, 4),
                                                                                 (1, 2, 5, 3)]),
    ("linalg", "matmul", lambda a, b: a @ b, [(3, 5), (5, 4)]),
    ("linalg", "matmul_nt", lambda a, b: a @ b.T, [(3, 5), (4, 5)]),
    ("linalg", "bmm", torch.bmm, [(2, 3, 5), (2, 5, 4)]),
    ("linalg", "matmul_bias", lambda a, b, c: a @ b + c, [(3, 5), (5, 4), (4,)]),
    ("linalg", "matmul_bias_relu", lambda a, b, c: torch.relu(a @ b + c), [(3, 5), (5, 4), (4,)]),
    ("linalg", "matmul_bias_gelu", lambda a, b, c: _gelu_tanh(a @ b + c), [(3, 5), (5, 4), (4,)]),
    ("linalg", "matmul_bias_silu", lambda a, b, c: torch.nn.functional.silu(a @ b + c), [(3, 5), (5, 4), (4,)]),
    ("linalg", "bmm_nt_bias_relu", lambda a, w, b: torch.relu(a @ w.T + b), [(2, 3, 5), (4, 5), (4,)]),
    ("linalg", "matmul_swiglu", lambda a, g, u: torch.nn.functional.silu(a @ g) * (a @ u), [(3, 5), (5, 4), (5, 4)]),
]


def random_inputs(shapes, generator):
    """An op's inputs for STDLIB_OPS's shapes: float64 tensors that require grad, and random class
    indices for the (shape, high) pairs."""
    return [torch.randint(0, s[1], s[0], generator=generator) if isinstance(s[0], tuple) else
            torch.randn(*s, generator=generator, dtype=torch.float64).requires_grad_() for s in shapes]
