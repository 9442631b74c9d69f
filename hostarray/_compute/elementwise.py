"""Element-wise operations on the device: OpenCL C generated from one table.

:data:`EXPRESSIONS` gives, per function of the namespace's element-wise
``TABLE``, its C expression over the loaded operands ``a``, ``b`` (of the
loop type ``T``), by kind of the loop type (``b`` bool, ``i`` signed, ``u``
unsigned, ``f`` floating).  The data types are numpy's: the loop numpy's ufunc
resolves for the operands (Python scalars weak, as NEP 50 and the standard
say) gives the type operands are converted to and the result type, so the
device computes what the host path computes.  Integer arithmetic wraps
(computed unsigned: C leaves signed overflow undefined); division and
remainder by zero give numpy's values; shifts past the width give numpy's.

Where C and numpy differ, the table writes numpy's rule out: conversion to
``bool`` is ``!= 0`` (numpy's logical functions take a bool loop for mixed
types: ``logical_and(0.5, True)`` is ``True``), ``maximum``/``minimum`` give
the second operand on a tie (``maximum(0.0, -0.0)`` is ``-0.0``, as numpy's
SIMD loops do), ``INT_MIN // -1`` wraps, ``x // 0`` and ``x % 0`` are 0 for
integers, shifts by the width or more (or negative) give 0 or the sign;
comparisons of ``int64`` with ``uint64`` arrays (numpy's loop keeps both
types) load each operand as it is and compare exactly.
The values are numpy's; numpy's floating-point and integer-division warnings
(``np.errstate``) are not raised for work done on the device.

What stays on the host
----------------------
These cases return ``None`` (the caller computes them with numpy, counted in
``ha.stats().host_fallbacks``) because OpenCL can't give numpy's answer, or not
without work that costs more than the host path:

* complex and float16 data: no portable OpenCL type (``cl_khr_fp16`` is
  optional, and numpy's float16 loops round every step to half precision).
  This includes float16 *results*: numpy computes the floating functions of
  ``bool``, ``int8`` and ``uint8`` (``sin``, ``sqrt``, ``exp``, ...) in float16.
* ``reciprocal`` of integers: numpy's result and its divide-by-zero warning
  depend on the values.
* ``pow`` of integers with a signed integer array as the exponent, or a
  negative scalar exponent: numpy raises ``ValueError`` by value.  Unsigned
  and bool exponent arrays run on the device.
* Python ints outside the loop type's range: numpy raises ``OverflowError``
  (arithmetic) or compares by value (``int8_array < 1000``); and every Python
  int outside int64's range, where numpy raises or not by the loop it picks
  (``bool_array + 2**63`` and ``logical_and(x, 2**63)`` raise,
  ``uint64_array + 2**63`` does not).
* empty results (nothing to launch), in-place operations whose target
  overlaps another operand in other elements (``x[1:] += x[:-1]``: numpy reads
  the operand as if copied first; ``x += x`` runs on the device), in-place
  targets of a type the device lacks, operands whose offset or strides are not
  whole elements.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np

from .._array import HostPtrArray
from .._devices import Device
from .._sharing import extent
from .._stats import COUNTERS
from . import fusion, pool, register
from .kernel_text import _FLOAT64, _UNSIGNED, HELPERS, _conv, _exact_macros, _layout
from .launch import ArrayArg, c_type, compiled, enqueue, overlaps_badly, supports, usable

__all__ = ["EXPRESSIONS", "HELPERS", "copy_on", "elementwise", "run"]

HPA = HostPtrArray

_F = {"acos": "acos", "acosh": "acosh", "asin": "asin", "asinh": "asinh", "atan": "atan",
      "atanh": "atanh", "cos": "cos", "cosh": "cosh", "exp": "exp", "expm1": "expm1",
      "log": "log", "log1p": "log1p", "log2": "log2", "log10": "log10", "sin": "sin",
      "sinh": "sinh", "sqrt": "sqrt", "tan": "tan", "tanh": "tanh", "ceil": "ceil",
      "floor": "floor", "trunc": "trunc", "round": "rint"}

_WRAP = "(T)((W)(U)a {op} (W)(U)b)"  # integer arithmetic modulo 2**bits

# name -> {kind: C expression}; kinds: b bool, i signed, u unsigned, f float; "*" any
EXPRESSIONS: dict[str, dict[str, str]] = {
    **{k: {"f": f"{v}(a)", "i": "a", "u": "a", "b": "a"} for k, v in _F.items()
       if k in ("ceil", "floor", "trunc", "round")},
    **{k: {"f": f"{v}(a)"} for k, v in _F.items() if k not in ("ceil", "floor", "trunc", "round")},
    "sqrt": {"f": "FSQRT(a)"},
    "abs": {"f": "fabs(a)", "i": "(T)(a < 0 ? (U)0 - (U)a : (U)a)", "u": "a", "b": "a"},
    "negative": {"f": "-a", "i": "(T)((U)0 - (U)a)", "u": "(T)((U)0 - (U)a)"},
    "positive": {"*": "a"},
    "square": {"f": "a * a", "i": _WRAP.format(op="*").replace("b", "a"),
               "u": _WRAP.format(op="*").replace("b", "a"), "b": "a & a"},
    "sign": {"f": "(isnan(a) ? a : (T)((a > 0) - (a < 0)))", "i": "(T)((a > 0) - (a < 0))",
             "u": "(T)(a > 0)"},
    "signbit": {"f": "signbit(a) != 0", "i": "a < 0", "u": "0", "b": "0"},
    "isfinite": {"f": "isfinite(a) != 0", "i": "1", "u": "1", "b": "1"},
    "isinf": {"f": "isinf(a) != 0", "i": "0", "u": "0", "b": "0"},
    "isnan": {"f": "isnan(a) != 0", "i": "0", "u": "0", "b": "0"},
    "reciprocal": {"f": "FDIV((T)1, a)"},
    "logical_not": {"*": "a == 0"},
    "bitwise_invert": {"b": "!a", "i": "~a", "u": "~a"},
    "conj": {"*": "a"},
    "real": {"*": "a"},
    "imag": {"*": "(T)0"},
    "add": {"f": "a + b", "i": _WRAP.format(op="+"), "u": _WRAP.format(op="+"), "b": "a | b"},
    "subtract": {"f": "a - b", "i": _WRAP.format(op="-"), "u": _WRAP.format(op="-")},
    "multiply": {"f": "a * b", "i": _WRAP.format(op="*"), "u": _WRAP.format(op="*"),
                 "b": "a & b"},
    "divide": {"f": "FDIV(a, b)"},
    "floor_divide": {"f": "fdiv_T(a, b)", "i": "idiv_T(a, b)", "u": "(b == 0 ? 0 : a / b)"},
    "remainder": {"f": "fmod_T(a, b)", "i": "imod_T(a, b)", "u": "(b == 0 ? 0 : a % b)"},
    "pow": {"f": "pow(a, b)", "i": "ipow_T(a, b)", "u": "ipow_T(a, b)"},
    "atan2": {"f": "atan2(a, b)"},
    "hypot": {"f": "hypot(a, b)"},
    "copysign": {"f": "copysign(a, b)"},
    "nextafter": {"f": "nextafter(a, b)"},
    "logaddexp": {"f": "logaddexp_T(a, b)"},
    # numpy (SIMD loops) gives the second operand where a == b: maximum(0.0, -0.0) is -0.0
    "maximum": {"f": "((a > b || isnan(a)) ? a : b)", "i": "(a >= b ? a : b)",
                "u": "(a >= b ? a : b)", "b": "(a | b)"},
    "minimum": {"f": "((a < b || isnan(a)) ? a : b)", "i": "(a <= b ? a : b)",
                "u": "(a <= b ? a : b)", "b": "(a & b)"},
    "equal": {"*": "a == b"},
    "not_equal": {"*": "a != b"},
    "less": {"*": "a < b"},
    "less_equal": {"*": "a <= b"},
    "greater": {"*": "a > b"},
    "greater_equal": {"*": "a >= b"},
    "logical_and": {"*": "(a != 0) && (b != 0)"},
    "logical_or": {"*": "(a != 0) || (b != 0)"},
    "logical_xor": {"*": "(a != 0) != (b != 0)"},
    "bitwise_and": {"*": "a & b"},
    "bitwise_or": {"*": "a | b"},
    "bitwise_xor": {"*": "a ^ b"},
    "bitwise_left_shift": {"i": "(T)((b >= 0 && b < BITS) ? ((U)a << b) : 0)",
                           "u": "(T)(b < BITS ? (a << b) : 0)"},
    "bitwise_right_shift": {"i": "(T)((b >= 0 && b < BITS) ? (a >> b) : (a < 0 ? -1 : 0))",
                            "u": "(T)(b < BITS ? (a >> b) : 0)"},
}

# numpy's implementation of each name, for the types (the namespace's own wrappers
# resolve like these ufuncs)
_RESOLVE: dict[str, Any] = {
    "abs": np.absolute, "acos": np.arccos, "acosh": np.arccosh, "asin": np.arcsin,
    "asinh": np.arcsinh, "atan": np.arctan, "atan2": np.arctan2, "atanh": np.arctanh,
    "bitwise_and": np.bitwise_and, "bitwise_left_shift": np.left_shift,
    "bitwise_invert": np.invert, "bitwise_or": np.bitwise_or,
    "bitwise_right_shift": np.right_shift, "bitwise_xor": np.bitwise_xor, "ceil": np.ceil,
    "conj": np.conjugate, "copysign": np.copysign, "cos": np.cos, "cosh": np.cosh,
    "divide": np.true_divide, "equal": np.equal, "exp": np.exp, "expm1": np.expm1,
    "floor": np.floor, "floor_divide": np.floor_divide, "greater": np.greater,
    "greater_equal": np.greater_equal, "hypot": np.hypot, "isfinite": np.isfinite,
    "isinf": np.isinf, "isnan": np.isnan, "less": np.less, "less_equal": np.less_equal,
    "log": np.log, "log1p": np.log1p, "log2": np.log2, "log10": np.log10,
    "logaddexp": np.logaddexp, "logical_and": np.logical_and, "logical_not": np.logical_not,
    "logical_or": np.logical_or, "logical_xor": np.logical_xor, "maximum": np.maximum,
    "minimum": np.minimum, "multiply": np.multiply, "negative": np.negative,
    "nextafter": np.nextafter, "not_equal": np.not_equal, "positive": np.positive,
    "pow": np.power, "reciprocal": np.reciprocal, "remainder": np.remainder,
    "round": np.rint, "sign": np.sign, "signbit": np.signbit, "sin": np.sin, "sinh": np.sinh,
    "square": np.square, "sqrt": np.sqrt, "subtract": np.subtract, "tan": np.tan,
    "tanh": np.tanh, "trunc": np.trunc, "add": np.add,
}
_BOOL = np.dtype(bool)
_IDENTITY = ("real", "imag")  # for real data: the same type (conj of bool is int8, numpy's)


def _loop(name: str, operands: tuple[Any, ...]) -> tuple[np.dtype, np.dtype] | None:
    """(loop type, result type) numpy resolves for ``name`` on ``operands``, or ``None``
    (no single loop type, or one the device path doesn't take)."""
    # Python int and float are weak scalars; a Python bool is numpy's bool (the lowest type)
    dts: tuple[Any, ...] = tuple(x._a.dtype if type(x) is HPA else _BOOL if type(x) is bool
                                 else type(x) for x in operands)
    if name in _IDENTITY:
        dt = dts[0]
        return None if dt.kind == "c" else (dt, dt)
    if name == "round" and dts[0].kind in "iub":
        return dts[0], dts[0]
    if name == "signbit" and dts[0].kind in "iub":  # numpy's loop is a float type: the same
        return dts[0], np.dtype(bool)
    uf = _RESOLVE.get(name)
    if uf is None:
        return None
    try:
        loop = uf.resolve_dtypes((*dts, None))
    except (TypeError, ValueError):
        return None  # the host path raises numpy's error
    ins, out = loop[:-1], loop[-1]
    if any(d != ins[0] for d in ins[1:]):
        return None
    return ins[0], out


def _expression(name: str, lt: np.dtype) -> str | None:
    forms = EXPRESSIONS.get(name)
    if forms is None:
        return None
    kind = {"b": "b", "i": "i", "u": "u", "f": "f"}.get(lt.kind)
    return forms.get(kind or "") or forms.get("*")


def _source(expr: str, out_t: str, loop_t: str, kinds: list[tuple[str, str]], ndim: int,
            contiguous: bool, bools: tuple[bool, bool] = (False, False), fp64: bool = False,
            convert: bool = True) -> str:
    """OpenCL C for ``out = expr(a, b, ...)``; ``kinds`` per input: (``"array"`` or
    ``"scalar"``, its stored C type); ``bools``: whether the loop type and the result type
    are ``bool`` (numpy converts to bool by ``!= 0``, where a C cast to ``uchar`` would
    truncate 0.5 to 0 and wrap 256 to 0); ``fp64``: whether the device has ``double``;
    ``convert``: operands are converted to the loop type (else loaded as they are)."""
    def load(v: str, i: str, st: str) -> str:
        if bools[0]:
            return f"(p{v}[{i}] != 0)"
        return _conv(f"p{v}[{i}]", st, loop_t) if convert else f"p{v}[{i}]"

    u = _UNSIGNED[loop_t]
    w = ("ulong" if loop_t in ("long", "ulong") else "uint") if u != loop_t or \
        loop_t.startswith("u") else loop_t
    bits = {"char": 8, "uchar": 8, "short": 16, "ushort": 16, "int": 32, "uint": 32,
            "long": 64, "ulong": 64}.get(loop_t, 0)
    names = "abc"
    params = ["const long n", f"__global {out_t} *out", "const long o_off"]
    if not contiguous:
        params += [f"const long o_s{k}" for k in range(ndim)]
        params += [f"const long d{k}" for k in range(ndim)]
    loads = []
    for j, (kind, st) in enumerate(kinds):
        v = names[j]
        if kind == "scalar":
            params.append(f"const {loop_t} {v}")
            continue
        params += [f"__global const {st} *p{v}", f"const long {v}_off"]
        if contiguous:
            params.append(f"const long {v}_s0")  # 1 or 0 (broadcast)
            at = load(v, f"{v}_off + i * {v}_s0", st)
            loads.append(f"    const {loop_t if convert else st} {v} = {at};")
        else:
            params += [f"const long {v}_s{k}" for k in range(ndim)]
            at = load(v, v + "_i", st)
            loads.append(f"    const {loop_t if convert else st} {v} = {at};")
    body = ["    const long i = (long)get_global_id(0);", "    if (i >= n) return;"]
    if contiguous:
        store = "out[o_off + i]"
    else:
        arrays = ["o"] + [names[j] for j, (k, _) in enumerate(kinds) if k == "array"]
        body.append("    long rest_ = i, ix_;")  # not r or c: operand c is a name
        body += [f"    long {v}_i = {v}_off;" for v in arrays]
        for k in reversed(range(ndim)):
            body.append(f"    ix_ = rest_ % d{k}; rest_ /= d{k};")
            body += [f"    {v}_i += ix_ * {v}_s{k};" for v in arrays]
        store = "out[o_i]"
    e = expr.replace("BITS", str(bits))
    helpers = []
    for h, text in HELPERS.items():
        if h in e:
            helpers.append(text.replace("_T", "_" + loop_t))
            e = e.replace(h, h.replace("_T", "_" + loop_t))
    value = f"({e}) != 0" if bools[1] else e
    code = e + "".join(helpers)
    exact = _exact_macros(loop_t, fp64) if "FDIV" in code or "FSQRT" in code else ""
    head = ""
    if "double" in (out_t, loop_t) or "double" in exact or \
            any(st == "double" for _, st in kinds):
        head = "#pragma OPENCL EXTENSION cl_khr_fp64 : enable\n"
    prelude = f"#define T {loop_t}\n#define U {u}\n#define W {w}\n{exact}"
    return (head + prelude + "\n".join(helpers) + "\n__kernel void ew(" + ", ".join(params)
            + ") {\n" + "\n".join(body + loads) + f"\n    {store} = "
            + (f"({out_t})({value})" if bools[1] else _conv(f"({value})", loop_t, out_t))
            + ";\n}\n")


class _Plan:
    """What a launch of one element-wise kernel needs that depends only on types and
    layouts (cached): the kernel, and the axes and element strides it walks."""

    __slots__ = ("kernel", "contiguous", "dims", "strides", "extents", "n")

    def __init__(self, kernel: Any, contiguous: bool, dims: tuple[int, ...],
                 strides: Sequence[tuple[int, ...]], extents: list[tuple[int, int]], n: int):
        self.kernel, self.contiguous, self.dims = kernel, contiguous, dims
        self.strides, self.extents, self.n = strides, extents, n


_PLANS: dict[tuple[Any, ...], _Plan] = {}


def _extent(shape: tuple[int, ...], strides: tuple[int, ...], item: int) -> tuple[int, int]:
    """Bytes before and after the first element that a view of ``shape`` and byte
    ``strides`` reaches: ``[offset + lo, offset + hi)``."""
    return extent(0, shape, strides, item)


def _plan(dev: Device, expr: str, operands: list[Any], loop: np.dtype, out_dt: np.dtype,
          shape: tuple[int, ...], out: HostPtrArray, convert: bool = True) -> _Plan | None:
    nd = len(shape)
    oa = out._a
    item = oa.itemsize
    if any(st % item for st in oa.strides):
        return None
    strides = [tuple(st // item for st in oa.strides)]
    extents = [_extent(oa.shape, oa.strides, item)]
    kinds = []
    for x in operands:
        if type(x) is HPA:
            a = x._a
            xi = a.itemsize
            if any(st % xi for st in a.strides):
                return None
            pad = nd - a.ndim
            strides.append(tuple(0 if k < pad or a.shape[k - pad] == 1
                                 else a.strides[k - pad] // xi for k in range(nd)))
            extents.append(_extent(a.shape, a.strides, xi))
            kinds.append(("array", c_type(a.dtype)))
        else:
            kinds.append(("scalar", c_type(loop)))
    dims, sts = _layout(shape, strides)
    contiguous = len(dims) <= 1 and sts[0] in ((), (1,)) and \
        all(st in ((), (0,), (1,)) for st in sts[1:])
    src = _source(expr, c_type(out_dt), c_type(loop), kinds, 1 if contiguous else len(dims),
                  contiguous, (loop.kind == "b", out_dt.kind == "b"), supports(dev, _FLOAT64),
                  convert)
    if contiguous:
        sts = tuple((st[0] if st else 0,) for st in sts)
    return _Plan(compiled(dev, src, "ew"), contiguous, dims, sts, extents, math.prod(shape))


def run(dev: Device, name: str, expr: str, operands: list[Any], loop: np.dtype,
        out_dt: np.dtype, shape: tuple[int, ...], out: HostPtrArray | None = None,
        convert: bool = True) -> HostPtrArray | None:
    """``out = expr(*operands)`` on ``dev`` element by element (broadcast to ``shape``):
    operands are HostPtrArrays (converted to ``loop`` when loaded, unless not ``convert``)
    or numpy scalars of type ``loop``.  ``out`` (in place) or a new pooled result of
    ``out_dt``.  ``None`` where an operand can't be a kernel operand (then nothing
    happened)."""
    new: tuple[Any, ...] = ()
    if out is None:
        if not math.prod(shape):
            return None
        if fusion.ENABLED[0]:  # a pending expression (hostarray._compute.fusion)
            r = fusion.node(dev, name, expr, operands, loop, out_dt, shape, convert)
            if r is not None:
                return r
        out = pool.result(dev, shape, out_dt)
        mode, new = "w", (out._s,)
    else:
        oa = out._a
        if not oa.size:
            return None
        if fusion.ENABLED[0] and out._s.coh is not None and out._s.coh.deferred:
            r = fusion.in_place(dev, name, expr, operands, loop, out, convert)
            if r is not None:  # out is a pending result: its pending launch computes this
                return r
        # write-only only where the view covers every byte of its range: the bytes between
        # a strided view's elements are not written, so the device must get them first
        # (else the whole range would be recorded device-newest over stale bytes)
        dense = oa.flags.c_contiguous or oa.flags.f_contiguous
        mode = "rw" if not dense or any(x is out for x in operands) else "w"
    oa = out._a
    key = (dev, expr, loop, out_dt, shape, oa.strides, convert,
           *[(x._a.dtype, x._a.shape, x._a.strides) if type(x) is HPA else None
             for x in operands])
    plan = _PLANS.get(key)
    if plan is None:
        plan = _plan(dev, expr, operands, loop, out_dt, shape, out, convert)
        if plan is None:
            return None
        _PLANS[key] = plan
    sts, ext = plan.strides, plan.extents
    o = _arg(out, dev, mode, sts[0], ext[0])
    if o is None:
        return None
    call: list[Any] = [plan.n, o, o.offset]
    if not plan.contiguous:
        call += [*sts[0], *plan.dims]
    arrays = [o]
    j = 1  # the plan's layouts: the output's, then each array operand's (not the scalars')
    for x in operands:
        if type(x) is not HPA:
            call.append(int(x) if type(x) is np.bool_ else x)  # declared uchar
            continue
        if x is out:
            v = o  # in place: one operand, read and written (mode "rw")
        else:
            w = _arg(x, dev, "r", sts[j], ext[j])
            if w is None:
                return None
            arrays.append(w)
            v = w
        call += [v, v.offset, *sts[j]]
        j += 1
    enqueue(dev, plan.kernel, name, plan.n, call, arrays, device_op=True, new=new)
    return out


def _arg(x: HostPtrArray, dev: Device, mode: str, strides: tuple[int, ...],
         extent: tuple[int, int]) -> ArrayArg | None:
    """``x`` as a kernel operand (see :func:`array_arg`), its layout known from the plan."""
    off = x._bytes()[0]
    item = x._a.itemsize
    if off % item or not usable(x._s, dev):
        return None
    return ArrayArg(x, off // item, strides, off + extent[0], off + extent[1], mode)


def copy_on(x: HostPtrArray, dev: Device) -> HostPtrArray | None:
    """A copy of ``x`` on ``dev`` (C order, a new device-newest array; the kernel of
    ``astype`` to its own type), or ``None``: the device lacks its type, or ``x`` can't be
    a kernel operand."""
    dt = x._a.dtype
    if not supports(dev, dt):
        return None
    return run(dev, "astype", "a", [x], dt, dt, x._a.shape)


def elementwise(name: str, dev: Device, operands: tuple[Any, ...],
                out: HostPtrArray | None = None) -> HostPtrArray | None:
    """The namespace's element-wise ``name`` on ``dev`` (where :mod:`hostarray._placement`
    sends it), or ``None``: the host path must compute it (counted as a host fallback)."""
    r = _elementwise(name, dev, operands, out)
    if r is None:
        COUNTERS.add(host_fallbacks=1)
    return r


_TYPED: dict[tuple[Any, ...], tuple[np.dtype, np.dtype, str, tuple[int, ...]] | None] = {}


def _typed(name: str, dev: Device, operands: tuple[Any, ...], out: HostPtrArray | None
           ) -> tuple[np.dtype, np.dtype, str, tuple[int, ...]] | None:
    """(loop type, result type, C expression, result shape) of ``name`` on ``operands``,
    or ``None`` when the types or shapes keep it on the host (decided from types and
    shapes alone: cached)."""
    loop = _loop(name, operands)
    if loop is None:
        return None  # (an int64 with uint64 comparison: _mixed_comparison, uncached)
    lt, out_dt = loop
    if not (supports(dev, lt) and supports(dev, out_dt)):
        return None
    if any(type(x) is HPA and not supports(dev, x._a.dtype) for x in operands):
        return None
    expr = _expression(name, lt)
    if expr is None:
        return None
    if name == "pow" and lt.kind in "iu" and type(operands[1]) is HPA and \
            operands[1]._a.dtype.kind not in "ub":
        return None  # numpy refuses negative integer powers, by value: signed arrays here
    try:
        shape = np.broadcast_shapes(*(x._a.shape for x in operands if type(x) is HPA))
    except ValueError:
        return None
    if out is not None:
        # numpy's in-place rule: the result type cast to out's "same_kind"
        if not np.can_cast(out_dt, out._a.dtype, "same_kind"):
            return _CAST_ERROR
        if shape != out._a.shape or not supports(dev, out._a.dtype):
            return None
        out_dt = out._a.dtype
    return lt, out_dt, expr, shape


_POWERS = {0.5: "FSQRT(a)", -1.0: "FDIV((T)1, a)", 2.0: "a * a"}
_CAST_ERROR: Any = ("cast error",)  # _typed's answer for an in-place result out can't hold


def _raise_cast_error(name: str, operands: tuple[Any, ...], out: Any) -> None:
    """Raise numpy's casting error of ``out = name(*operands)`` in place, from one-element
    stand-ins: the values don't matter, and nothing is moved or counted for an error."""
    stand_ins = [np.zeros((1,) * x._a.ndim, x._a.dtype) if type(x) is HPA else x
                 for x in operands]
    target = np.zeros((1,) * out._a.ndim, out._a.dtype)
    with np.errstate(all="ignore"):
        if name == "floor_divide":  # the host path's own function is no ufunc: it copies
            np.copyto(target, _RESOLVE[name](*stand_ins), casting="same_kind")
        else:
            _RESOLVE[name](*stand_ins, out=target)


def _elementwise(name: str, dev: Device, operands: tuple[Any, ...],
                 out: HostPtrArray | None) -> HostPtrArray | None:
    key = (name, dev, out._a.dtype if out is not None else None,
           out._a.shape if out is not None else None,
           *[(x._a.dtype, x._a.shape) if type(x) is HPA else type(x) for x in operands])
    try:
        typed = _TYPED[key]
    except KeyError:
        typed = _TYPED[key] = _typed(name, dev, operands, out)
    if typed is None:
        if name not in EXPRESSIONS:
            raise RuntimeError(f"hostarray: internal error: the device path has no "
                               f"element-wise operation {name!r}; please report it")
        return _mixed_comparison(name, dev, operands, out)
    if typed is _CAST_ERROR:
        _raise_cast_error(name, operands, out)
        return None
    lt, out_dt, expr, shape = typed
    vals: list[Any] = []
    for x in operands:
        if type(x) is HPA:
            vals.append(x)
            continue
        if type(x) is int and lt.kind != "f" and not -_C_LONG <= x < _C_LONG:
            return None  # numpy raises or not by the path it takes (bool + 2**63 raises)
        # (a float loop converts any int as numpy does: 2**70 exactly rounded, 2**200 to
        # float32 inf, 2**1100 an OverflowError, which the host path raises)
        try:  # numpy's own conversion: out-of-range values raise on the host path
            v = lt.type(x)
        except (OverflowError, ValueError, TypeError):
            return None
        vals.append(v)
    if name == "pow" and type(operands[1]) is not HPA:
        if lt.kind in "iu" and operands[1] < 0:
            return None  # numpy refuses negative integer powers, by value
        if lt.kind == "f":
            # numpy's scalar fast paths: x ** 0.5 is sqrt (nan for -inf, -0.0 for -0.0),
            # x ** -1 the exact reciprocal, x ** 2 the square
            expr = _POWERS.get(float(operands[1]), expr)
    if out is not None:
        if not out._a.flags.writeable:
            return None
        for i, x in enumerate(vals):
            if type(x) is HPA and x is not out and overlaps_badly(out, x):
                # an operand sharing bytes with the output (x -= x[0], x[1:] += x[:-1]):
                # copied on the device first, as numpy copies such a source
                x = copy_on(x, dev)
                if x is None:
                    return None
                vals[i] = x
    return run(dev, name, expr, vals, lt, out_dt, shape, out)


_COMPARISONS = {"equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=",
                "greater": ">", "greater_equal": ">="}
_INT64, _UINT64 = np.dtype(np.int64), np.dtype(np.uint64)
_C_LONG = 2**63


def _mixed_comparison(name: str, dev: Device, operands: tuple[Any, ...],
                      out: HostPtrArray | None) -> HostPtrArray | None:
    """A comparison of an int64 array with a uint64 array (numpy's loop keeps both types:
    ``-1 < 2**64 - 1`` is True), each operand loaded as it is; else ``None``."""
    op = _COMPARISONS.get(name)
    if op is None or out is not None or any(type(x) is not HPA for x in operands):
        return None
    types = tuple(x._a.dtype for x in operands)
    if types == (_INT64, _UINT64):
        expr = f"cmp_su(a, b) {op} 0"
    elif types == (_UINT64, _INT64):
        expr = f"0 {op} cmp_su(b, a)"  # a op b, with b the signed one
    else:
        return None
    try:
        shape = np.broadcast_shapes(*(x._a.shape for x in operands))
    except ValueError:
        return None
    return run(dev, name, expr, list(operands), _INT64, np.dtype(bool), shape, convert=False)


# What the device path computes, for hostarray._compute.device_functions() (the docs'
# coverage table): every name of the table, and what of each stays on the host.
_ON_HOST = "float16, complex on host"
register(EXPRESSIONS, _ON_HOST)
register(["reciprocal"], "integers, " + _ON_HOST)
register(["pow"], "integer array exponents, " + _ON_HOST)
