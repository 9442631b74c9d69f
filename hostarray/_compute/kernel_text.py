"""C text shared by the generated element-wise kernels (eager and fused) and the
reductions: helper functions an expression may call, numpy's conversions, exact division
and square root, and the merged layout of strided operands."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

__all__ = ["HELPERS", "_UNSIGNED", "_FLOAT64", "_layout", "_merged_layout", "_exact_macros",
           "_conv"]

# C helper functions an expression may call, by name (``_T`` is replaced by the type)
HELPERS: dict[str, str] = {
    # numpy's npy_divmod: floor division and modulo with Python's signs
    "fdiv_T": """
T fdiv_T(T a, T b) {
    if (isinf(a) || isinf(b)) return floor(FDIV(a, b));
    if (b == 0) return FDIV(a, b);
    T mod = fmod(a, b);
    T div = FDIV(a - mod, b);
    if (mod != 0 && ((b < 0) != (mod < 0))) div -= 1;
    if (div != 0) { T fl = floor(div); if (div - fl > (T)0.5) fl += 1; return fl; }
    return copysign((T)0, FDIV(a, b));
}""",
    "fmod_T": """
T fmod_T(T a, T b) {
    if (b == 0) return fmod(a, b);
    T mod = fmod(a, b);
    if (mod != 0) { if ((b < 0) != (mod < 0)) mod += b; }
    else mod = copysign((T)0, b);
    return mod;
}""",
    "idiv_T": """
T idiv_T(T a, T b) {
    if (b == 0) return 0;
    if (b == -1) return (T)((U)0 - (U)a);
    T q = a / b;
    if ((a % b != 0) && ((a < 0) != (b < 0))) q -= 1;
    return q;
}""",
    "imod_T": """
T imod_T(T a, T b) {
    if (b == 0 || b == -1) return 0;
    T r = a % b;
    if (r != 0 && ((r < 0) != (b < 0))) r += b;
    return r;
}""",
    "ipow_T": """
T ipow_T(T a, T b) {
    W r = 1, x = (W)(U)a;
    U e = (U)b;
    while (e) { if (e & 1) r *= x; x *= x; e >>= 1; }
    return (T)r;
}""",
    # -1, 0, 1 as the int64 s is below, equal to, above the uint64 u (no common C type)
    "cmp_su": """
int cmp_su(long s, ulong u) { return s < 0 ? -1 : ((ulong)s < u ? -1 : (ulong)s > u); }""",
    "logaddexp_T": """
T logaddexp_T(T a, T b) {
    if (a == b) return a + (T)M_LN2;
    T d = a - b;
    if (d > 0) return a + log1p(exp(-d));
    if (d <= 0) return b + log1p(exp(d));
    return d;
}""",
}

_UNSIGNED = {"char": "uchar", "short": "ushort", "int": "uint", "long": "ulong",
             "uchar": "uchar", "ushort": "ushort", "uint": "uint", "ulong": "ulong",
             "float": "float", "double": "double"}


_LAYOUTS: dict[tuple[Any, ...], tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]] = {}


def _layout(shape: tuple[int, ...], strides: Sequence[tuple[int, ...]]
            ) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]:
    """``shape`` and per-operand element ``strides`` with length-1 axes dropped and
    neighbouring axes merged where every operand steps through them as one (cached: the
    reductions ask on every call)."""
    key = (shape, *strides)
    hit = _LAYOUTS.get(key)
    if hit is None:
        if len(_LAYOUTS) >= 4096:  # bounded: shapes a program walks through once
            _LAYOUTS.clear()
        hit = _LAYOUTS[key] = _merged_layout(shape, strides)
    return hit


def _merged_layout(shape: tuple[int, ...], strides: Sequence[tuple[int, ...]]
                   ) -> tuple[tuple[int, ...], tuple[tuple[int, ...], ...]]:
    dims = [(n, [st[k] for st in strides]) for k, n in enumerate(shape) if n != 1]
    merged: list[tuple[int, list[int]]] = []
    for n, sts in dims:
        if merged:
            pn, psts = merged[-1]
            if all(p == s * n for p, s in zip(psts, sts)):
                merged[-1] = (pn * n, sts)
                continue
        merged.append((n, sts))
    if not merged:
        return (), tuple(() for _ in strides)
    return (tuple(n for n, _ in merged),
            tuple(tuple(m[1][j] for m in merged) for j in range(len(strides))))


_FLOAT64 = np.dtype(np.float64)


def _exact_macros(loop_t: str, fp64: bool) -> str:
    """``FDIV`` and ``FSQRT``: IEEE 754's correctly rounded division and square root.
    OpenCL lets single-precision ``/`` be 2.5 ulp off and ``sqrt`` 3 ulp unless the program
    is built with ``-cl-fp32-correctly-rounded-divide-sqrt`` (GPUs use the licence); computed
    in double and rounded once to float they are exact (53 >= 2 * 24 + 2 bits: the double
    rounding is innocuous).  Double precision ones are always correctly rounded."""
    if loop_t == "float" and fp64:
        return ("#define FDIV(x, y) ((float)((double)(x) / (double)(y)))\n"
                "#define FSQRT(x) ((float)sqrt((double)(x)))\n")
    return "#define FDIV(x, y) ((x) / (y))\n#define FSQRT(x) sqrt(x)\n"


_INT32_VIA = ("char", "uchar", "short", "ushort", "int")


def _conv(v: str, src: str, dst: str) -> str:
    """C text converting ``v`` of C type ``src`` to ``dst`` as numpy does (x86-64).

    A float to an integer goes through a 32-bit conversion for types up to 32 bits but
    ``uint`` (numpy's casts compile to ``cvttsd2si``), a 64-bit one otherwise, then wraps
    to the width; a value the conversion can't hold (NaN, out of range) gives its lowest
    value, as the instruction does.  C leaves these conversions undefined (a GPU saturates,
    PoCL differed with the array's length); the standard too, so this only keeps the
    device's answer the host path's (numpy's own SIMD and scalar loops disagree for some
    values outside the target's range; these follow its scalar loop, C's conversion through
    ``int``/``long``).  The bounds are powers of two, exact in ``src``."""
    if src not in ("float", "double") or dst in ("float", "double"):
        return v if src == dst else f"({dst})({v})"
    f = "f" if src == "float" else ""
    if dst in _INT32_VIA:
        return (f"({dst})((({v}) >= -2147483648.0{f} && ({v}) < 2147483648.0{f}) "
                f"? (int)({v}) : (int)0x80000000)")
    via64 = (f"((({v}) >= -9223372036854775808.0{f} && ({v}) < 9223372036854775808.0{f}) "
             f"? (long)({v}) : (long)0x8000000000000000L)")
    if dst == "ulong":
        return (f"((({v}) >= 9223372036854775808.0{f} && ({v}) < 18446744073709551616.0{f}) "
                f"? (ulong)({v}) : (ulong){via64})")
    return f"({dst}){via64}"
