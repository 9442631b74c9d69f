# Over 700 lines: one translator per numpy spelling, each taking numpy's own signature.
"""numpy's spellings of the namespace's functions: ``np.mean(x, axis=0)``, ``np.exp(x)``,
``np.add.reduce(x)``, ``x.sum()`` translated into the namespace's calls.

:func:`hostarray._interop.array_function` and :func:`~hostarray._interop.array_ufunc` ask
here first.  A numpy call listed in :data:`FUNCTIONS`, :data:`UFUNCS`, :data:`REDUCE` or
:data:`ACCUMULATE` whose arguments have the same meaning in the namespace becomes the
namespace's call (``ddof`` its ``correction``, ``np.dot`` of N-D arrays a ``tensordot``,
``out=`` a device write into ``out`` ...): it runs where the namespace's functions run,
on the device when :func:`hostarray._placement.try_device` says so, and on the host
otherwise (``initial=`` of a sum or a max joins the result as a scalar operand; a
ufunc's ``where=`` with a device ``out=`` is a ``where`` into it).  A call whose
arguments the namespace can't give numpy's answer for (a reduction's ``where=``, a
``dtype=`` it has no meaning for, numpy arrays among the operands ...) is numpy's own
on the host data, as every other numpy function is; where
the placement rule would have sent it to a device, ``ha.stats().host_fallbacks`` counts
it (:func:`hostarray._placement.refused`).

The results rule is the namespace's, on both paths: a full reduction (``np.sum(x)``,
``x.max()``, ``np.add.reduce(x, axis=None)``) is a 0-d HostPtrArray, never a numpy
scalar, so that a reduction on the device moves nothing until the value is looked at
(``float(s)``, ``if s > 0:``, ``range(s)``, ``f"{s:.3f}"``).  A ufunc *called* on 0-d
operands still returns numpy's scalar (numpy's rule for ``np.sin(x[0])``): those calls
are numpy's own.
"""

from __future__ import annotations

import operator
from collections.abc import Callable
from typing import Any

import numpy as np

from ._api import creation as _cr
from ._api import data_types as _dt
from ._api import elementwise as _ew
from ._api import linalg_main as _la
from ._api import manipulation as _mp
from ._api import searching as _se
from ._api import statistical as _st
from ._api import utility as _ut
from ._array import HostPtrArray
from ._placement import refused, try_device

__all__ = ["FUNCTIONS", "UFUNCS", "REDUCE", "ACCUMULATE", "function", "ufunc_call",
           "ufunc_reduce", "ufunc_accumulate", "spellings"]

HPA = HostPtrArray
_ABSENT: Any = object()  # an argument that was not passed
_BAD: Any = object()  # an argument the namespace has no meaning for: numpy's own call
_SCALARS = (bool, int, float)
Thunk = Callable[[], Any]


# -- arguments ----------------------------------------------------------------------------------

def _axis(axis: Any) -> Any:
    """numpy's ``axis=`` as the namespace takes it (``None``, an int, a tuple of ints), or
    :data:`_BAD`."""
    if axis is None:
        return None
    if isinstance(axis, (bool, np.bool_)):
        return _BAD  # numpy refuses a bool axis: its own error
    if type(axis) is tuple:
        try:
            return tuple(operator.index(a) for a in axis)
        except TypeError:
            return _BAD
    try:
        return operator.index(axis)
    except TypeError:
        return _BAD


def _int_axis(axis: Any) -> Any:
    ax = _axis(axis)
    return ax if ax is None or type(ax) is int else _BAD


def _flag(v: Any) -> Any:
    """``keepdims=``: a bool (numpy's ``<no value>`` default is absent here: ``False``)."""
    if v is _ABSENT:
        return False
    if isinstance(v, (bool, np.bool_)):
        return bool(v)
    return _BAD


def _dtype(dtype: Any) -> Any:
    if dtype is None:
        return None
    try:
        return np.dtype(dtype)
    except TypeError:
        return _BAD


def _same_device(out: Any, x: HostPtrArray) -> bool:
    return type(out) is HPA and out._device is x._device


def _into(out: HostPtrArray | None, r: HostPtrArray) -> Any:
    """``r`` written into ``out`` (numpy's ``out=``; on the device where ``r`` is newest
    there), or :data:`NotImplemented` where ``out`` can't take ``r`` exactly (another
    shape or data type: numpy's own call then gives numpy's cast or error; ``out`` is
    untouched until then)."""
    if out is None:
        return r
    if out._a.shape != r._a.shape or out._a.dtype != r._a.dtype:
        return NotImplemented
    out[...] = r
    return out


def _hpa(*vs: Any) -> bool:
    return all(type(v) is HPA for v in vs)


# -- numpy's functions ----------------------------------------------------------------------------
# Each translator takes numpy's signature (a call numpy would refuse raises TypeError while
# binding: numpy's own call then raises numpy's error) and answers a thunk computing the
# namespace's call, or None: numpy's own call.

def _reduction(fn: Any, a: Any, out: Any, **kw: Any) -> Thunk | None:
    if type(a) is not HPA or any(v is _BAD for v in kw.values()):
        return None
    if out is not None and not _same_device(out, a):
        return None
    return lambda: fn(a, **kw) if out is None else _into(out, fn(a, **kw))


def _initial_fits(initial: Any, a: HostPtrArray, dtype: Any) -> bool:
    """Whether ``initial=`` can join the reduction's result as a Python scalar operand with
    numpy's answer: a Python number of the result's kind (an ``int`` for integer and bool
    results, an ``int`` or ``float`` for floats), the input not empty (numpy's answer for
    an empty input is ``initial`` itself)."""
    if a._a.size == 0 or dtype is _BAD or type(initial) not in (int, float):
        return False
    kind = (a._a.dtype if dtype is None else dtype).kind
    return kind == "f" or (kind in "biu" and type(initial) is int)


def _with_initial(thunk: Thunk | None, combine: Any, initial: Any, out: Any) -> Thunk | None:
    """``thunk``'s reduction combined with numpy's ``initial=`` (``combine(r, initial)``:
    ``add`` for a sum, ``maximum`` for a max ...), then written into ``out``."""
    if thunk is None or initial is _ABSENT:
        return thunk
    if out is not None:
        return None  # (rare: numpy's own call)

    def run() -> Any:
        r = thunk()
        return combine(r, initial) if r._a.dtype.kind != "b" else NotImplemented
    return run


def _sum_like(fn: Any, combine: Any) -> Callable[..., Thunk | None]:
    def translate(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
                  keepdims: Any = _ABSENT, initial: Any = _ABSENT,
                  where: Any = _ABSENT) -> Thunk | None:
        if where is not _ABSENT and where is not True:
            return None
        dt = _dtype(dtype)
        if initial is not _ABSENT and (type(a) is not HPA or not _initial_fits(initial, a, dt)):
            return None
        thunk = _reduction(fn, a, out if initial is _ABSENT else None, axis=_axis(axis),
                           dtype=dt, keepdims=_flag(keepdims))
        return _with_initial(thunk, combine, initial, out)
    return translate


def _extremum(fn: Any, combine: Any) -> Callable[..., Thunk | None]:
    def translate(a: Any, axis: Any = None, out: Any = None, keepdims: Any = _ABSENT,
                  initial: Any = _ABSENT, where: Any = _ABSENT) -> Thunk | None:
        if where is not _ABSENT and where is not True:
            return None
        if initial is not _ABSENT and (type(a) is not HPA
                                       or not _initial_fits(initial, a, None)
                                       or (a._a.dtype.kind in "iu" and not _in_range(initial,
                                                                                    a))):
            return None
        thunk = _reduction(fn, a, out if initial is _ABSENT else None, axis=_axis(axis),
                           keepdims=_flag(keepdims))
        return _with_initial(thunk, combine, initial, out)
    return translate


def _in_range(v: int, a: HostPtrArray) -> bool:
    info = np.iinfo(a._a.dtype)
    return info.min <= v <= info.max


def _logical(fn: Any) -> Callable[..., Thunk | None]:
    def translate(a: Any, axis: Any = None, out: Any = None, keepdims: Any = _ABSENT, *,
                  where: Any = _ABSENT) -> Thunk | None:
        if where is not _ABSENT and where is not True:
            return None
        return _reduction(fn, a, out, axis=_axis(axis), keepdims=_flag(keepdims))
    return translate


def _arg(fn: Any) -> Callable[..., Thunk | None]:
    def translate(a: Any, axis: Any = None, out: Any = None, *,
                  keepdims: Any = _ABSENT) -> Thunk | None:
        return _reduction(fn, a, out, axis=_int_axis(axis), keepdims=_flag(keepdims))
    return translate


def _as_float(a: HostPtrArray, dt: Any) -> Any:
    """``a`` in the float type ``dt`` numpy's ``dtype=`` asks a mean to compute in, or
    :data:`_BAD` (another kind: numpy's own rules)."""
    if dt is None or dt is _BAD:
        return dt
    if dt.kind != "f":
        return _BAD
    return dt


def _moment(fn: Any) -> Callable[..., Thunk | None]:
    def translate(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
                  ddof: Any = 0, keepdims: Any = _ABSENT, *, where: Any = _ABSENT,
                  mean: Any = _ABSENT, correction: Any = _ABSENT) -> Thunk | None:
        if (where is not _ABSENT and where is not True) or mean is not _ABSENT \
                or type(a) is not HPA:
            return None
        if correction is not _ABSENT:
            if ddof != 0:
                return None  # numpy's ValueError
            ddof = correction
        if isinstance(ddof, (bool, np.bool_)) or not isinstance(ddof, (int, float)):
            return None
        return _cast_then(fn, a, _dtype(dtype), out, axis=_axis(axis), correction=ddof,
                          keepdims=_flag(keepdims))
    return translate


def _cast_then(fn: Any, a: HostPtrArray, dt: Any, out: Any, **kw: Any) -> Thunk | None:
    """``fn`` of ``a`` computed in the float type ``dt`` (numpy's ``dtype=`` of a mean,
    a variance: the input converted first, as numpy's loop converts each element)."""
    dt = _as_float(a, dt)
    if dt is _BAD or any(v is _BAD for v in kw.values()):
        return None
    if dt is None or dt == a._a.dtype:
        return _reduction(fn, a, out, **kw)
    if out is not None and not _same_device(out, a):
        return None

    def run() -> Any:
        r = fn(_dt.astype(a, dt), **kw)
        return r if out is None else _into(out, r)
    return run


def _mean_translate(a: Any, axis: Any = None, dtype: Any = None, out: Any = None,
                    keepdims: Any = _ABSENT, *, where: Any = _ABSENT) -> Thunk | None:
    if (where is not _ABSENT and where is not True) or type(a) is not HPA:
        return None
    return _cast_then(_st.mean, a, _dtype(dtype), out, axis=_axis(axis),
                      keepdims=_flag(keepdims))


def _cumulative(fn: Any) -> Callable[..., Thunk | None]:
    def translate(a: Any, axis: Any = None, dtype: Any = None,
                  out: Any = None) -> Thunk | None:
        ax, dt = _int_axis(axis), _dtype(dtype)
        if type(a) is not HPA or ax is _BAD or dt is _BAD:
            return None
        if out is not None and not _same_device(out, a):
            return None

        def run() -> Any:
            if ax is None:  # numpy's cumsum of no axis: of the flattened array
                r = fn(_mp.reshape(a, (-1,)), axis=0, dtype=dt)
            else:
                r = fn(a, axis=ax, dtype=dt)
            return r if out is None else _into(out, r)
        return run
    return translate


def _where(condition: Any, x: Any = _ABSENT, y: Any = _ABSENT) -> Thunk | None:
    if x is _ABSENT or y is _ABSENT:
        return None  # np.where(condition): nonzero
    if type(condition) is not HPA or condition._a.dtype.kind != "b":
        return None
    if not (type(x) is HPA or type(y) is HPA):
        return None
    if not all(type(v) is HPA or type(v) in _SCALARS for v in (x, y)):
        return None
    return lambda: _se.where(condition, x, y)


def _bound_fits(b: Any, dt: np.dtype) -> bool:
    """Whether ``np.clip``'s bound ``b`` leaves the result in ``x``'s type ``dt`` with its
    value exact (the namespace's clip keeps ``x``'s type; numpy's promotes)."""
    if b is None:
        return True
    if type(b) is HPA:
        return b._a.dtype == dt
    if type(b) is bool or type(b) not in _SCALARS:
        return False
    if dt.kind in "iu":
        if type(b) is not int:
            return False
        info = np.iinfo(dt)
        return info.min <= b <= info.max
    return dt.kind == "f"


def _clip(a: Any, a_min: Any = _ABSENT, a_max: Any = _ABSENT, out: Any = None, *,
          min: Any = _ABSENT, max: Any = _ABSENT, **kwargs: Any) -> Thunk | None:  # noqa: A002
    if type(a) is not HPA or kwargs:
        return None
    if (min is not _ABSENT and a_min is not _ABSENT) or (max is not _ABSENT
                                                         and a_max is not _ABSENT):
        return None  # numpy's error
    lo = a_min if min is _ABSENT else min
    hi = a_max if max is _ABSENT else max
    lo = None if lo is _ABSENT else lo
    hi = None if hi is _ABSENT else hi
    dt = a._a.dtype
    if dt.kind == "b" or not (_bound_fits(lo, dt) and _bound_fits(hi, dt)):
        return None
    if out is not None and not _same_device(out, a):
        return None
    return lambda: _into(out, _ew.clip(a, lo, hi)) if out is not None \
        else _ew.clip(a, lo, hi)


def _real(*vs: HostPtrArray) -> bool:
    return all(v._a.dtype.kind in "biuf" for v in vs)


def _dot(a: Any, b: Any, out: Any = None) -> Thunk | None:
    if not _hpa(a, b) or not _real(a, b) or out is not None:
        return None
    na, nb = a._a.ndim, b._a.ndim
    if na == 0 or nb == 0:
        return lambda: _ew.multiply(a, b)
    if nb <= 2 or na == 1:  # np.dot is matmul here (a stack of a's rows times b)
        return lambda: _la.matmul(a, b)
    return lambda: _la.tensordot(a, b, axes=((na - 1,), (nb - 2,)))


def _vdot(a: Any, b: Any) -> Thunk | None:
    if not _hpa(a, b) or a._a.size != b._a.size or a._a.dtype.kind not in "iufc" \
            or b._a.dtype.kind not in "iufc":
        return None
    return lambda: _la.vecdot(_mp.reshape(a, (-1,)), _mp.reshape(b, (-1,)))


def _inner(a: Any, b: Any) -> Thunk | None:
    if not _hpa(a, b) or not _real(a, b):
        return None
    na, nb = a._a.ndim, b._a.ndim
    if na == 0 or nb == 0:
        return lambda: _ew.multiply(a, b)
    return lambda: _la.tensordot(a, b, axes=((na - 1,), (nb - 1,)))


def _outer(a: Any, b: Any, out: Any = None) -> Thunk | None:
    if not _hpa(a, b) or out is not None:
        return None
    return lambda: _ew.multiply(_mp.reshape(a, (-1, 1)), _mp.reshape(b, (1, -1)))


def _tensordot(a: Any, b: Any, axes: Any = 2) -> Thunk | None:
    if not _hpa(a, b) or not _real(a, b):
        return None
    if isinstance(axes, (bool, np.bool_)):
        return None
    if type(axes) is not int:
        try:
            first, second = axes
            ax = (tuple(operator.index(i) for i in np.atleast_1d(first).tolist()),
                  tuple(operator.index(i) for i in np.atleast_1d(second).tolist()))
        except (TypeError, ValueError):
            return None
        if len(ax[0]) != len(ax[1]):
            return None
        return lambda: _la.tensordot(a, b, axes=ax)
    return lambda: _la.tensordot(a, b, axes=axes)


def _copy(a: Any, order: Any = "K", subok: Any = False) -> Thunk | None:
    if type(a) is not HPA or order not in ("K", "C", "A") or (order != "C"
                                                              and not a._a.flags.c_contiguous):
        return None
    return a.__copy__


def _astype(x: Any, dtype: Any, /, *, copy: Any = True, device: Any = None) -> Thunk | None:
    dt = _dtype(dtype)
    if type(x) is not HPA or dt is _BAD or dt is None or device is not None \
            or type(copy) is not bool or (x._a.dtype.kind == "c" and dt.kind not in "cb"):
        return None  # (complex to real: numpy's ComplexWarning, the namespace's TypeError)
    return lambda: _dt.astype(x, dt, copy=copy)


def _like(fn: Any, full: bool = False) -> Callable[..., Thunk | None]:
    def translate(a: Any, *args: Any, dtype: Any = None, order: Any = "K", subok: Any = True,
                  shape: Any = None, device: Any = None) -> Thunk | None:
        fill: Any = _ABSENT
        if full:
            if not args:
                return None
            fill, args = args[0], args[1:]
        if args:  # dtype (and the rest) by position: numpy's own
            return None
        dt = _dtype(dtype)
        if type(a) is not HPA or dt is _BAD or device is not None or order not in ("K", "C") \
                or (order == "K" and not a._a.flags.c_contiguous):
            return None
        rdt = a._a.dtype if dt is None else dt
        if full and not _fill_fits(fill, rdt):
            return None
        if shape is None:
            kw = {"dtype": dt} if fill is _ABSENT else {"fill_value": fill, "dtype": dt}
            return lambda: fn[0](a, **kw)
        try:
            sh = (operator.index(shape),) if not isinstance(shape, (tuple, list)) \
                else tuple(operator.index(n) for n in shape)
        except TypeError:
            return None
        if fill is _ABSENT:
            return lambda: fn[1](sh, dtype=rdt, device=a._device)
        return lambda: fn[1](sh, fill, dtype=rdt, device=a._device)
    return translate


def _fill_fits(v: Any, dt: np.dtype) -> bool:
    """Whether ``full_like``'s ``v`` is a Python scalar of ``dt``'s kind whose value ``dt``
    holds (numpy casts any value unsafely: those keep numpy's own call)."""
    if dt.kind == "b":
        return type(v) is bool
    if dt.kind in "iu":
        if type(v) is not int:
            return False
        info = np.iinfo(dt)
        return info.min <= v <= info.max
    return dt.kind == "f" and type(v) in (int, float)


def _shape(shape: Any) -> Any:
    try:
        if isinstance(shape, (tuple, list)):
            return tuple(operator.index(n) for n in shape)
        return (operator.index(shape),)
    except TypeError:
        return _BAD


def _reshape(a: Any, /, shape: Any = _ABSENT, order: Any = "C", *,
             copy: Any = None) -> Thunk | None:
    sh = _shape(shape) if shape is not _ABSENT else _BAD
    if type(a) is not HPA or sh is _BAD or order != "C" or copy not in (None, True, False):
        return None
    return lambda: _mp.reshape(a, sh, copy=copy)


def _ravel(a: Any, order: Any = "C") -> Thunk | None:
    if type(a) is not HPA or order != "C":
        return None
    return lambda: _mp.reshape(a, (-1,))


def _transpose(a: Any, axes: Any = None) -> Thunk | None:
    if type(a) is not HPA:
        return None
    nd = a._a.ndim
    order = tuple(range(nd))[::-1] if axes is None else _axis(tuple(axes)) \
        if isinstance(axes, (tuple, list)) else _BAD
    if order is _BAD or sorted(o % nd if nd else o for o in order) != list(range(nd)) \
            or any(not -nd <= o < nd for o in order):
        return None
    return lambda: _mp.permute_dims(a, tuple(o % nd for o in order))


def _swapaxes(a: Any, axis1: Any, axis2: Any) -> Thunk | None:
    if type(a) is not HPA:
        return None
    nd = a._a.ndim
    i, j = _int_axis(axis1), _int_axis(axis2)
    if i is _BAD or j is _BAD or i is None or j is None or not (-nd <= i < nd
                                                                and -nd <= j < nd):
        return None
    order = list(range(nd))
    order[i % nd], order[j % nd] = order[j % nd], order[i % nd]
    return lambda: _mp.permute_dims(a, tuple(order))


def _expand_dims(a: Any, axis: Any) -> Thunk | None:
    ax = _axis(axis)
    if type(a) is not HPA or ax is _BAD or ax is None:
        return None
    return lambda: _mp.expand_dims(a, axis=ax)


def _squeeze(a: Any, axis: Any = None) -> Thunk | None:
    ax = _axis(axis)
    if type(a) is not HPA or ax is _BAD:
        return None
    if ax is None:
        ax = tuple(i for i, n in enumerate(a._a.shape) if n == 1)
    return lambda: _mp.squeeze(a, axis=ax)


def _joined(fn: Any, none_axis: bool) -> Callable[..., Thunk | None]:
    def translate(arrays: Any, /, axis: Any = 0, out: Any = None, *, dtype: Any = None,
                  casting: Any = "same_kind") -> Thunk | None:
        if out is not None or dtype is not None or casting != "same_kind" \
                or not isinstance(arrays, (list, tuple)) or not arrays or not _hpa(*arrays):
            return None
        if len({v._a.dtype for v in arrays}) != 1:
            return None  # mixed types: numpy's promotion (the standard leaves some open)
        ax = _int_axis(axis)
        if ax is _BAD or (ax is None and not none_axis):
            return None
        return lambda: fn(tuple(arrays), axis=ax)
    return translate


#: numpy function -> its translator (numpy's signature; a thunk, or None: numpy's own call)
FUNCTIONS: dict[Any, Callable[..., Thunk | None]] = {
    np.sum: _sum_like(_st.sum, _ew.add), np.prod: _sum_like(_st.prod, _ew.multiply),
    np.mean: _mean_translate, np.var: _moment(_st.var), np.std: _moment(_st.std),
    np.min: _extremum(_st.min, _ew.minimum), np.amin: _extremum(_st.min, _ew.minimum),
    np.max: _extremum(_st.max, _ew.maximum), np.amax: _extremum(_st.max, _ew.maximum),
    np.argmin: _arg(_se.argmin), np.argmax: _arg(_se.argmax),
    np.any: _logical(_ut.any), np.all: _logical(_ut.all),
    np.cumsum: _cumulative(_st.cumulative_sum), np.cumprod: _cumulative(_st.cumulative_prod),
    np.where: _where, np.clip: _clip, np.dot: _dot, np.vdot: _vdot, np.inner: _inner,
    np.outer: _outer, np.tensordot: _tensordot, np.copy: _copy, np.astype: _astype,
    np.zeros_like: _like((_cr.zeros_like, _cr.zeros)),
    np.ones_like: _like((_cr.ones_like, _cr.ones)),
    np.empty_like: _like((_cr.empty_like, _cr.empty)),
    np.full_like: _like((_cr.full_like, _cr.full), full=True),
    np.reshape: _reshape, np.ravel: _ravel, np.transpose: _transpose, np.swapaxes: _swapaxes,
    np.expand_dims: _expand_dims, np.squeeze: _squeeze,
    np.concatenate: _joined(_mp.concat, True), np.stack: _joined(_mp.stack, False),
}


_ARRAYS = (HPA, np.ndarray, np.generic)


def _operands(args: tuple[Any, ...], kwargs: dict[str, Any]) -> tuple[Any, ...]:
    """The arrays among a call's arguments (one level into lists and tuples): a numpy one
    among them keeps the host path anyway (no fallback to count)."""
    found: list[Any] = []
    for v in (*args, *kwargs.values()):
        if isinstance(v, _ARRAYS):
            found.append(v)
        elif type(v) in (list, tuple):
            found.extend(i for i in v if isinstance(i, _ARRAYS))
    return tuple(found)


def function(func: Any, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """numpy's function ``func`` of ``args``/``kwargs`` as the namespace's call (where it
    runs is the namespace's placement), or :data:`NotImplemented` where :data:`FUNCTIONS`
    has no translation for it (or ``out=`` can't take the result as it is): the caller
    runs numpy's own call on the host data."""
    try:
        translate = FUNCTIONS.get(func)
    except TypeError:  # an unhashable callable
        return NotImplemented
    if translate is None:
        return NotImplemented
    if any(v is np._NoValue for v in kwargs.values()):  # numpy's "not passed", passed on
        kwargs = {k: v for k, v in kwargs.items() if v is not np._NoValue}
    try:
        thunk = translate(*args, **kwargs)
    except TypeError:  # arguments numpy refuses: its own error
        thunk = None
    if thunk is None:
        refused(_operands(args, kwargs))
        return NotImplemented
    r = thunk()
    if func in _SCALAR_FUNCTIONS and not any(v is r for v in (*args, *kwargs.values())):
        _ew.mark_scalar(r)  # numpy returns a scalar here (not the user's out=, however passed)
    return r


#: the functions whose 0-d results numpy gives as scalars (a full reduction, a dot of vectors)
_SCALAR_FUNCTIONS = frozenset((np.sum, np.prod, np.mean, np.var, np.std, np.min, np.max,
                               np.amin, np.amax, np.argmin, np.argmax, np.any, np.all,
                               np.dot, np.vdot, np.inner))


# -- numpy's ufuncs -------------------------------------------------------------------------------

#: numpy ufunc -> the namespace's element-wise function with the same meaning
UFUNCS: dict[np.ufunc, Any] = {
    fn: getattr(_ew, name) for name, fn, *_ in _ew.TABLE if isinstance(fn, np.ufunc)
}
UFUNCS[np.matmul] = _la.matmul
_UFUNC_NAMES: dict[np.ufunc, str] = {fn: name for name, fn, *_ in _ew.TABLE
                                     if isinstance(fn, np.ufunc)}
#: ``ufunc.reduce`` -> the namespace's reduction
REDUCE: dict[np.ufunc, Any] = {np.add: _st.sum, np.multiply: _st.prod, np.maximum: _st.max,
                               np.minimum: _st.min, np.logical_and: _ut.all,
                               np.logical_or: _ut.any}
#: ``ufunc.accumulate`` -> the namespace's cumulative function
ACCUMULATE: dict[np.ufunc, Any] = {np.add: _st.cumulative_sum,
                                   np.multiply: _st.cumulative_prod}


def ufunc_call(ufunc: np.ufunc, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``ufunc(*inputs, **kwargs)`` as the namespace's function where an input is newest
    on a device (:func:`~hostarray._placement.device_newest`), or :data:`NotImplemented`:
    numpy's own call.  ``out=`` a HostPtrArray on the operands' device is written there;
    other keywords (``dtype=``, ``where=``, ``casting=`` other than numpy's default) and
    0-d results keep numpy's call."""
    fn = UFUNCS.get(ufunc)
    if fn is None:
        return NotImplemented
    stale = False
    for v in inputs:
        if type(v) is HPA:
            if v._s.host_stale:
                stale = True
        elif type(v) not in _SCALARS:
            return NotImplemented  # numpy arrays, scalars of numpy, complex: the host's
    if not stale:
        return NotImplemented
    out = kwargs.get("out")
    mask = kwargs.get("where", True)
    if len(kwargs) > (out is not None) + ("casting" in kwargs) + ("where" in kwargs) \
            or kwargs.get("casting", "same_kind") != "same_kind" \
            or (mask is not True and (out is None or type(mask) is not HPA
                                      or mask._a.dtype.kind != "b")):
        refused(inputs)  # (where= without out=: numpy leaves the rest uninitialised)
        return NotImplemented
    if ufunc is np.matmul:  # (the namespace's matmul sizes its result for the threshold)
        if kwargs:
            refused(inputs)
            return NotImplemented  # out= ...: numpy's own call
        if not _hpa(*inputs) or inputs[0]._a.ndim + inputs[1]._a.ndim < 3:
            return NotImplemented  # a 0-d result (vectors): numpy's scalar
        return fn(*inputs)
    shapes = [v._a.shape for v in inputs if type(v) is HPA]
    try:
        shape = np.broadcast_shapes(*shapes)
    except ValueError:
        return NotImplemented  # numpy's error
    if not shape:
        return NotImplemented  # numpy's scalar result
    name = _UFUNC_NAMES[ufunc]
    if out is None:
        # the namespace's element-wise entry (its functions' first step: one placement
        # decision); where it answers the host, numpy's own call computes, its results
        # allocated for the device's buffers, as the namespace's host path would
        r = try_device(name, inputs, fn=ufunc)
        return NotImplemented if r is None else r
    o = out[0] if type(out) is tuple and len(out) == 1 else out
    if type(o) is not HPA or any(type(v) is HPA and v._device is not o._device
                                 for v in inputs):
        refused(inputs)
        return NotImplemented
    if mask is not True:
        return _masked(fn, inputs, o, mask)
    r = try_device(name, inputs, out=o, fn=ufunc)
    return NotImplemented if r is None else r


def _masked(fn: Any, inputs: tuple[Any, ...], out: HostPtrArray, mask: HostPtrArray) -> Any:
    """``ufunc(*inputs, out=out, where=mask)``: ``out`` keeps its values where ``mask`` is
    false; computed as the namespace's ``where(mask, fn(*inputs), out)`` written into
    ``out`` (on the device where the data is), or :data:`NotImplemented` where the result's
    type or shape is not ``out``'s (numpy's casting, or error)."""
    if mask._device is not out._device:
        return NotImplemented
    try:
        shape = np.broadcast_shapes(out._a.shape, mask._a.shape,
                                    *(v._a.shape for v in inputs if type(v) is HPA))
    except ValueError:
        return NotImplemented
    if shape != out._a.shape:
        return NotImplemented
    r = fn(*inputs)
    if r._a.dtype != out._a.dtype:
        return NotImplemented
    out[...] = _se.where(mask, r, out)
    return out


def _reduce_kwargs(kwargs: dict[str, Any], allowed: frozenset[str]) -> dict[str, Any] | None:
    if not set(kwargs) <= allowed:
        return None
    if "where" in kwargs and kwargs["where"] is not True:
        return None
    return kwargs


_REDUCE_KW = frozenset(("axis", "dtype", "out", "keepdims", "where"))


def ufunc_reduce(ufunc: np.ufunc, inputs: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``ufunc.reduce(x, ...)`` as the namespace's reduction (``np.add.reduce`` is
    ``ha.sum`` ...; numpy's default axis is 0), or :data:`NotImplemented`."""
    fn = REDUCE.get(ufunc)
    if fn is None or len(inputs) != 1 or type(inputs[0]) is not HPA:
        return NotImplemented
    x = inputs[0]
    kw = _reduce_kwargs(kwargs, _REDUCE_KW)
    out = None if kw is None else kw.get("out")
    if type(out) is tuple and len(out) == 1:
        out = out[0]
    dt = _dtype(kwargs.get("dtype"))
    ax = _axis(kwargs.get("axis", 0))
    keep = _flag(kwargs.get("keepdims", _ABSENT))
    if kw is None or _BAD in (dt, ax, keep) or (dt is not None and fn not in (_st.sum,
                                                                             _st.prod)) \
            or (out is not None and not _same_device(out, x)) or x._a.ndim == 0:
        refused(inputs)
        return NotImplemented
    args: dict[str, Any] = {"axis": ax, "keepdims": keep}
    if fn in (_st.sum, _st.prod):
        args["dtype"] = dt
    r = fn(x, **args)
    return _ew.mark_scalar(r) if out is None else _into(out, r)


def ufunc_accumulate(ufunc: np.ufunc, inputs: tuple[Any, ...],
                     kwargs: dict[str, Any]) -> Any:
    """``ufunc.accumulate(x, ...)`` as the namespace's cumulative function, or
    :data:`NotImplemented`."""
    fn = ACCUMULATE.get(ufunc)
    if fn is None or len(inputs) != 1 or type(inputs[0]) is not HPA:
        return NotImplemented
    x = inputs[0]
    out = kwargs.get("out")
    if type(out) is tuple and len(out) == 1:
        out = out[0]
    dt = _dtype(kwargs.get("dtype"))
    ax = _int_axis(kwargs.get("axis", 0))
    if not set(kwargs) <= {"axis", "dtype", "out"} or dt is _BAD or ax is _BAD or ax is None \
            or x._a.ndim == 0 or (out is not None and not _same_device(out, x)):
        refused(inputs)
        return NotImplemented
    r = fn(x, axis=ax, dtype=dt)
    return r if out is None else _into(out, r)


# -- the record the documentation is generated from ---------------------------------------------

def spellings() -> dict[str, list[str]]:
    """The numpy spellings that are the namespace's calls (and so run on the device where
    the namespace's do), by kind: ``functions`` (``np.sum`` ...; the array's methods of
    the same names follow them), ``ufuncs`` (called), ``reduce`` and ``accumulate``.

    Examples
    --------
    >>> from hostarray._numpy_spelling import spellings
    >>> "mean" in spellings()["functions"] and "exp" in spellings()["ufuncs"]
    True
    """
    return {
        "functions": sorted({f.__name__ for f in FUNCTIONS}),
        "ufuncs": sorted(u.__name__ for u in UFUNCS),
        "reduce": sorted(u.__name__ for u in REDUCE),
        "accumulate": sorted(u.__name__ for u in ACCUMULATE),
    }
