#!/usr/bin/env python3
"""Emmy against its peers on one GPU, in one process and one run.

    python3 tests/bench/harness.py --lib build/libemmy.so          # the full run (about 5-8 min on an H200)
    python3 tests/bench/harness.py --lib build/libemmy.so --quick  # a smoke run (under a minute)
    python3 tests/bench/harness.py --lib build/libemmy.so --only 'decode' \
        --knobs 'sdpa=PLACE=fuse,TILE=a:mma_m16n8k16_f16/w1x1/f1x8/k8,TILE@e=f128,REDUCE=g8k'  # a knob sweep

What runs, per case (shapes below):
  sdpa     PyTorch SDPA with each backend forced through torch.nn.attention.sdpa_kernel
           (FLASH_ATTENTION = FA-2, CUDNN_ATTENTION, EFFICIENT_ATTENTION), the Triton
           flash-attention forward kernel of this file (FA-2 style, autotuned over a few
           configs), and Emmy: stdlib/nn.emmy's sdpa under its default schedule and every named
           one ("fa1-scalar", "scalar-baseline", ...); causal cases run nn.emmy's sdpa_causal
           (its schedule, and the FA-1 knobs TILE=a:scalar,TILE@e=f64) and causal_select of
           examples/causal_attention.emmy.
  sdpa_bf16  the same peers in bf16 at head dims 96 and 256 (BF16_SDPA_SHAPES, causal and not) against
           examples/attention_variants.emmy's sdpa_bf16 and sdpa_causal_bf16 (at head dim 256 only its
           "hd256..." blocks); the Triton kernel only at power-of-two head dims.
  gqa      SDPA with enable_gqa (torch's default, FA-2 and cuDNN backends) against std.nn's sdpa_gqa;
           causal (GQA_CAUSAL_SHAPES) against examples/attention_variants.emmy's sdpa_gqa_causal.
  softmax / layernorm / rmsnorm   torch.softmax, F.layer_norm, F.rms_norm vs nn.emmy's ops.
  matmul   torch.matmul (cuBLAS) vs stdlib/linalg.emmy's matmul under each of its schedules.

Timing: this file's own loop (not triton.testing.do_bench): a 256 MB buffer is zeroed before
every launch (flushing the 50 MB L2), CUDA events around each launch, the median of many
launches after a warm-up call. Emmy goes through python/emmy (ctypes over libemmy's C ABI) on
the same torch tensors, launched on torch's current stream; its first launch (NVRTC compile
into a fresh cache directory) happens on tiny tensors before timing.

Emmy's scalar-tier kernels are slow (tens of ms to seconds), so every Emmy measurement is
capped: the launch time of a case is predicted from the variant's time per FLOP (or byte) on
the previous, smaller case, and a case predicted above --emmy-launch-cap seconds is skipped
with a note; one launch above 1 s is reported alone, above 0.25 s as the median of three;
each op family has an Emmy time budget, and the whole run a deadline after which Emmy cases
are skipped.

Every output (Emmy and peers) is checked element by element against a float32 computation by
torch on the same inputs (TF32 off): |out - ref| <= atol + rtol |ref|, and finite; Emmy's
outputs are NaN-filled before the checked launch, so an element never written fails. A case that
raises is recorded as a row with the error; the run goes on. Results go to --out
(tests/bench/results/ by default): results.md, results.json and throughput.png, rewritten
after every case.
"""
import argparse
import contextlib
import datetime
import hashlib
import json
import math
import os
import platform
import re
import statistics
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# ---- shapes ----------------------------------------------------------------------------------

# (B, H, S, D), from ../shared/perf/H200-ANCHORS.md; E = D and T = S.
SDPA_ANCHORS = [(1, 8, 4096, 64), (4, 16, 4096, 64), (4, 16, 4096, 128), (2, 16, 8192, 128), (16, 16, 1024, 128)]
SDPA_RAGGED = [(1, 8, 1000, 64), (1, 8, 4097, 64)]
ROW_SHAPES = [(32768, 8192), (4097, 1000)]
MATMUL_SHAPES = [(4096, 4096, 4096), (8192, 8192, 8192), (1000, 777, 1023)]  # (M, N, K)
GEMM_EPILOGUE_SHAPES = [(8192, 8192, 4096)]  # GEMM + bias + GELU at an LLM MLP shape (issue 25)
# Decode: one query row against a long KV cache, (B, H, T, D) with S = 1 (split-KV's case).
DECODE_SHAPES = [(8, 32, 16384, 128)]
GQA_SHAPES = [(2, 32, 4, 2048, 128)]  # (B, H query heads, KH key/value heads, S, D): issue 25's row, not causal
GQA_CAUSAL_SHAPES = [(2, 32, 4, 2048, 128)]  # the same row, causal (issue 25)
# bf16 attention at head dims 96 and 256 (issue 25), (B, H, S, D) with E = D and T = S; each causal and not.
BF16_SDPA_SHAPES = [(2, 16, 2048, 96), (2, 16, 2048, 256)]
# Emmy's portable targets: a "[default]" row runs the device's (sm_90 on an H200) by name, since
# emmy.load without a target picks the arch-specific one (sm_90a), whose rows are labelled so.
PORTABLE_TARGETS = ("sm_80", "sm_90", "sm_120")

# A reference NaN or infinite in more than this fraction of its elements fails the check
# (src/interp/compare.hpp's kMaxNonFiniteReference, the same rule).
REF_NON_FINITE_MAX = 0.01

# (atol, rtol) per output, for f16 outputs unless noted.
# sdpa_bf16: bf16 outputs (and P rounded to bf16 for P @ V); bf16 keeps 8 significand bits to f16's
# 11, so its unit roundoff is 8x f16's, and so are both of sdpa's bounds.
TOL = {"sdpa": [(5e-3, 2e-2)], "sdpa_bf16": [(4e-2, 1.6e-1)], "softmax": [(1e-6, 5e-3)], "rmsnorm": [(2e-3, 5e-3)],
       "layernorm": [(2e-3, 5e-3), (1e-5, 1e-4), (1e-5, 1e-4)]}  # layernorm: y, mean (f32), rstd (f32)

PEER_BUDGET_S = 0.25      # launch time per peer measurement
EMMY_CASE_BUDGET_S = 1.0  # launch time per Emmy measurement (after its first timed launch)
EMMY_KNOB_BUDGET_S = 4.0   # more launch time for a family per --knobs variant of its (a sweep's rows are not
                           # skipped once the defaults' share is spent)
EMMY_FAMILY_BUDGET_S = {"sdpa": 150.0, "decode": 30.0, "gqa": 30.0, "softmax": 15.0, "layernorm": 15.0, "rmsnorm": 15.0,
                        "matmul": 40.0, "matmul_bias_gelu": 20.0, "sdpa_bf16": 40.0}

# ---- Triton: a compact FA-2-style forward kernel (disabled, with a note, if Triton is missing) --

TRITON_ERROR = None
try:
    import triton
    import triton.language as tl

    @triton.jit
    def _fa_step(acc, l_i, m_i, q, k_base, v_base, stride_kn, stride_vn, start_n, offs_m, offs_n, offs_d, S,
                 qk_scale, MASK_CAUSAL: tl.constexpr, MASK_TAIL: tl.constexpr):
        # One key block: scores, the online-softmax update of (m, l), and acc += P @ V.
        cols = start_n + offs_n
        k_ptrs = k_base + cols[None, :] * stride_kn + offs_d[:, None]  # K^T tile [HEAD_DIM, BLOCK_N]
        v_ptrs = v_base + cols[:, None] * stride_vn + offs_d[None, :]  # V tile [BLOCK_N, HEAD_DIM]
        if MASK_TAIL:
            k = tl.load(k_ptrs, mask=cols[None, :] < S, other=0.0)
            v = tl.load(v_ptrs, mask=cols[:, None] < S, other=0.0)
        else:
            k = tl.load(k_ptrs)
            v = tl.load(v_ptrs)
        qk = tl.dot(q, k) * qk_scale  # log2-scaled scores, f32
        if MASK_CAUSAL:
            qk = tl.where(offs_m[:, None] >= cols[None, :], qk, float("-inf"))
        if MASK_TAIL:
            qk = tl.where(cols[None, :] < S, qk, float("-inf"))
        m_new = tl.maximum(m_i, tl.max(qk, 1))
        alpha = tl.math.exp2(m_i - m_new)
        p = tl.math.exp2(qk - m_new[:, None])
        l_i = l_i * alpha + tl.sum(p, 1)
        acc = acc * alpha[:, None]
        acc = tl.dot(p.to(v.dtype), v, acc)
        return acc, l_i, m_new

    @triton.jit
    def _fa_fwd(Q, K, V, O, qk_scale, S, H,
                sqb, sqh, sqs, skb, skh, sks, svb, svh, svs, sob, soh, sos,
                HEAD_DIM: tl.constexpr, CAUSAL: tl.constexpr, EVEN: tl.constexpr, RAGGED: tl.constexpr,
                BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr):
        # One program: BLOCK_M query rows of one (batch, head); K and V streamed in BLOCK_N
        # blocks; row max and denominator in f32 registers (FA-2: one pass, rescaled acc).
        pid_m = tl.program_id(0)
        pid_bh = tl.program_id(1)
        b = (pid_bh // H).to(tl.int64)
        h = (pid_bh % H).to(tl.int64)
        q_base = Q + b * sqb + h * sqh
        k_base = K + b * skb + h * skh
        v_base = V + b * svb + h * svh
        o_base = O + b * sob + h * soh
        offs_m = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
        offs_n = tl.arange(0, BLOCK_N)
        offs_d = tl.arange(0, HEAD_DIM)
        q_ptrs = q_base + offs_m[:, None] * sqs + offs_d[None, :]
        if EVEN:
            q = tl.load(q_ptrs)
        else:
            q = tl.load(q_ptrs, mask=offs_m[:, None] < S, other=0.0)
        m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)
        l_i = tl.zeros([BLOCK_M], dtype=tl.float32)
        acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)
        if CAUSAL:
            lo = pid_m * BLOCK_M  # key blocks wholly below the diagonal: no mask
            hi = tl.minimum(lo + BLOCK_M, S)
        else:
            lo = (S // BLOCK_N) * BLOCK_N  # whole key blocks: no mask
            hi = S
        for start_n in range(0, lo, BLOCK_N):
            start_n = tl.multiple_of(start_n, BLOCK_N)
            acc, l_i, m_i = _fa_step(acc, l_i, m_i, q, k_base, v_base, sks, svs, start_n, offs_m, offs_n, offs_d, S,
                                     qk_scale, False, False)
        for start_n in range(lo, hi, BLOCK_N):  # the diagonal (causal) or the ragged tail
            acc, l_i, m_i = _fa_step(acc, l_i, m_i, q, k_base, v_base, sks, svs, start_n, offs_m, offs_n, offs_d, S,
                                     qk_scale, CAUSAL, RAGGED)
        acc = acc / l_i[:, None]
        o_ptrs = o_base + offs_m[:, None] * sos + offs_d[None, :]
        if EVEN:
            tl.store(o_ptrs, acc.to(O.dtype.element_ty))
        else:
            tl.store(o_ptrs, acc.to(O.dtype.element_ty), mask=offs_m[:, None] < S)

    # BLOCK_M >= BLOCK_N, BLOCK_N divides BLOCK_M, and both divide 128 (EVEN is S % 128 == 0).
    TRITON_CONFIGS = [((128, 64), 4, 3), ((128, 64), 8, 3), ((128, 128), 8, 2), ((64, 64), 4, 3), ((128, 32), 4, 4)]
except Exception as e:  # ImportError, or a Triton whose API this kernel does not fit
    triton = None
    TRITON_ERROR = f"{type(e).__name__}: {e}"


def make_triton_attention(quick):
    """The autotuned kernel and its launcher (quick: two configs)."""
    configs = [triton.Config({"BLOCK_M": m, "BLOCK_N": n}, num_warps=w, num_stages=s)
               for (m, n), w, s in TRITON_CONFIGS[:2 if quick else None]]
    kernel = triton.autotune(configs=configs, key=["S", "HEAD_DIM", "CAUSAL"])(_fa_fwd)

    def attention(q, k, v, causal, out=None):
        B, H, S, D = q.shape
        o = torch.empty_like(q) if out is None else out
        even = S % 128 == 0
        grid = lambda meta: (triton.cdiv(S, meta["BLOCK_M"]), B * H)
        kernel[grid](q, k, v, o, 1.4426950408889634 / math.sqrt(D), S, H,
                     q.stride(0), q.stride(1), q.stride(2), k.stride(0), k.stride(1), k.stride(2),
                     v.stride(0), v.stride(1), v.stride(2), o.stride(0), o.stride(1), o.stride(2),
                     HEAD_DIM=D, CAUSAL=causal, EVEN=even, RAGGED=not even)
        return o

    return attention


torch = None  # imported in main(), so that --help works anywhere
F = None


def gpu_identity():
    """The GPU's UUID, VBIOS, power limit and clocks (nvidia-smi): device calls may land on
    different boards, and a clock-bound kernel's ratio to a power-capped peer differs by board."""
    fields = "uuid,vbios_version,power.limit,clocks.max.sm,clocks.sm,temperature.gpu"
    try:
        out = subprocess.run(["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader", "-i",
                              str(torch.cuda.current_device())], capture_output=True, text=True, timeout=20).stdout
        return dict(zip(fields.split(","), (v.strip() for v in out.strip().split(","))))
    except (OSError, subprocess.SubprocessError) as e:
        return {"error": str(e)}


# ---- timing ----------------------------------------------------------------------------------


class Timer:
    """CUDA events around each launch, a 256 MB buffer zeroed before each (L2 flush). With
    flush="clean" the buffer is read instead (a sum): the L2 is then left holding clean lines, so a
    short kernel's own traffic is timed without the write-back of the flush's dirty lines that each
    line it brings in evicts (which holds every form of a short row at one time: RESULTS.md,
    2026-12-07, "the short rows' instructions")."""

    def __init__(self, flush="dirty"):
        self.buf = torch.empty(256 << 20, dtype=torch.int8, device="cuda")
        self.buf.zero_()
        self.words = self.buf.view(torch.int64)
        self.flush = self.buf.zero_ if flush == "dirty" else lambda: self.words.sum()
        torch.cuda.synchronize()
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        for _ in range(10):
            self.flush()
        e.record()
        torch.cuda.synchronize()
        self.flush_us = s.elapsed_time(e) * 1e3 / 10

    def run(self, fn, n):
        """GPU µs of each launch; the host's µs to enqueue each (self.host_us): a launch path
        slower than the flush lets the GPU idle inside the timed window."""
        events = [(torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)) for _ in range(n)]
        self.host_us = []
        for s, e in events:
            self.flush()
            s.record()
            t0 = time.perf_counter()
            fn()
            self.host_us.append((time.perf_counter() - t0) * 1e6)
            e.record()
        torch.cuda.synchronize()
        return [s.elapsed_time(e) * 1e3 for s, e in events]  # µs

    def summary(self, times):
        return dict(summary(times), host_us=statistics.median(self.host_us))


def summary(times):
    return {"median_us": statistics.median(times), "min_us": min(times), "n": len(times)}


# ---- checks ----------------------------------------------------------------------------------


def check(outs, refs, tols):
    """Element-wise, for each output: |out - ref| <= atol + rtol |ref| where the reference is
    finite (and the output finite there); NaN where the reference is NaN, the same infinity where
    it is infinite. The reference itself must be finite in all but REF_NON_FINITE_MAX of the
    elements, else the check fails (the inputs would test nothing). Reports the worst element."""
    if not isinstance(outs, (tuple, list)):
        outs = (outs,)
    ok, per, why = True, [], []
    for n, (o, r, (atol, rtol)) in enumerate(zip(outs, refs, tols)):
        o32 = o.float()
        finite_ref = torch.isfinite(r)
        d = torch.where(finite_ref, (o32 - r).abs(), torch.zeros_like(r))
        d = torch.where(finite_ref & ~torch.isfinite(o32), torch.full_like(r, math.inf), d)
        same_special = (torch.isnan(r) & torch.isnan(o32)) | (torch.isinf(r) & (o32 == r))
        d = torch.where(~finite_ref & ~same_special, torch.full_like(r, math.inf), d)
        bad = d > atol + rtol * r.abs().nan_to_num(posinf=0.0)
        off = int(bad.sum())
        err = float(d.max()) if d.numel() else 0.0
        per.append(err)
        ref_bad = int((~finite_ref).sum())
        if ref_bad > REF_NON_FINITE_MAX * max(r.numel(), 1):
            why.append(f"output {n}: the reference is NaN or infinite in {100.0 * ref_bad / r.numel():.3g}% "
                       f"of the elements (at most {100 * REF_NON_FINITE_MAX:g}%): the inputs check nothing")
            ok = False
        if off:
            excess = d / (atol + rtol * r.abs().nan_to_num(posinf=0.0))
            flat = int(torch.nan_to_num(excess, nan=math.inf).flatten().argmax())
            index, rest = [], flat
            for extent in reversed(r.shape):
                index.insert(0, rest % extent)
                rest //= extent
            why.append(f"output {n}: {off} of {r.numel()} elements off, worst {index}: "
                       f"got {float(o32.flatten()[flat]):.6g}, want {float(r.flatten()[flat]):.6g}")
            ok = False
    row = {"max_abs_err": per[0] if per else None, "max_abs_err_all": per, "pass": ok}
    if why:
        row["check_failure"] = "; ".join(why)
    return row


def nan_filled(tensors):
    """Fills output tensors before a checked launch: NaN for floats, 0x7f.. for integers, so an
    element the kernels never write fails the check (torch.empty may hold the right answer)."""
    for t in tensors:
        t.fill_(math.nan if t.is_floating_point() else torch.iinfo(t.dtype).max)
    return tensors


def sdpa_reference(q, k, v, causal):
    """softmax(q k^T / sqrt(D)) v in float32 (f16 or bf16 inputs, widened exactly), a few heads at a
    time (scores <= ~2 GB)."""
    B, H, S, D = q.shape
    T = k.shape[2]
    qf, kf, vf = (t.float().reshape(B * H, t.shape[2], t.shape[3]) for t in (q, k, v))
    out = torch.empty(B * H, S, v.shape[3], dtype=torch.float32, device=q.device)
    step = max(1, (2 << 30) // (S * T * 4))
    mask = torch.ones(S, T, dtype=torch.bool, device=q.device).tril() if causal else None
    for i in range(0, B * H, step):
        s = torch.matmul(qf[i:i + step], kf[i:i + step].transpose(1, 2)) / math.sqrt(D)
        if mask is not None:
            s = s.masked_fill(~mask, float("-inf"))
        out[i:i + step] = torch.matmul(torch.softmax(s, dim=-1), vf[i:i + step])
        del s
    return out.reshape(B, H, S, v.shape[3])


# ---- Emmy ------------------------------------------------------------------------------------


def named_schedules(path, op, device_target):
    """(label, target) of `op`'s schedule blocks in an .emmy file, in order: the named ones of every
    target, and the unnamed one of a target other than `device_target` (what emmy.load picks on this
    GPU, whose unnamed block is the plain variant). The target is None for the device's own."""
    found = []
    for m in re.finditer(r'^schedule\s+(\w+)\s+for\s+(\w+)(?:\s+as\s+"([^"]+)")?', Path(path).read_text(), re.M):
        target = None if m[2] == device_target else m[2]
        if m[1] != op or (m[3] is None and target is None) or (m[3], target) in found:
            continue
        found.append((m[3], target))
    return found


def kernel_fingerprint(cuda):
    """A hash of the generated CUDA less what only names it: the header comment with the knobs and
    the knob hash in kernel names (k_sdpa_s_fac95c), so that two schedules that lower to the
    same kernels (a tensor-core block falling back to the scalar tier) are measured once."""
    text = "\n".join(line for line in cuda.splitlines() if not line.startswith("// Emmy: op"))
    text = re.sub(r"\b(k_\w*?)_[0-9a-f]{6}\b", r"\1", text)
    return hashlib.sha1(text.encode()).hexdigest()


class Variant:
    """One Emmy op under one schedule (or knob override), loaded once, used for every case."""

    def __init__(self, family, path, op, schedule=None, knobs=None, target=None, dtype=None):
        self.family, self.path, self.op_name, self.schedule, self.knobs = family, Path(path), op, schedule, knobs
        self.target, self.dtype = target, dtype  # dtype: emmy.load's (the stdlib's f16 taken as f32, say)
        tag = schedule or (f"knobs {knobs}" if knobs else "default")
        tags = ", ".join(t for t in (tag, target, dtype) if t)
        self.label = f"emmy {op} [{tags}]"
        self.op = None
        self.error = None
        self.rate = None  # seconds per unit of work (FLOP or byte) on the last case measured
        self.first_launch_ms = None
        self.load_ms = None

    def get(self, h):
        if self.op is None and self.error is None:
            t0 = time.perf_counter()
            try:
                own = h.meta["capability"] if h.meta["capability"] in PORTABLE_TARGETS else None
                prog = h.emmy.load(self.path, target=self.target or own, schedule=self.schedule, knobs=self.knobs,
                                   stdlib_path=str(ROOT / "stdlib"), cache_dir=h.cache_dir,
                                   **({"dtype": self.dtype} if self.dtype else {}))
                self.op = prog.op(self.op_name)
            except Exception as e:  # emmy.Error, LibraryNotFoundError, ...
                self.error = e
            self.load_ms = (time.perf_counter() - t0) * 1e3
        if self.error is not None:
            raise self.error
        return self.op


# ---- the harness -----------------------------------------------------------------------------


def fmt_err(e):
    kind = getattr(e, "kind", None)  # emmy.Error: its ErrorKind
    name = f"emmy.Error({getattr(kind, 'name', kind)})" if kind is not None else type(e).__name__
    return f"{name}: {e}".strip()


class Harness:
    def __init__(self, args):
        self.args = args
        self.quick = args.quick
        self.out = Path(args.out)
        self.rows = []
        self.notes = []
        self.t0 = time.perf_counter()
        self.deadline = args.deadline
        self.emmy_spent = {k: 0.0 for k in EMMY_FAMILY_BUDGET_S}
        self.knob_variants = {k: set() for k in EMMY_FAMILY_BUDGET_S}  # --knobs variants of each family
        self.poisoned = None
        self.cache_dir = tempfile.mkdtemp(prefix="emmy-bench-cache-")
        self.timer = Timer(args.flush)
        self.flush_kind = args.flush
        self.meta = self.collect_meta()
        self.emmy = None
        self.emmy_error = None
        try:
            sys.path.insert(0, str(ROOT / "python"))
            import emmy
            if args.lib:
                emmy.load_library(args.lib)
            self.meta["emmy_library"] = emmy.load_library()
            self.meta["emmy_version"] = emmy.version()
            self.emmy = emmy
        except Exception as e:
            self.emmy_error = e
            self.note(f"Emmy unavailable, every Emmy row is an error: {fmt_err(e)}")
        self.triton_attention = None
        if triton is None:
            self.note(f"Triton rows disabled: {TRITON_ERROR}")
        else:
            try:
                self.triton_attention = make_triton_attention(self.quick)
            except Exception as e:
                self.note(f"Triton rows disabled: {fmt_err(e)}")
        self.variants = {}

    # -- bookkeeping

    def elapsed(self):
        return time.perf_counter() - self.t0

    def note(self, text):
        print(f"note: {text}", flush=True)
        self.notes.append(text)

    def collect_meta(self):
        # The GPU machine's copy of the tree may carry a stale .git: scripts/gpu_stage.sh records
        # the staged build's commit, which gpu_env.sh exports as EMMY_COMMIT.
        commit = os.environ.get("EMMY_COMMIT") or None
        try:
            if commit is None:
                commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True, text=True,
                                        timeout=10).stdout.strip() or None
                dirty = commit and subprocess.run(["git", "-C", str(ROOT), "status", "--porcelain", "--untracked-files=no"],
                                                  capture_output=True, text=True, timeout=10).stdout.strip()
                commit = commit and commit + (" (with uncommitted changes)" if dirty else "")
        except Exception:
            commit = None
        props = torch.cuda.get_device_properties(0)
        return {
            "device": torch.cuda.get_device_name(0),
            "capability": "sm_%d%d" % torch.cuda.get_device_capability(0),
            "sms": props.multi_processor_count,
            "torch": torch.__version__, "cuda": torch.version.cuda,
            "triton": getattr(triton, "__version__", None) if triton is not None else f"unavailable ({TRITON_ERROR})",
            "python": platform.python_version(),
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S UTC"),
            "commit": commit or os.environ.get("EMMY_COMMIT") or "unknown",
            "host": platform.node(), "gpu": gpu_identity(), "quick": self.quick, "flush_us": self.timer.flush_us,
            "timing": f"own loop: 256 MB L2 flush ({'zero_' if self.flush_kind == 'dirty' else 'a read: sum'}) before "
                      "each launch, CUDA events around each launch, "
                      "median of n launches after a warm-up call (not triton.testing.do_bench)",
        }

    def variant(self, family, path, op, schedule=None, knobs=None, target=None, dtype=None):
        key = (str(path), op, schedule, knobs, target, dtype)
        if key not in self.variants:
            self.variants[key] = Variant(family, path, op, schedule, knobs, target, dtype)
        return self.variants[key]

    def variants_for(self, family, path, op, extra_knobs=(), dtype=None):
        path = Path(path)
        vs = [self.variant(family, path, op, dtype=dtype)]
        if path.exists():
            vs += [self.variant(family, path, op, schedule=s, target=t, dtype=dtype)
                   for s, t in named_schedules(path, op, self.meta["capability"])]
        vs += [self.variant(family, path, op, knobs=k, dtype=dtype) for k in extra_knobs]
        # The auto-scheduler's (docs/auto_schedule.md), for the device's target and each other one a block names.
        targets = [None] + sorted({t for _, t in named_schedules(path, op, self.meta["capability"]) if t}
                                  if path.exists() else set())
        vs += [self.variant(family, path, op, schedule="auto", target=t, dtype=dtype) for t in targets]
        if self.args.blocks:  # --blocks: only the schedule blocks whose label matches
            keep = re.compile(self.args.blocks)
            vs = [v for v in vs if keep.search(v.label)]
        # --knobs OP[@TARGET]=KNOBS: more variants of OP from the command line (knob sweeps on the GPU)
        for o, k in self.args.knobs:
            name, _, target = o.partition("@")
            if name == op:
                vs.append(self.variant(family, path, op, knobs=k, target=target or None, dtype=dtype))
                self.knob_variants[family].add((op, k, target, dtype))
        return vs

    def add(self, row):
        self.rows.append(row)
        if row.get("error"):
            status = "ERROR " + row["error"].splitlines()[0][:150]
        elif row.get("skipped"):
            status = "skipped: " + row["skipped"]
        else:
            status = (f"{row['median_us']:.1f} us (host {row.get('host_us', 0):.0f})  {row['metric']:.4g} {row['unit']}  "
                      f"check {'pass' if row.get('pass') else 'FAIL'} (max err {row.get('max_abs_err')})"
                      + (f": {row['check_failure']}" if row.get("check_failure") else ""))
        print(f"[{self.elapsed():6.1f}s] {row['op']:9s} {row['case']:32s} {row['backend']:45s} {status}", flush=True)

    # -- measurements

    def measure_peer(self, base, backend, fn, refs, tols, work, unit, kind="peer"):
        row = dict(base, backend=backend, kind=kind, unit=unit)
        try:
            out = fn()
            torch.cuda.synchronize()
            row.update(check(out, refs, tols))
            del out
            est = statistics.median(self.timer.run(fn, 3))
            budget = PEER_BUDGET_S * (0.2 if self.quick or self.elapsed() > self.deadline else 1.0)
            n = max(5, min(200, int(budget * 1e6 / (est + self.timer.flush_us))))
            row.update(self.timer.summary(self.timer.run(fn, n)))
            row["metric"] = work / (row["median_us"] * 1e-6) / 1e12
        except Exception as e:
            row["error"] = fmt_err(e)
            row["traceback"] = traceback.format_exc()
        self.add(row)
        return row

    def measure_emmy(self, base, variant, inputs, tiny_inputs, refs, tols, work, unit, seen):
        """One Emmy variant on one case, within the caps (see the module docstring)."""
        row = dict(base, backend=variant.label, kind="emmy", unit=unit, source=str(variant.path.relative_to(ROOT))
                   if variant.path.is_relative_to(ROOT) else str(variant.path), schedule=variant.schedule,
                   knob_override=variant.knobs)
        fam = variant.family
        try:
            if self.emmy is None:
                raise self.emmy_error
            op = variant.get(self)
            # The knobs this case's sizes take (guarded blocks; --knobs go over the block they pick).
            row["knobs"] = op.knobs_at(*(t.shape for t in inputs))
            # Keyed by the CUDA as loaded (nominal sizes) and the knobs these sizes take: an
            # auto-schedule's kernels at nominal sizes can be a knob row's that these sizes do not take.
            digest = kernel_fingerprint(op.cuda) + "|" + str(row["knobs"])
            if digest in seen:  # same kernels as a variant measured on this case: not re-measured
                same = seen[digest]
                for k in ("median_us", "min_us", "n", "metric", "max_abs_err", "max_abs_err_all", "pass", "check_failure"):
                    if k in same:
                        row[k] = same[k]
                row["note"] = f"same CUDA as [{same['backend']}]; not re-measured"
                row["same_as"] = same["backend"]
                if "error" in same or "skipped" in same:
                    row["skipped"] = f"same CUDA as [{same['backend']}]"
                self.add(row)
                return row
            budget = EMMY_FAMILY_BUDGET_S[fam] + EMMY_KNOB_BUDGET_S * len(self.knob_variants[fam])
            left = budget * (0.3 if self.quick else 1.0) - self.emmy_spent[fam]
            predicted = variant.rate * work if variant.rate is not None else None
            if predicted is not None:
                row["predicted_s"] = predicted
            if self.elapsed() > self.deadline:
                row["skipped"] = f"harness deadline ({self.deadline:.0f} s) passed"
            elif predicted is not None and predicted > self.args.emmy_launch_cap:
                row["skipped"] = (f"predicted {predicted:.2f} s per launch (> cap {self.args.emmy_launch_cap} s, "
                                  f"from its time per {'FLOP' if unit == 'TFLOP/s' else 'byte'} on a smaller case)")
            elif predicted is not None and predicted * 2 > left:
                row["skipped"] = f"Emmy {fam} time budget: {max(left, 0):.1f} s left, one launch predicted {predicted:.2f} s"
            if "skipped" in row:
                seen[digest] = row
                self.add(row)
                return row
            t_start = time.perf_counter()
            try:
                if variant.first_launch_ms is None:  # compile (NVRTC, fresh cache) on tiny tensors
                    t0 = time.perf_counter()
                    op(*tiny_inputs)
                    torch.cuda.synchronize()
                    variant.first_launch_ms = (time.perf_counter() - t0) * 1e3
                else:
                    op(*tiny_inputs)
                launch = op.bind(*inputs)
                # A guarded schedule block may take these sizes and not the tiny ones: its compile
                # (NVRTC, on its first launch) must not be timed.
                if op.knobs_at(*(t.shape for t in inputs)) != op.knobs_at(*(t.shape for t in tiny_inputs)):
                    launch()
                    torch.cuda.synchronize()
                nan_filled(launch.outputs)
                t1 = self.timer.run(launch, 1)[0]
                row.update(check(launch.outputs, refs, tols))
                if t1 > 1e6:
                    times = [t1]
                    row["note"] = "one launch (> 1 s)"
                elif t1 > 2.5e5:
                    times = [t1] + self.timer.run(launch, 2)
                    row["note"] = "median of 3 launches (> 0.25 s each)"
                else:
                    budget = EMMY_CASE_BUDGET_S * (0.3 if self.quick else 1.0)
                    n = max(3, min(50, int(budget * 1e6 / (t1 + self.timer.flush_us))))
                    times = self.timer.run(launch, n)
                row.update(self.timer.summary(times))
                row["metric"] = work / (row["median_us"] * 1e-6) / 1e12
                row["first_launch_ms"] = variant.first_launch_ms
                variant.rate = row["median_us"] * 1e-6 / work
                del launch
            finally:
                self.emmy_spent[fam] += time.perf_counter() - t_start
        except Exception as e:
            row["error"] = fmt_err(e)
            if not (self.emmy is not None and isinstance(e, self.emmy.Error)):
                row["traceback"] = traceback.format_exc()
            digest = None
        if digest is not None:
            seen[digest] = row
        self.add(row)
        return row

    def finish_case(self, base_rows_start, ref_backend):
        """vs column: the reference peer's median over each row's median."""
        rows = self.rows[base_rows_start:]
        ref = next((r for r in rows if r["backend"] == ref_backend and r.get("median_us")), None)
        for r in rows:
            if ref is not None and r.get("median_us"):
                r["vs_ref"] = ref["median_us"] / r["median_us"]
                r["vs_ref_backend"] = ref_backend
        self.write(final=False)

    def run_case(self, name, fn):
        """Runs one case; an exception becomes an error row; a lost CUDA context stops the run."""
        if self.poisoned:
            self.add({"op": name[0], "case": name[1], "backend": "-", "kind": "case",
                      "skipped": f"CUDA context lost earlier ({self.poisoned})"})
            return
        try:
            fn()
        except Exception as e:
            self.add({"op": name[0], "case": name[1], "backend": "(case setup)", "kind": "case", "error": fmt_err(e),
                      "traceback": traceback.format_exc()})
        try:
            torch.cuda.synchronize()
            torch.cuda.empty_cache()
        except Exception as e:
            self.poisoned = f"after {name[0]} {name[1]}: {fmt_err(e)}"
            self.note(f"CUDA context lost {self.poisoned}; the remaining cases are skipped (rerun with --only)")

    # -- the cases

    @staticmethod
    def attention_case(op, B, H, S, D, causal, **extra):
        """An attention case's label, FLOPs (4 B H S^2 D, halved when causal) and row fields."""
        label = f"B={B} H={H} S={S} D={D}" + (" causal" if causal else "")
        work = 4.0 * B * H * S * S * D * (0.5 if causal else 1.0)
        base = {"op": op, "case": label, "shape": {"B": B, "H": H, "S": S, "T": S, "D": D, "E": D},
                "causal": causal, **extra, "work": work}
        return label, work, base

    def case_sdpa(self, B, H, S, D, causal):
        label, work, base = self.attention_case("sdpa", B, H, S, D, causal)
        start = len(self.rows)

        def body():
            gen = torch.Generator(device="cuda").manual_seed(0)
            q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.float16, generator=gen) for _ in range(3))
            ref = [sdpa_reference(q, k, v, causal)]
            tols = TOL["sdpa"]
            self.measure_attention_peers(base, (q, k, v), causal, ref, tols, work)
            tiny = tuple(torch.randn(1, 1, 16, D, device="cuda", dtype=torch.float16) for _ in range(3))
            seen = {}
            if not causal:
                variants = self.variants_for("sdpa", ROOT / "stdlib" / "nn.emmy", "sdpa")
            else:
                variants = self.variants_for("sdpa", ROOT / "stdlib" / "nn.emmy", "sdpa_causal",
                                             extra_knobs=["TILE=a:scalar,TILE@e=f64"])
                example = ROOT / "examples" / "causal_attention.emmy"
                if example.exists():
                    variants += self.variants_for("sdpa", example, "causal_select")
                elif not any("causal_attention.emmy" in n for n in self.notes):
                    self.note("examples/causal_attention.emmy not found: no causal_select rows")
            for var in variants:
                self.measure_emmy(base, var, (q, k, v), tiny, ref, tols, work, "TFLOP/s", seen)

        self.run_case(("sdpa", label), body)
        self.finish_case(start, "torch FA-2 (flash)")

    def case_sdpa_bf16(self, B, H, S, D, causal):
        """case_sdpa in bf16 (inputs, outputs and the peers), against examples/attention_variants.emmy's
        sdpa_bf16 / sdpa_causal_bf16. Head dims above 128 run only its "hd256..." blocks (and --knobs
        variants): the others keep q's fragments for D <= 128 and refuse the shape."""
        label, work, base = self.attention_case("sdpa_bf16", B, H, S, D, causal, dtype="bf16")
        start = len(self.rows)

        def body():
            gen = torch.Generator(device="cuda").manual_seed(6)
            q, k, v = (torch.randn(B, H, S, D, device="cuda", dtype=torch.bfloat16, generator=gen) for _ in range(3))
            ref = [sdpa_reference(q, k, v, causal)]
            tols = TOL["sdpa_bf16"]
            self.measure_attention_peers(base, (q, k, v), causal, ref, tols, work)
            tiny = tuple(torch.randn(1, 1, 16, D, device="cuda", dtype=torch.bfloat16) for _ in range(3))
            seen = {}
            example = ROOT / "examples" / "attention_variants.emmy"
            if not example.exists() and not any("attention_variants.emmy" in n for n in self.notes):
                self.note("examples/attention_variants.emmy not found: its rows are errors")
            variants = self.variants_for("sdpa_bf16", example, "sdpa_causal_bf16" if causal else "sdpa_bf16")
            if D > 128:
                variants = [var for var in variants
                            if (var.schedule or "").startswith("hd256") or var.knobs is not None]
            for var in variants:
                self.measure_emmy(base, var, (q, k, v), tiny, ref, tols, work, "TFLOP/s", seen)

        self.run_case(("sdpa_bf16", label), body)
        self.finish_case(start, "torch FA-2 (flash)")

    def case_gqa(self, B, H, KH, S, D, causal=False):
        """Grouped-query attention: H query heads over KH key/value heads (std.nn's sdpa_gqa; causal:
        examples/attention_variants.emmy's sdpa_gqa_causal)."""
        label = f"B={B} H={H} KH={KH} S={S} D={D}" + (" causal" if causal else "")
        start = len(self.rows)
        work = 4.0 * B * H * S * S * D * (0.5 if causal else 1.0)
        base = {"op": "gqa", "case": label, "shape": {"B": B, "H": H, "KH": KH, "S": S, "T": S, "D": D, "E": D},
                "causal": causal, "work": work}

        def body():
            gen = torch.Generator(device="cuda").manual_seed(5)
            q = torch.randn(B, H, S, D, device="cuda", dtype=torch.float16, generator=gen)
            k, v = (torch.randn(B, KH, S, D, device="cuda", dtype=torch.float16, generator=gen) for _ in range(2))
            ref = [sdpa_reference(q, k.repeat_interleave(H // KH, dim=1), v.repeat_interleave(H // KH, dim=1), causal)]
            tols = TOL["sdpa"]
            self.measure_torch_sdpa(base, (q, k, v), causal, (None, "flash", "cudnn"), ref, tols, work, gqa=True)
            tiny = tuple(torch.randn(1, h, 16, D, device="cuda", dtype=torch.float16) for h in (H // KH, 1, 1))
            seen = {}
            if not causal:
                variants = self.variants_for("gqa", ROOT / "stdlib" / "nn.emmy", "sdpa_gqa")
            else:
                example = ROOT / "examples" / "attention_variants.emmy"
                if not example.exists() and not any("attention_variants.emmy" in n for n in self.notes):
                    self.note("examples/attention_variants.emmy not found: its rows are errors")
                variants = self.variants_for("gqa", example, "sdpa_gqa_causal")
            for var in variants:
                self.measure_emmy(base, var, (q, k, v), tiny, ref, tols, work, "TFLOP/s", seen)

        self.run_case(("gqa", label), body)
        self.finish_case(start, "torch SDPA (default backend)")

    def measure_attention_peers(self, base, qkv, causal, ref, tols, work):
        """FA-2, cuDNN and mem-efficient through torch's SDPA, and this file's Triton kernel where its
        head dim is a power of two (tl.arange needs one)."""
        q, k, v = qkv
        self.measure_torch_sdpa(base, qkv, causal, ("flash", "cudnn", "efficient"), ref, tols, work)
        D = q.shape[-1]
        if self.triton_attention is not None and D & (D - 1) == 0:
            out = torch.full_like(q, math.nan)
            self.measure_peer(base, "Triton FA-2 (this file, autotuned)",
                              lambda: self.triton_attention(q, k, v, causal, out), ref, tols, work, "TFLOP/s",
                              kind="triton")

    def measure_torch_sdpa(self, base, qkv, causal, backends, ref, tols, work, gqa=False):
        """PyTorch's scaled_dot_product_attention, each backend forced (None: torch's own choice)."""
        from torch.nn.attention import SDPBackend, sdpa_kernel
        table = {None: (None, "torch SDPA (default backend)"),
                 "flash": (SDPBackend.FLASH_ATTENTION, "torch FA-2 (flash)"),
                 "cudnn": (SDPBackend.CUDNN_ATTENTION, "torch cuDNN"),
                 "efficient": (SDPBackend.EFFICIENT_ATTENTION, "torch mem-efficient")}
        q, k, v = qkv
        run = ((lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal, enable_gqa=True)) if gqa else
               (lambda: F.scaled_dot_product_attention(q, k, v, is_causal=causal)))
        for key in backends:
            backend, name = table[key]
            with sdpa_kernel([backend]) if backend is not None else contextlib.nullcontext():
                self.measure_peer(base, name, run, ref, tols, work, "TFLOP/s")

    def case_decode(self, B, H, T, D):
        label = f"B={B} H={H} S=1 T={T} D={D}"
        start = len(self.rows)
        work = 4.0 * B * H * T * D
        base = {"op": "decode", "case": label, "shape": {"B": B, "H": H, "S": 1, "T": T, "D": D, "E": D},
                "causal": False, "work": work}

        def body():
            gen = torch.Generator(device="cuda").manual_seed(3)
            q = torch.randn(B, H, 1, D, device="cuda", dtype=torch.float16, generator=gen)
            k, v = (torch.randn(B, H, T, D, device="cuda", dtype=torch.float16, generator=gen) for _ in range(2))
            ref = [sdpa_reference(q, k, v, False)]
            tols = TOL["sdpa"]
            self.measure_torch_sdpa(base, (q, k, v), False, (None, "flash", "efficient"), ref, tols, work)
            tiny = (q[:1, :1].contiguous(), k[:1, :1, :16].contiguous(), v[:1, :1, :16].contiguous())
            seen = {}
            for var in self.variants_for("decode", ROOT / "stdlib" / "nn.emmy", "sdpa"):
                self.measure_emmy(base, var, (q, k, v), tiny, ref, tols, work, "TFLOP/s", seen)

        self.run_case(("decode", label), body)
        self.finish_case(start, "torch SDPA (default backend)")

    def case_rows(self, opname, N, C, dtype="f16"):
        """A row op of stdlib/nn.emmy (its f16 taken as `dtype`) against torch eager, torch.compile
        (Inductor, with --inductor) and the copy ceiling (x copied into a tensor like it: the bytes
        the op must move at least, at the rate the GPU moves them), all in TB/s."""
        label = f"{N}x{C}" + ("" if dtype == "f16" else f" {dtype}")
        start = len(self.rows)
        tdtype = {"f16": torch.float16, "f32": torch.float32}[dtype]
        elem = 2 if dtype == "f16" else 4
        work = {"softmax": 2 * N * C * elem, "layernorm": 2 * N * C * elem + 2 * C * elem,
                "rmsnorm": 2 * N * C * elem + C * elem}[opname]
        base = {"op": opname, "case": label, "shape": {"N": N, "C": C}, "work": work}
        peer_name = {"softmax": "torch.softmax", "layernorm": "F.layer_norm", "rmsnorm": "F.rms_norm"}[opname]

        def body():
            gen = torch.Generator(device="cuda").manual_seed(1)
            x = torch.randn(N, C, device="cuda", dtype=tdtype, generator=gen)
            w = torch.randn(C, device="cuda", dtype=tdtype, generator=gen)
            bias = torch.randn(C, device="cuda", dtype=tdtype, generator=gen)
            xf = x.float()
            tols = TOL[opname]
            if opname == "softmax":
                refs = [torch.softmax(xf, dim=-1)]
                peer, inputs = (lambda: torch.softmax(x, dim=-1)), (x,)
                tiny = (x[:2].contiguous(),)
            elif opname == "layernorm":
                mean = xf.mean(dim=-1)
                rstd = torch.rsqrt(xf.var(dim=-1, unbiased=False) + 1e-5)
                refs = [(xf - mean[:, None]) * rstd[:, None] * w.float() + bias.float(), mean, rstd]
                peer, inputs = (lambda: F.layer_norm(x, (C,), w, bias, eps=1e-5)), (x, w, bias)
                tiny = (x[:2].contiguous(), w, bias)
            else:
                refs = [xf * torch.rsqrt(xf.pow(2).mean(dim=-1, keepdim=True) + 1e-6) * w.float()]
                peer, inputs = (lambda: F.rms_norm(x, (C,), w, eps=1e-6)), (x, w)
                tiny = (x[:2].contiguous(), w)
            self.measure_peer(base, peer_name, peer, refs[:1], tols[:1], work, "TB/s")
            if self.args.inductor:
                compiled = torch.compile(peer)
                self.measure_peer(base, "torch.compile (Inductor)", compiled, refs[:1], tols[:1], work, "TB/s")
                torch._dynamo.reset()
            copy = torch.empty_like(x)
            self.measure_peer(base, "copy ceiling (x into a tensor like it)", lambda: copy.copy_(x), [xf], [(0, 0)],
                              2 * N * C * elem, "TB/s", kind="ceiling")
            seen = {}
            for var in self.variants_for(opname, ROOT / "stdlib" / "nn.emmy", opname,
                                         dtype=None if dtype == "f16" else dtype):
                self.measure_emmy(base, var, inputs, tiny, refs, tols, work, "TB/s", seen)

        self.run_case((opname, label), body)
        self.finish_case(start, peer_name)

    def case_product(self, op, M, N, K):
        """stdlib/linalg.emmy's matmul against torch.matmul (cuBLAS), or its matmul_bias_gelu (bias,
        then GELU's tanh form, fused) against cuBLASLt's GELU epilogue (torch._addmm_activation)."""
        gelu = op == "matmul_bias_gelu"
        peer = "cuBLASLt GELU epilogue" if gelu else "torch.matmul (cuBLAS)"
        label = f"M={M} N={N} K={K}"
        start = len(self.rows)
        work = 2.0 * M * N * K
        base = {"op": op, "case": label, "shape": {"M": M, "N": N, "K": K}, "work": work}

        def body():
            gen = torch.Generator(device="cuda").manual_seed(3 if gelu else 2)
            a = torch.randn(M, K, device="cuda", dtype=torch.float16, generator=gen)
            b = torch.randn(K, N, device="cuda", dtype=torch.float16, generator=gen)
            inputs, ref, peer_fn = (a, b), torch.matmul(a.float(), b.float()), (lambda: torch.matmul(a, b))
            tiny = (a[:16].contiguous(), b[:, :16].contiguous())
            if gelu:
                bias = torch.randn(N, device="cuda", dtype=torch.float16, generator=gen)
                inputs, tiny = inputs + (bias,), tiny + (bias[:16].contiguous(),)
                ref = F.gelu(ref + bias.float(), approximate="tanh")
                peer_fn = lambda: torch._addmm_activation(bias, a, b, use_gelu=True)  # noqa: E731
            tols = [(2e-3 * math.sqrt(K), 1e-2)]
            self.measure_peer(base, peer, peer_fn, [ref], tols, work, "TFLOP/s")
            seen = {}
            for var in self.variants_for(op, ROOT / "stdlib" / "linalg.emmy", op):
                self.measure_emmy(base, var, inputs, tiny, [ref], tols, work, "TFLOP/s", seen)

        self.run_case((op, label), body)
        self.finish_case(start, peer)

    def cases(self):
        if self.quick:
            sdpa = [((1, 8, 1000, 64), False), ((1, 8, 1000, 64), True), ((1, 8, 4096, 64), False)]
            rows = [(4097, 1000, "f16")]
            mms = [(1000, 777, 1023)]
        else:
            if self.args.sdpa:
                sdpa = [(s, c) for s in self.args.sdpa for c in (False, True)]
            else:
                sdpa = [(s, False) for s in SDPA_ANCHORS + SDPA_RAGGED] + [(s, True) for s in SDPA_ANCHORS]
                sdpa.append(((1, 8, 1000, 64), True))
            rows, mms = self.args.rows or [(n, c, "f16") for n, c in ROW_SHAPES], self.args.matmul or MATMUL_SHAPES
        # Smallest work first: each Emmy variant's time per FLOP on a case predicts the next one.
        sdpa.sort(key=lambda c: (c[0][0] * c[0][1] * c[0][2] ** 2 * c[0][3] * (0.5 if c[1] else 1.0), c[1]))
        rows = sorted(rows, key=lambda s: s[0] * s[1])
        mms = sorted(mms, key=lambda s: s[0] * s[1] * s[2])
        out = [(f"sdpa B={s[0]} H={s[1]} S={s[2]} D={s[3]}{' causal' if c else ''}",
                (lambda s=s, c=c: self.case_sdpa(*s, c))) for s, c in sdpa]
        for opname in ("softmax", "layernorm", "rmsnorm"):
            out += [(f"{opname} {n}x{c}" + ("" if dt == "f16" else f" {dt}"),
                     (lambda o=opname, n=n, c=c, dt=dt: self.case_rows(o, n, c, dt))) for n, c, dt in rows]
        out += [(f"matmul M={m} N={n} K={k}", (lambda m=m, n=n, k=k: self.case_product("matmul", m, n, k)))
                for m, n, k in mms]
        if not self.quick:
            out += [(f"decode B={b} H={h} T={t} D={d}", (lambda b=b, h=h, t=t, d=d: self.case_decode(b, h, t, d)))
                    for b, h, t, d in DECODE_SHAPES]
            out += [(f"gemm_bias_gelu M={m} N={n} K={k}",
                     (lambda m=m, n=n, k=k: self.case_product("matmul_bias_gelu", m, n, k)))
                    for m, n, k in GEMM_EPILOGUE_SHAPES]
            out += [(f"gqa B={b} H={h} KH={kh} S={s_} D={d}",
                     (lambda b=b, h=h, kh=kh, s_=s_, d=d: self.case_gqa(b, h, kh, s_, d)))
                    for b, h, kh, s_, d in GQA_SHAPES]
            out += [(f"gqa B={b} H={h} KH={kh} S={s_} D={d} causal",
                     (lambda b=b, h=h, kh=kh, s_=s_, d=d: self.case_gqa(b, h, kh, s_, d, causal=True)))
                    for b, h, kh, s_, d in GQA_CAUSAL_SHAPES]
            # bf16 attention, smallest work first (each variant's time per FLOP predicts the next case's).
            bf16 = sorted(((s, c) for s in BF16_SDPA_SHAPES for c in (False, True)),
                          key=lambda c: (c[0][0] * c[0][1] * c[0][2] ** 2 * c[0][3] * (0.5 if c[1] else 1.0), c[1]))
            out += [(f"sdpa_bf16 B={s[0]} H={s[1]} S={s[2]} D={s[3]}{' causal' if c else ''}",
                     (lambda s=s, c=c: self.case_sdpa_bf16(*s, c))) for s, c in bf16]
        return out

    def run(self):
        only = re.compile(self.args.only) if self.args.only else None
        for name, fn in self.cases():
            if only and not only.search(name):
                continue
            fn()
        self.meta["elapsed_s"] = self.elapsed()
        self.meta["emmy_time_s"] = dict(self.emmy_spent)

    # -- output

    def write(self, final=True):
        self.out.mkdir(parents=True, exist_ok=True)
        variants = [{"label": v.label, "source": str(v.path), "op": v.op_name, "schedule": v.schedule,
                     "knob_override": v.knobs, "knobs": v.op.knobs if v.op is not None else None,
                     "error": fmt_err(v.error) if v.error is not None else None, "load_ms": v.load_ms,
                     "first_launch_ms": v.first_launch_ms} for v in self.variants.values()]
        png = self.out / "throughput.png"
        if final:
            try:
                if png.exists():
                    png.unlink()
                plot(self.rows, png, self.meta)
            except Exception as e:
                self.note(f"no throughput.png: {fmt_err(e)}")
        doc = {"meta": self.meta, "notes": self.notes, "variants": variants, "rows": self.rows}
        (self.out / "results.json").write_text(json.dumps(_clean(doc), indent=1, default=str, allow_nan=False))
        (self.out / "results.md").write_text(self.markdown(variants, final, final and png.exists()))

    def markdown(self, variants, final, with_png):
        m = self.meta
        lines = ["# Emmy vs peers: benchmark results", "",
                 f"- Device: {m['device']} ({m['capability']}, {m['sms']} SMs); "
                 + ", ".join(f"{k} {v}" for k, v in m.get("gpu", {}).items()),
                 f"- torch {m['torch']} (CUDA {m['cuda']}), Triton {m['triton']}, Python {m['python']}",
                 f"- Emmy {m.get('emmy_version', '?')} from `{m.get('emmy_library', '?')}`",
                 f"- Date: {m['date']}; commit: {m['commit']}",
                 f"- Timing: {m['timing']}; flush {m['flush_us']:.0f} µs",
                 f"- Checks: every element vs a float32 torch computation on the same inputs (TF32 off): "
                 f"|out - ref| <= atol + rtol·|ref| and finite; max abs err is of the first output",
                 f"- Run: {'--quick, ' if self.quick else ''}{m.get('elapsed_s', self.elapsed()):.0f} s"
                 f"{'' if final else ' (partial: the run is still going or stopped early)'}",
                 "", "Throughput: attention 4·B·H·S²·D FLOPs (halved when causal), matmul 2·M·N·K; row ops "
                     "bytes read + written (x, y, the weight rows). `vs` is the reference peer's median over the "
                     "row's (FA-2 for attention, the torch op otherwise): above 1 is faster.", ""]
        families = [("sdpa", "Attention forward (f16, B,H,S,D; T = S, E = D)"),
                    ("sdpa_bf16", "Attention forward (bf16, B,H,S,D; T = S, E = D)"),
                    ("softmax", "Softmax (f16, N x C)"),
                    ("layernorm", "LayerNorm (f16, N x C)"), ("rmsnorm", "RMSNorm (f16, N x C)"),
                    ("matmul", "Matmul (f16 in, f16 out, f32 accumulate)"),
                    ("decode", "Decode attention (f16, one query row, B,H,T,D; 4·B·H·T·D FLOPs)"),
                    ("gqa", "Grouped-query attention (f16, H query heads over KH key/value heads; "
                            "4·B·H·S²·D FLOPs, halved when causal)")]
        for fam, title in families:
            rows = [r for r in self.rows if r["op"] == fam]
            if not rows:
                continue
            lines += [f"## {title}", "", "| shape | backend | median µs | TFLOP/s or TB/s | vs FA-2 / torch | "
                                         "max abs err | check | note |", "|---|---|---|---|---|---|---|---|"]
            for r in rows:
                if r.get("error"):
                    cells = ["-", "-", "-", "-", "error", _cell(r["error"])]
                elif r.get("skipped"):
                    cells = ["-", "-", "-", "-", "skipped", _cell(r["skipped"])]
                else:
                    note = r.get("note", "")
                    cells = [f"{r['median_us']:.1f}", f"{r['metric']:.3g} {r['unit']}",
                             f"{r['vs_ref']:.3g}x" if r.get("vs_ref") else "-",
                             f"{r['max_abs_err']:.2e}" if r.get("max_abs_err") is not None else "-",
                             "pass" if r.get("pass") else "**FAIL**", _cell(note)]
                lines.append(f"| {r['case']} | {r['backend']} | " + " | ".join(cells) + " |")
            lines.append("")
        lines += ["## Emmy variants", "", "| variant | source | knobs it was lowered with | first launch (compile) ms |",
                  "|---|---|---|---|"]
        for v in variants:
            knobs = v["knobs"] if v["knobs"] is not None else ("error: " + _cell(v["error"] or "not loaded"))
            first = f"{v['first_launch_ms']:.0f}" if v["first_launch_ms"] else "-"
            src = os.path.relpath(v["source"], ROOT) if os.path.isabs(v["source"]) else v["source"]
            lines.append(f"| {v['label']} | {src} | `{knobs}` | {first} |")
        if self.notes:
            lines += ["", "## Notes", ""] + [f"- {_cell(n, 400)}" for n in self.notes]
        if with_png:
            lines += ["", "![throughput](throughput.png)"]
        return "\n".join(lines) + "\n"


def _cell(text, limit=160):
    text = " ".join(str(text).split())
    return (text[:limit] + "…" if len(text) > limit else text).replace("|", "\\|")


def _clean(o):
    """JSON-safe: non-finite floats as strings ("inf", "nan")."""
    if isinstance(o, float) and not math.isfinite(o):
        return str(o)
    if isinstance(o, dict):
        return {str(k): _clean(v) for k, v in o.items()}
    if isinstance(o, (list, tuple)):
        return [_clean(v) for v in o]
    return o


def _finite(x):
    return x is not None and isinstance(x, (int, float)) and math.isfinite(x)


def plot(rows, path, meta):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    fams = [f for f in ("sdpa", "sdpa_bf16", "softmax", "layernorm", "rmsnorm", "matmul", "decode", "gqa")
            if any(r["op"] == f for r in rows)]
    if not fams:
        return
    fig, axes = plt.subplots(len(fams), 1, figsize=(16, 4.8 * len(fams)), squeeze=False)
    for ax, fam in zip(axes[:, 0], fams):
        good = [r for r in rows if r["op"] == fam and _finite(r.get("metric")) and r.get("metric", 0) > 0
                and not r.get("skipped") and not r.get("same_as")]
        cases = list(dict.fromkeys(r["case"] for r in rows if r["op"] == fam))
        backends = list(dict.fromkeys(r["backend"] for r in good))
        unit = next((r["unit"] for r in good), "")
        if not good:
            ax.text(0.5, 0.5, "no measurements", ha="center", va="center", transform=ax.transAxes)
            ax.set_title(fam)
            continue
        width = 0.85 / max(len(backends), 1)
        cmap = plt.get_cmap("tab20")
        for j, b in enumerate(backends):
            xs, ys = [], []
            for i, c in enumerate(cases):
                r = next((r for r in good if r["case"] == c and r["backend"] == b), None)
                if r is not None:
                    xs.append(i - 0.425 + width * (j + 0.5))
                    ys.append(r["metric"])
            ax.bar(xs, ys, width, label=b, color=cmap(j % 20))
        ax.set_yscale("log")
        ax.set_xticks(range(len(cases)))
        ax.set_xticklabels(cases, rotation=20, ha="right", fontsize=8)
        ax.set_ylabel(unit)
        ax.set_title(f"{fam}: throughput (log scale), {meta['device']}")
        ax.grid(axis="y", which="both", alpha=0.3)
        ax.legend(fontsize=7, ncol=2, loc="upper left", bbox_to_anchor=(1.0, 1.0))
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)


def main():
    global torch, F
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--quick", action="store_true", help="a small subset (smoke run, under a minute)")
    ap.add_argument("--out", default=str(ROOT / "tests" / "bench" / "results"), help="output directory")
    ap.add_argument("--lib", default=None, help="libemmy.so to use (default: $EMMY_LIBRARY, else build/libemmy.so)")
    ap.add_argument("--only", default=None, help="run only the cases whose name matches this regex "
                                                 "(e.g. 'sdpa B=1 H=8 S=4096', 'softmax|matmul')")
    ap.add_argument("--blocks", default=None, help="run only the schedule blocks whose label matches this regex "
                                                   "(e.g. 'sm_90a' for the arch-specific ones); --knobs variants "
                                                   "always run")
    ap.add_argument("--deadline", type=float, default=420.0,
                    help="seconds after which Emmy cases are skipped and peers timed briefly (default 420)")
    ap.add_argument("--emmy-launch-cap", type=float, default=2.0,
                    help="skip an Emmy case predicted to take longer than this many seconds per launch (default 2)")
    ap.add_argument("--sdpa", action="append", default=[], metavar="B,H,S,D",
                    type=lambda v: tuple(int(x) for x in v.split(",")),
                    help="an attention shape (f16, causal and not) to run instead of the anchors (repeatable)")
    ap.add_argument("--rows", action="append", default=[], metavar="N,C[,f32]",
                    type=lambda v: (int(v.split(",")[0]), int(v.split(",")[1]), (v.split(",") + ["f16"])[2]),
                    help="a row-op shape (softmax, layernorm, rmsnorm; f16 unless f32 is given) to run instead of "
                         "the anchors (repeatable)")
    ap.add_argument("--flush", choices=("dirty", "clean"), default="dirty",
                    help="the L2 flush before each launch: a 256 MB zero_ (dirty lines: a kernel's reads then "
                         "evict them to memory; the default, as every table of RESULTS.md) or a read of it (clean)")
    ap.add_argument("--inductor", action="store_true",
                    help="also time the row ops under torch.compile (Inductor; compiling takes seconds a case)")
    ap.add_argument("--matmul", action="append", default=[], metavar="M,N,K",
                    type=lambda v: tuple(int(x) for x in v.split(",")),
                    help="a matmul shape to run instead of the anchors (repeatable)")
    ap.add_argument("--knobs", action="append", default=[], type=lambda v: tuple(v.split("=", 1)),
                    metavar="OP[@TARGET]=KNOBS", help="one more Emmy variant of OP (sdpa, sdpa_causal, matmul, ...) "
                                                      "under these knobs (for TARGET, e.g. sdpa@sm_90a=...), beside "
                                                      "its schedules; repeatable")
    args = ap.parse_args()

    import torch as _torch
    import torch.nn.functional as _F
    torch, F = _torch, _F
    if not torch.cuda.is_available():
        print("no CUDA device: this harness runs on the GPU machine", file=sys.stderr)
        return 2
    torch.backends.cuda.matmul.allow_tf32 = False  # the float32 references
    torch.backends.cudnn.allow_tf32 = False
    h = Harness(args)
    print(json.dumps(h.meta, indent=1), flush=True)
    try:
        h.run()
    except KeyboardInterrupt:
        h.note("interrupted; the results are partial")
    finally:
        h.write(final=True)
    files = [f for f in ("results.md", "results.json", "throughput.png") if (h.out / f).exists()]
    print(f"wrote {', '.join(files)} to {h.out} in {h.elapsed():.0f} s", flush=True)
    bad = [r for r in h.rows if r.get("pass") is False]
    if bad:
        print(f"{len(bad)} row(s) failed the output check", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
