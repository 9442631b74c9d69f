"""Statistical functions of the array API standard.

Reductions call the ndarray methods (``a.sum(...)``), which skip numpy's
``__array_function__`` dispatch layer: a few microseconds on small inputs.
When the input's newest data is on a device, they run there instead where
:mod:`hostarray._placement` says so (:mod:`hostarray._compute.reductions`).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._array import HostPtrArray
from .._placement import device_newest, try_device
from ._common import dev_of, host, result

__all__ = ["cumulative_prod", "cumulative_sum", "max", "mean", "min", "prod", "std", "sum",
           "var"]

Axis = int | tuple[int, ...] | None
HPA = HostPtrArray


def max(x: HostPtrArray, /, *, axis: Axis = None, keepdims: bool = False) -> HostPtrArray:  # noqa: A001
    """Largest element of ``x`` along ``axis`` (NaN if any compared element is NaN).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.max(ha.asarray([[1, 5], [3, 2]]), axis=0)
    HostPtrArray([3, 5], dtype=int64)
    """
    if device_newest(x):
        r = try_device("max", (x,), axis=axis, keepdims=keepdims)
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
    if device_newest(x):
        r = try_device("min", (x,), axis=axis, keepdims=keepdims)
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
    if device_newest(x):
        r = try_device("mean", (x,), axis=axis, keepdims=keepdims)
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
    if device_newest(x):
        r = try_device("prod", (x,), axis=axis, dtype=dtype, keepdims=keepdims)
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
    if device_newest(x):
        r = try_device("sum", (x,), axis=axis, dtype=dtype, keepdims=keepdims)
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
    if device_newest(x):
        r = try_device("std", (x,), axis=axis, correction=correction,
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
    if device_newest(x):
        r = try_device("var", (x,), axis=axis, correction=correction,
                             keepdims=keepdims)
        if r is not None:
            return r
    return result(host(x).var(axis=axis, ddof=correction, keepdims=keepdims),
                  dev_of(x))


def _cumulative(fn: Any, x: HostPtrArray, axis: int | None, dtype: Any,
                include_initial: bool) -> HostPtrArray:
    if device_newest(x):
        r = try_device(fn.__name__, (x,), axis=axis, dtype=dtype,
                       include_initial=include_initial)
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
