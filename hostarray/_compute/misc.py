"""Device operations that are not arithmetic: conversions, selection, copies, fills and
writes into views.

Each runs as one generated element-wise kernel (:func:`hostarray._compute.elementwise.run`)
and moves no byte between host and device: the result (or the written view) is newest
on the device, and the host acquires it only when it looks.  :mod:`hostarray._placement`
decides that an operation runs here (and on which device); a function returns ``None``
where the device can't do it, the caller then runs its unchanged host path, and
``ha.stats().host_fallbacks`` counts the operations that came back.

Conversions are numpy's: ``astype``, a fill value or an assigned array of another type
is converted as by a C cast (``(T)a``), which is what numpy does element by element,
except for a ``bool`` target, which is ``a != 0`` (so NaN and 0.5 are ``True``).  The
standard leaves float to integer conversions of NaN, infinities and out-of-range values
undefined; there the device keeps its own answer (OpenCL leaves them to the
implementation), which may differ from numpy's on the same machine.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

from .._array import HostPtrArray, _new
from .._devices import Device
from .._stats import COUNTERS
from ..errors import Refused
from . import PUBLISH_LIMIT, pool, register
from .elementwise import copy_on, run
from .launch import array_arg, compiled, enqueue, overlaps_badly, supports

__all__ = ["astype", "clip", "copy", "fill", "setitem", "where"]

HPA = HostPtrArray


def _fallback(r: Any) -> Any:
    if r is None:
        COUNTERS.add(host_fallbacks=1)
    return r


def _convert(src: np.dtype, dst: np.dtype) -> str:
    """The expression converting the loaded ``a`` (of ``src``) to ``dst`` on the store:
    numpy's ``a != 0`` for a ``bool`` target (a C cast of 0.5 would give 0)."""
    return "a != 0" if dst.kind == "b" and src.kind != "b" else "a"


# -- conversions and copies ----------------------------------------------------------------

def astype(x: HostPtrArray, dt: np.dtype, dev: Device) -> HostPtrArray | None:
    """``x`` converted to ``dt`` on ``dev`` (a new device-newest array; numpy's
    conversion, see the module), or ``None``: the host converts it."""
    return _fallback(_astype(x, dt, dev))


def _astype(x: HostPtrArray, dt: np.dtype, dev: Device) -> HostPtrArray | None:
    src = x._a.dtype
    if not (supports(dev, src) and supports(dev, dt)):
        return None
    return run(dev, "astype", _convert(src, dt), [x], src, dt, x._a.shape)


def copy(x: HostPtrArray, dev: Device) -> HostPtrArray | None:
    """A copy of ``x`` on ``dev`` (C order, device-newest), or ``None``."""
    return astype(x, x._a.dtype, dev)


# -- where and clip ------------------------------------------------------------------------

def _probe(v: Any) -> Any:
    """What stands for operand ``v`` in numpy's type resolution: a 0-d array of an
    array's type, a Python scalar itself (weak, and its value checked as numpy does)."""
    return np.zeros((), v._a.dtype) if type(v) is HPA else v


def _scalar(v: Any, dt: np.dtype) -> Any:
    """Python scalar ``v`` as a numpy scalar of ``dt`` (``None`` where numpy refuses the
    conversion: the host path then gives numpy's own answer or error)."""
    try:
        return np.asarray(v, dtype=dt)[()]
    except (OverflowError, ValueError, TypeError):
        return None


def _shape(operands: tuple[Any, ...]) -> tuple[int, ...] | None:
    try:
        return np.broadcast_shapes(*(v._a.shape for v in operands if type(v) is HPA))
    except ValueError:
        return None


def _operands(values: tuple[Any, ...], dt: np.dtype, dev: Device) -> list[Any] | None:
    """The kernel operands: arrays as they are (of a supported type), scalars as numpy
    scalars of the loop type ``dt``."""
    out: list[Any] = []
    for v in values:
        if type(v) is HPA:
            if not supports(dev, v._a.dtype):
                return None
            out.append(v)
            continue
        s = _scalar(v, dt)
        if s is None:
            return None
        out.append(s)
    return out


def where(condition: HostPtrArray, x1: Any, x2: Any, dev: Device) -> HostPtrArray | None:
    """``where(condition, x1, x2)`` on ``dev`` (numpy's result type), or ``None``."""
    return _fallback(_where(condition, x1, x2, dev))


def _where(condition: HostPtrArray, x1: Any, x2: Any, dev: Device) -> HostPtrArray | None:
    if type(condition) is not HPA:
        return None
    try:
        dt = np.where(np.zeros((), bool), _probe(x1), _probe(x2)).dtype
    except (TypeError, ValueError, OverflowError):
        return None
    cdt = condition._a.dtype
    # the condition is loaded converted to the loop type: that must keep every nonzero
    # value nonzero (bool, or a safe cast; a float condition in an integer loop would not)
    if not (cdt.kind == "b" or np.can_cast(cdt, dt, "safe")) or not supports(dev, dt):
        return None
    ops = _operands((condition, x1, x2), dt, dev)
    shape = _shape((condition, x1, x2))
    if ops is None or shape is None or math.prod(shape) == 0:
        return None
    return run(dev, "where", "(a != 0) ? b : c", ops, dt, dt, shape)


def _max(a: str, b: str, kind: str, keep: bool) -> str:
    """numpy's maximum for clip: NaN wins; on a tie (``-0.0`` and ``0.0``) ``a`` where
    ``keep`` (numpy's clip with both bounds), else ``b`` (its ``maximum``, which a clip
    with one bound is)."""
    if kind == "f":
        return f"(({a} {'>=' if keep else '>'} {b} || isnan({a})) ? {a} : {b})"
    return f"({a} | {b})" if kind == "b" else f"({a} >= {b} ? {a} : {b})"


def _min(a: str, b: str, kind: str, keep: bool) -> str:
    if kind == "f":
        return f"(({a} {'<=' if keep else '<'} {b} || isnan({a})) ? {a} : {b})"
    return f"({a} & {b})" if kind == "b" else f"({a} <= {b} ? {a} : {b})"


def clip(x: HostPtrArray, lo: Any, hi: Any, dev: Device) -> HostPtrArray | None:
    """``clip(x, lo, hi)`` on ``dev``: computed in the type numpy's ``clip`` resolves and
    converted to ``x``'s data type (as the host path does), or ``None``."""
    return _fallback(_clip(x, lo, hi, dev))


def _clip(x: HostPtrArray, lo: Any, hi: Any, dev: Device) -> HostPtrArray | None:
    xdt = x._a.dtype
    if lo is None and hi is None:
        return _astype(x, xdt, dev)
    try:
        dt = np.clip(np.zeros((), xdt), _probe(lo), _probe(hi)).dtype
    except (TypeError, ValueError, OverflowError):
        return None
    if not (supports(dev, dt) and supports(dev, xdt)):
        return None
    values = (x,) + tuple(v for v in (lo, hi) if v is not None)
    ops = _operands(values, dt, dev)
    shape = _shape(values)
    if ops is None or shape is None or math.prod(shape) == 0:
        return None
    kind = dt.kind
    if lo is None:
        expr = _min("a", "b", kind, False)
    elif hi is None:
        expr = _max("a", "b", kind, False)
    else:
        # numpy keeps x on a tie (-0.0 against 0.0) when both bounds are constant through its
        # inner loop (Python scalars, 0-d arrays: stride 0); otherwise the bound wins its
        # ties, as with one bound. Which a size-1 bound gets depends on numpy's iterator, so
        # the sign of a zero at such a tie is not promised (the standard leaves it open).
        keep = all(type(v) is not HPA or v.ndim == 0 for v in (lo, hi))
        expr = _min(_max("a", "b", kind, keep), "c", kind, keep)
    return run(dev, "clip", expr, ops, dt, xdt, shape)


# -- creation ------------------------------------------------------------------------------

_EMPTY = object()  # fill(..., value=EMPTY): no values, only device-newest


def fill(dev: Device, shape: tuple[int, ...], dt: np.dtype, value: Any = _EMPTY
         ) -> HostPtrArray | None:
    """A new array of ``shape`` and ``dt`` on ``dev`` filled there with ``value`` (a
    scalar, or a 0-d HostPtrArray), its newest data on the device (nothing to publish
    when a kernel uses it); without ``value`` uninitialised but device-newest too (a
    launch that writes nothing marks it).  ``None`` where the device can't (the host
    path then allocates and fills, and reports a failed allocation in its own words)."""
    if math.prod(shape) == 0:
        return None  # nothing to fill: the host's empty array costs nothing
    return _fallback(_fill(dev, shape, dt, value))


def _fill(dev: Device, shape: tuple[int, ...], dt: np.dtype, value: Any
          ) -> HostPtrArray | None:
    if not supports(dev, dt):
        return None
    if value is _EMPTY:
        return _empty(dev, shape, dt)
    if type(value) is HPA:
        if value._device is not dev or value._a.ndim != 0 or not supports(dev, value._a.dtype):
            return None
        src = value._a.dtype
        return _run_new(dev, "full", _convert(src, dt), [value], src, dt, shape)
    tmp = np.empty((), dt)
    try:
        tmp[()] = value  # numpy's conversion, as ``a.fill(value)`` on the host
    except (OverflowError, ValueError, TypeError):
        return None
    return _run_new(dev, "full", "a", [tmp[()]], dt, dt, shape)


def _run_new(dev: Device, name: str, expr: str, ops: list[Any], loop: np.dtype,
             dt: np.dtype, shape: tuple[int, ...]) -> HostPtrArray | None:
    try:
        return run(dev, name, expr, ops, loop, dt, shape)
    except (Refused, MemoryError):  # no pooled storage: the host allocates (and says why)
        return None


_TOUCH = "__kernel void touch(__global uchar *p) { }\n"


def _empty(dev: Device, shape: tuple[int, ...], dt: np.dtype) -> HostPtrArray | None:
    try:
        r = pool.result(dev, shape, dt)
    except (Refused, MemoryError):
        return None
    o = array_arg(r, dev, "w")
    if o is None:
        return None
    # a write-only launch that writes nothing: the bytes are the device's from now on, so a
    # kernel using them publishes nothing (their garbage needs no copy)
    enqueue(dev, compiled(dev, _TOUCH, "touch"), "empty", 1, [o], new=(r._s,))
    COUNTERS.add(device_ops=1)
    return r


# -- x[key] = value --------------------------------------------------------------------------

def _on_device(v: HostPtrArray, dev: Device) -> bool:
    """Whether a launch on ``dev`` can use the byte span of ``v`` moving nothing, or at
    most a small publish: every byte current on ``dev`` or on the host, and the
    host-newest ones at most :data:`~hostarray._compute.PUBLISH_LIMIT` bytes."""
    s = v._s
    coh = s.coh
    _, lo, hi = v._bytes()
    if coh is None or dev not in s.buffers:
        return hi - lo <= PUBLISH_LIMIT
    # what the launch would publish (the host-newest parts only); nothing may have to
    # come from another device first
    with s.lock:  # another thread may be changing the map
        acquires, publishes = coh.plan_device_read(dev, lo, hi)
    return not acquires and sum(b - a for a, b, _ in publishes) <= PUBLISH_LIMIT


def setitem(out: HostPtrArray, value: Any, dev: Device) -> HostPtrArray | None:
    """``out[...] = value`` on ``dev`` (``out``: the view of an array that ``x[key] =
    value`` writes, on ``dev``; ``value`` a real scalar or a HostPtrArray on ``dev`` whose
    bytes are current there, or host-newest and small: published), with no acquire of the
    array.  Only the written view's bytes change state (they become device-newest); the
    rest of the array keeps its own.  ``None`` where the host must write it."""
    return _fallback(_setitem(out, value, dev))


def _setitem(out: HostPtrArray, value: Any, dev: Device) -> HostPtrArray | None:
    a = out._a
    xdt = a.dtype
    if not supports(dev, xdt):
        return None
    gaps = not (a.flags.c_contiguous or a.flags.f_contiguous)
    if gaps:
        # the launch marks the view's whole byte span device-newest, the bytes between
        # its elements too: the device must hold them first (published if small)
        if not _on_device(out, dev):
            return None
    if type(value) is HPA:
        y = _source(value, a.shape, dev)
        if y is None:
            return None
        if overlaps_badly(out, y):
            y = copy_on(y, dev)  # a device copy first, as numpy copies
            if y is None:
                return None
        ydt = y._a.dtype
        ops: list[Any] = [y]
        expr, loop = _convert(ydt, xdt), ydt
    else:
        tmp = np.empty((), xdt)
        try:
            tmp[()] = value  # numpy's conversion of the value (and its errors, on the host)
        except (OverflowError, ValueError, TypeError):
            return None
        ops, expr, loop = [tmp[()]], "a", xdt
    if gaps:
        ops.append(out)  # read too (never used): the launch is "rw", publishing the gaps
    return run(dev, "setitem", expr, ops, loop, xdt, a.shape, out)


def _source(y: HostPtrArray, shape: tuple[int, ...], dev: Device) -> HostPtrArray | None:
    """``y`` as the source of a write of ``shape`` (leading length-1 axes beyond
    ``shape`` dropped, as numpy does), or ``None`` (not broadcastable, a type the device
    lacks, bytes split between sides or host-newest and large)."""
    b = y._a
    extra = b.ndim - len(shape)
    if extra > 0:
        if any(n != 1 for n in b.shape[:extra]):
            return None
        y = _new(b[(0,) * extra + (...,)], y._s, y._device)  # a view, 0-d too
    try:
        if np.broadcast_shapes(y._a.shape, shape) != shape:
            return None
    except ValueError:
        return None
    if not supports(dev, y._a.dtype):
        return None
    return y if _on_device(y, dev) else None


# what the device path computes, for hostarray._compute.device_functions() (the docs' tables)
register(["astype", "where", "clip"], "float16, complex on host")
register(["asarray"], "copies (copy=True) of device arrays; float16, complex on host")
register(["empty", "zeros", "ones", "full", "empty_like", "zeros_like", "ones_like",
          "full_like"], "with device= a mapped or copied device, from the threshold")
