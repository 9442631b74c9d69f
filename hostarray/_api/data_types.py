"""Data type functions of the array API standard."""

from __future__ import annotations

import builtins
from dataclasses import dataclass
from typing import Any

import numpy as np

from .. import _dtypes
from .._array import HostPtrArray, wrap
from .._placement import device_newest, requested_device, try_device

__all__ = ["astype", "can_cast", "finfo", "iinfo", "isdtype", "result_type",
           "finfo_object", "iinfo_object"]


def _to_dtype(x: Any) -> np.dtype:
    if isinstance(x, HostPtrArray):
        return x._a.dtype
    dt = np.dtype(x)
    if dt.kind not in "biufc":  # numpy's other numeric types (float16 ...) are allowed too
        raise TypeError(f"{dt} is not a bool or numeric data type")
    return dt


def astype(x: HostPtrArray, dtype: Any, /, *, copy: bool = True,
           device: Any = None) -> HostPtrArray:
    """Copy of ``x`` converted to ``dtype`` (``x`` itself if ``copy=False`` and nothing changes).

    Where ``x``'s newest data is on a mapped or copied device (and it is large enough),
    the device converts it and the copy's newest data stays there.  Values are numpy's
    (a ``bool`` target is ``x != 0``); floating-point values an integer type can't hold
    (NaN, infinities, out of range), which the standard leaves undefined, get the
    device's answer there, which may differ from numpy's.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.astype(ha.asarray([1.7, -2.2]), ha.int32)
    HostPtrArray([ 1, -2], dtype=int32)
    """
    if not isinstance(x, HostPtrArray):
        raise TypeError(f"astype expects a hostarray array, got {type(x).__name__}")
    dt = _to_dtype(dtype)
    dev = requested_device(device, x._device)
    if not copy and dt == x._a.dtype:
        return x if dev == x._device else x.to_device(dev)
    if dev is x._device and device_newest(x):
        r = try_device("astype", (x,), dtype=dt)
        if r is not None:
            return r
    a = x._host()
    if a.dtype.kind == "c" and dt.kind not in "cb":  # to bool: 0+0j is False, else True
        raise TypeError("casting complex to a real data type discards the imaginary part; "
                        "take ha.real(x) or ha.abs(x) first")
    return wrap(a.astype(dt, copy=True), dev)


def can_cast(from_: Any, to: Any, /) -> bool:
    """Whether ``from_`` (a data type or an array) can be cast to ``to`` under the type
    promotion rules: ``True`` exactly when this namespace promotes ``from_`` with ``to``
    to ``to`` (``result_type(from_, to) == to``, the type ``ha.add`` and the other
    operations give).  One rule for every pair, numpy's ``"safe"`` casting.

    Within the standard's promotion table (integers with integers, floating point with
    floating point) this is the standard's answer.  Across kinds, which the standard
    leaves to the implementation, it follows hostarray's (numpy's) promotions: ``bool``
    to any numeric type, ``int16`` to ``float32``, ``int32``, ``int64`` and ``uint64`` to
    ``float64`` and ``complex128`` are ``True`` (``int64`` and ``uint64`` to ``float64``
    round integers beyond 2**53 to the nearest ``float64``, as ``int64 + float64``
    does); ``int32`` to ``float32``, floating point to integers and anything to
    ``bool`` (but ``bool``) are ``False``.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.can_cast(ha.int8, ha.int16), ha.can_cast(ha.float64, ha.float32)
    (True, False)
    >>> ha.can_cast(ha.int64, ha.float64), ha.can_cast(ha.int32, ha.float32)
    (True, False)
    """
    f, t = _to_dtype(from_), _to_dtype(to)
    return builtins.bool(f == t or np.result_type(f, t) == t)


@dataclass(frozen=True)
class finfo_object:  # noqa: N801 - the standard's name
    """Machine limits of a floating-point data type; every field is a Python scalar."""

    bits: int
    eps: float
    max: float
    min: float
    smallest_normal: float
    dtype: np.dtype


@dataclass(frozen=True)
class iinfo_object:  # noqa: N801 - the standard's name
    """Machine limits of an integer data type; every field is a Python int."""

    bits: int
    max: int
    min: int
    dtype: np.dtype


def finfo(type: Any, /) -> finfo_object:  # noqa: A002 - the standard's name
    """Machine limits of a floating-point data type (or an array's); for complex
    types, those of the real component.

    Examples
    --------
    >>> import hostarray as ha
    >>> f = ha.finfo(ha.float32)
    >>> f.bits, f.eps
    (32, 1.1920928955078125e-07)
    """
    dt = _to_dtype(type)
    if dt.kind not in "fc":
        raise TypeError(f"finfo takes a floating-point data type, not {dt}")
    fi = np.finfo(dt)
    real = np.dtype(fi.dtype)
    return finfo_object(bits=int(fi.bits), eps=float(fi.eps), max=float(fi.max),
                        min=float(fi.min), smallest_normal=float(fi.smallest_normal),
                        dtype=real)


def iinfo(type: Any, /) -> iinfo_object:  # noqa: A002 - the standard's name
    """Machine limits of an integer data type (or an array's).

    Examples
    --------
    >>> import hostarray as ha
    >>> i = ha.iinfo(ha.int8)
    >>> i.min, i.max
    (-128, 127)
    """
    dt = _to_dtype(type)
    if dt.kind not in "iu":
        raise TypeError(f"iinfo takes an integer data type, not {dt}")
    ii = np.iinfo(dt)
    return iinfo_object(bits=int(ii.bits), max=int(ii.max), min=int(ii.min), dtype=dt)


def isdtype(dtype: Any, kind: Any) -> bool:
    """Whether ``dtype`` is of ``kind``: a data type, one of the standard's kind
    names (``"bool"``, ``"signed integer"``, ``"unsigned integer"``, ``"integral"``,
    ``"real floating"``, ``"complex floating"``, ``"numeric"``), or a tuple of those.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.isdtype(ha.float32, "real floating"), ha.isdtype(ha.int8, ("bool", ha.uint8))
    (True, False)
    """
    if not isinstance(dtype, np.dtype):
        if isinstance(dtype, type) and issubclass(dtype, np.generic):
            dtype = np.dtype(dtype)  # numpy's scalar types (np.float32) name data types too
        else:
            raise TypeError(f"isdtype expects a data type, got {type(dtype).__name__}")
    if isinstance(kind, tuple):
        return builtins.any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, str):
        try:
            return dtype in _dtypes.KINDS[kind]
        except KeyError:
            raise ValueError(f"unknown data type kind {kind!r}; expected one of "
                             f"{sorted(_dtypes.KINDS)}") from None
    if isinstance(kind, np.dtype):
        return dtype == kind
    raise TypeError(f"kind must be a data type, a kind name or a tuple, not "
                    f"{type(kind).__name__}")


def result_type(*arrays_and_dtypes: Any) -> np.dtype:
    """The data type the standard's promotion rules give for the arguments (arrays,
    data types, and Python scalars, which are *weak*: they never widen an array type).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.result_type(ha.int8, ha.uint8), ha.result_type(ha.float32, 1.0)
    (dtype('int16'), dtype('float32'))
    """
    if not arrays_and_dtypes:
        raise ValueError("result_type needs at least one array or data type")
    typed: list[Any] = []
    scalars: list[Any] = []
    for a in arrays_and_dtypes:
        if isinstance(a, HostPtrArray):
            typed.append(a._a.dtype)
        elif type(a) in (builtins.bool, int, float, complex):
            scalars.append(a)
        else:
            typed.append(_to_dtype(a))
    if not typed:
        raise ValueError("result_type needs at least one array or data type besides scalars")
    # within the standard's table numpy 2 agrees; mixed kinds are unspecified: numpy's answer
    return np.result_type(*typed, *scalars)
