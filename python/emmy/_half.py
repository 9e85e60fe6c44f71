"""f16 and bf16 as raw 16-bit patterns, in plain Python (no numpy).

f16 goes through struct's 'e' format (IEEE binary16, round to nearest even). bf16 is the top
16 bits of an f32, rounded to nearest even; a Python float is first rounded to f32, so a value
within an f32 rounding of a bf16 tie can round twice (harmless for test data, which is drawn
from representable values).
"""
import math
import struct

F16_MAX = 65504.0


def f16_bits(x):
    """The binary16 pattern of x (round to nearest even; overflow to +-inf)."""
    try:
        return struct.unpack("<H", struct.pack("<e", x))[0]
    except OverflowError:
        return 0xFC00 if x < 0 else 0x7C00


def f16_value(bits):
    """The float value of a binary16 pattern."""
    return struct.unpack("<e", struct.pack("<H", bits & 0xFFFF))[0]


def _f32_bits(x):
    try:
        return struct.unpack("<I", struct.pack("<f", x))[0]
    except OverflowError:
        return 0xFF800000 if x < 0 else 0x7F800000


def bf16_bits(x):
    """The bfloat16 pattern of x: f32's top 16 bits, rounded to nearest even; NaN stays NaN."""
    if math.isnan(x):
        return 0x7FC0
    b = _f32_bits(x)
    b += 0x7FFF + ((b >> 16) & 1)
    return (b >> 16) & 0xFFFF


def bf16_value(bits):
    """The float value of a bfloat16 pattern."""
    return struct.unpack("<f", struct.pack("<I", (bits & 0xFFFF) << 16))[0]


def encode(values, dtype):
    """Raw 16-bit patterns (a list of ints) of `values` as f16 or bf16."""
    values = list(values)
    if dtype == "f16":
        try:
            return list(struct.unpack(f"<{len(values)}H", struct.pack(f"<{len(values)}e", *values)))
        except OverflowError:
            return [f16_bits(v) for v in values]
    if dtype == "bf16":
        return [bf16_bits(v) for v in values]
    raise ValueError(f"not a 16-bit float type: {dtype}")


def decode(bits, dtype):
    """Floats from raw 16-bit patterns of f16 or bf16."""
    bits = list(bits)
    if dtype == "f16":
        return list(struct.unpack(f"<{len(bits)}e", struct.pack(f"<{len(bits)}H", *bits)))
    if dtype == "bf16":
        return list(struct.unpack(f"<{len(bits)}f", struct.pack(f"<{len(bits)}I", *[(b & 0xFFFF) << 16 for b in bits])))
    raise ValueError(f"not a 16-bit float type: {dtype}")


def round_to(x, dtype):
    """x rounded to f16, bf16 or f32 (f64: x itself)."""
    if dtype == "f16":
        return f16_value(f16_bits(x))
    if dtype == "bf16":
        return bf16_value(bf16_bits(x))
    if dtype == "f32":
        return struct.unpack("<f", struct.pack("<I", _f32_bits(x)))[0]
    return float(x)
