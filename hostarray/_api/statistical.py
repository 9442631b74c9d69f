"""Statistical functions of the array API standard.

Reductions call the ndarray methods (``a.sum(...)``), which skip numpy's
``__array_function__`` dispatch layer: a few microseconds on small inputs.
When the input's newest data is on a device (see :mod:`hostarray._compute`),
they run there instead (:mod:`hostarray._compute.reductions`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._array import HostPtrArray
from .._compute import implementation, target
from ._common import dev_of, host, result

__all__ = ["cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std", "sum",
           "var"]

Axis = int | tuple[int, ...] | None
HPA = HostPtrArray


def device_reduction(name: str, operands: tuple[Any, ...], **kw: Any) -> HostPtrArray | None:
    """Reduction ``name`` computed on the device holding the operands' newest data, or
    ``None``: compute on the host (see :mod:`hostarray._compute`).  Callers call it only
    when an operand's ``_s.host_stale`` flag is set (the cheap test)."""
    dev = target(operands)
    if dev is None:
        return None
    return implementation("reductions", "reduction")(name, dev, operands, **kw)


def max(x: HostPtrArray, /, *, axis: Axis = None, keepdims: bool = False) -> HostPtrArray:  # noqa: A001
    """Largest element of ``x`` along ``axis`` (NaN if any compared element is NaN).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.max(ha.asarray([[1, 5], [3, 2]]), axis=0)
    HostPtrArray([3, 5], dtype=int64)
    """
    if type(x) is HPA and x._s.host_stale:
        r = device_reduction("max", (x,), axis=axis, keepdims=keepdims)
        if r is not None:
            return r
    return result(host(x).max(axis=axis, keepdims=keepdims), dev_of(x))


def min(x: HostPtrArray, /, *, axis: Axis = None, keepdims: bool = False) -> HostPtrArray:  # noqa: A001
    """Smallest element of ``x`` along ``axis`` (NaN if any compared element is NaN).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.min(ha.asarray([[1, 5], [3, 2]]), axis=1)
    HostPtrArray([1, 2], dtype=int64)
    """
    if type(x) is HPA and x._s.host_stale:
        r = device_reduction("min", (x,), axis=axis, keepdims=keepdims)
        if r is not None:
            return r
    return result(host(x).min(axis=axis, keepdims=keepdims), dev_of(x))


def mean(x: HostPtrArray, /, *, axis: Axis = None, keepdims: bool = False) -> HostPtrArray:
    """Arithmetic mean of ``x`` along ``axis``.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.mean(ha.asarray([1.0, 2.0, 6.0]))
    HostPtrArray(3., dtype=float64)
    """
    if type(x) is HPA and x._s.host_stale:
        r = device_reduction("mean", (x,), axis=axis, keepdims=keepdims)
        if r is not None:
            return r
    return result(host(x).mean(axis=axis, keepdims=keepdims), dev_of(x))


def prod(x: HostPtrArray, /, *, axis: Axis = None, dtype: Any = None,
         keepdims: bool = False) -> HostPtrArray:
    """Product of the elements of ``x`` along ``axis``; integers accumulate in the
    default (unsigned) integer type unless ``dtype`` says otherwise.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.prod(ha.asarray([1, 2, 3, 4], dtype=ha.int8))
    HostPtrArray(24, dtype=int64)
    """
    if type(x) is HPA and x._s.host_stale:
        r = device_reduction("prod", (x,), axis=axis, dtype=dtype, keepdims=keepdims)
        if r is not None:
            return r
    return result(host(x).prod(axis=axis, dtype=dtype, keepdims=keepdims), dev_of(x))


def sum(x: HostPtrArray, /, *, axis: Axis = None, dtype: Any = None,  # noqa: A001
        keepdims: bool = False) -> HostPtrArray:
    """Sum of the elements of ``x`` along ``axis``; integers accumulate in the default
    (unsigned) integer type unless ``dtype`` says otherwise.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.sum(ha.asarray([[1, 2], [3, 4]]), axis=0)
    HostPtrArray([4, 6], dtype=int64)
    """
    if type(x) is HPA and x._s.host_stale:
        r = device_reduction("sum", (x,), axis=axis, dtype=dtype, keepdims=keepdims)
        if r is not None:
            return r
    return result(host(x).sum(axis=axis, dtype=dtype, keepdims=keepdims), dev_of(x))


def std(x: HostPtrArray, /, *, axis: Axis = None, correction: int | float = 0.0,
        keepdims: bool = False) -> HostPtrArray:
    """Standard deviation of ``x`` along ``axis`` (``correction``: degrees of freedom removed).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.std(ha.asarray([1.0, 3.0]))
    HostPtrArray(1., dtype=float64)
    """
    if type(x) is HPA and x._s.host_stale:
        r = device_reduction("std", (x,), axis=axis, correction=correction,
                             keepdims=keepdims)
        if r is not None:
            return r
    return result(host(x).std(axis=axis, ddof=correction, keepdims=keepdims),
                  dev_of(x))


def var(x: HostPtrArray, /, *, axis: Axis = None, correction: int | float = 0.0,
        keepdims: bool = False) -> HostPtrArray:
    """Variance of ``x`` along ``axis`` (``correction``: degrees of freedom removed).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.var(ha.asarray([1.0, 3.0]), correction=1)
    HostPtrArray(2., dtype=float64)
    """
    if type(x) is HPA and x._s.host_stale:
        r = device_reduction("var", (x,), axis=axis, correction=correction,
                             keepdims=keepdims)
        if r is not None:
            return r
    return result(host(x).var(axis=axis, ddof=correction, keepdims=keepdims),
                  dev_of(x))


def _cumulative_nbytes(x: HostPtrArray, dtype: Any) -> int:
    """The size of a cumulative result of ``x`` in ``dtype`` (its initial row left out)."""
    try:
        return x._a.size * np.dtype(dtype if dtype is not None else x._a.dtype).itemsize
    except TypeError:
        return 0  # a bad dtype: the host path raises numpy's error


def _cumulative(fn: Any, x: HostPtrArray, axis: int | None, dtype: Any,
                include_initial: bool) -> HostPtrArray:
    if type(x) is HPA and x._s.host_stale:
        # the result (dtype=, include_initial) may be larger than x: it counts too
        dev = target((x,), lambda: _cumulative_nbytes(x, dtype))
        if dev is not None:
            cumulative = implementation("reductions", "cumulative")
            r = cumulative(fn.__name__, dev, x, axis, dtype, include_initial)
            if r is not None:
                return r
    a = host(x)
    if axis is None:
        if a.ndim > 1:
            raise ValueError("axis must be given for arrays of more than one dimension")
        if a.ndim == 0:
            raise ValueError("cumulative functions need at least one dimension")
        axis = 0
    return result(fn(a, axis=axis, dtype=dtype, include_initial=include_initial), dev_of(x))


def cumulative_sum(x: HostPtrArray, /, *, axis: int | None = None, dtype: Any = None,
                   include_initial: bool = False) -> HostPtrArray:
    """Cumulative sum of ``x`` along ``axis`` (optionally starting with a 0).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.cumulative_sum(ha.asarray([1, 2, 3]), include_initial=True)
    HostPtrArray([0, 1, 3, 6], dtype=int64)
    """
    return _cumulative(np.cumulative_sum, x, axis, dtype, include_initial)


def cumulative_prod(x: HostPtrArray, /, *, axis: int | None = None, dtype: Any = None,
                    include_initial: bool = False) -> HostPtrArray:
    """Cumulative product of ``x`` along ``axis`` (optionally starting with a 1).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.cumulative_prod(ha.asarray([1, 2, 3]))
    HostPtrArray([1, 2, 6], dtype=int64)
    """
    return _cumulative(np.cumulative_prod, x, axis, dtype, include_initial)
