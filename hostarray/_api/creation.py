"""Creation functions of the array API standard."""

from __future__ import annotations

import builtins
import math
import operator
import sys
from collections.abc import Callable
from typing import Any

import numpy as np

from .. import _sharing
from .._array import HostPtrArray, _new, adopt, aligned_copy, aligned_zeros, wrap
from .._devices import HOST, Device
from .._placement import device_newest, requested_device, result_device, try_device
from .._storage import Storage, aligned_empty
from ._common import dev_of, host

__all__ = ["arange", "asarray", "empty", "empty_like", "eye", "from_dlpack", "full", "full_like",
           "linspace", "meshgrid", "ones", "ones_like", "tril", "triu", "zeros", "zeros_like"]


def _dtype(dtype: Any) -> np.dtype | None:
    if dtype is None:
        return None
    dt = np.dtype(dtype)
    _check_dtype(dt)
    return dt


def _given_dtype(dtype: Any) -> np.dtype:
    """:func:`_dtype` of a ``dtype`` that is not None."""
    dt = np.dtype(dtype)
    _check_dtype(dt)
    return dt


def _shape(shape: int | tuple[int, ...]) -> tuple[int, ...]:
    shp = (int(shape),) if isinstance(shape, (int, np.integer)) else tuple(int(s) for s in shape)
    if any(n < 0 for n in shp):
        raise ValueError(f"negative dimensions are not allowed: {shp}")
    return shp


def asarray(obj: Any, /, *, dtype: Any = None, device: Any = None,
            copy: bool | None = None) -> HostPtrArray:
    """Convert ``obj`` to a ``HostPtrArray``, sharing memory where possible.

    A numpy array is reused without a copy on the host, and on a device when
    its memory meets the device's alignment; otherwise it is copied into
    page-aligned storage.  ``copy=True`` always copies, ``copy=False`` never
    does (``ValueError`` if sharing is impossible).  A copy or conversion of a
    HostPtrArray whose newest data is on a mapped or copied device is made by that
    device (nothing acquired; the copy's newest data stays there).

    Examples
    --------
    >>> import numpy as np, hostarray as ha
    >>> a = np.arange(4.0)
    >>> x = ha.asarray(a)
    >>> np.shares_memory(np.asarray(x), a)
    True
    >>> ha.asarray([1, 2, 3]).dtype
    dtype('int64')
    """
    dt = _dtype(dtype)
    if isinstance(obj, HostPtrArray):
        dev = requested_device(device, obj._device)
        if copy is not True and (dt is None or dt == obj.dtype):
            return obj if dev == obj._device else obj.to_device(dev)
        if copy is False:
            raise ValueError(f"converting {obj.dtype} to {dt} needs a copy; pass copy=None")
        if dev is obj._device and device_newest(obj):
            # the copy (or conversion) made where the newest data is: nothing acquired
            r = try_device("copy", (obj,)) if dt is None else \
                try_device("astype", (obj,), dtype=dt)
            if r is not None:
                return r
        src = obj._host()
        return wrap(aligned_copy(src if dt is None else src.astype(dt)), dev)
    dev = requested_device(device)
    if isinstance(obj, np.ndarray) and copy is not True and (dt is None or dt == obj.dtype):
        _check_dtype(obj.dtype)
        return adopt(obj, dev, copy)
    if copy is False:
        try:
            a = np.asarray(obj, dtype=dt, copy=False)
        except ValueError:
            a = None
        if a is None:
            # what a copy could not hold either (None, text) is refused for that first
            _check_dtype(np.asarray(obj, dtype=dt).dtype)
            name = type(obj).__name__
            held = getattr(obj, "dtype", None)
            why = (f"converting its {held} elements to {dt} makes new ones"
                   if dt is not None and held is not None and held != dt
                   else "it exposes no memory of one array type to share")
            article = "an" if name[:1].lower() in "aeio" or name.startswith("nd") else "a"
            raise ValueError(f"{article} {name} can't be shared without a copy ({why}); pass "
                             f"copy=None")
        _check_dtype(a.dtype)
        return adopt(a, dev, False)
    a = np.asarray(obj, dtype=dt)
    _check_dtype(a.dtype)
    if copy or a.base is None:  # a fresh array (or one to copy): into aligned storage
        a = aligned_copy(a)
        return _new(a, Storage(a), dev) if dev.framework == "host" else wrap(a, dev)
    # memory that belongs to obj (a buffer, an __array__ view, an export of a HostPtrArray):
    # adopted as user memory, found again if it is already one of ours
    return adopt(a, dev, copy)


def _check_dtype(dt: np.dtype) -> None:
    if dt.hasobject or dt.kind in "USVMm" or dt.fields is not None:
        raise TypeError(f"hostarray holds bool and numeric data only, not {dt}; convert "
                        f"with numpy first")


def _human(nbytes: int) -> str:
    """``nbytes`` in binary units (``3.55 PiB``)."""
    size = float(nbytes)
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB"):
        if size < 1024 or unit == "PiB":
            return f"{size:.0f} {unit}" if unit == "B" else f"{size:.3g} {unit}"
        size /= 1024
    return f"{nbytes} B"  # not reached


def _too_big(shape: tuple[int, ...], dt: np.dtype, nbytes: int, why: str) -> str:
    narrower = {"float64": " (float32 halves it)", "complex128": " (complex64 halves it)",
                "int64": " (int32 halves it)"}.get(dt.name, "")
    what = "make the array smaller, " + (f"use a narrower data type{narrower}, "
                                         if dt.itemsize > 1 else "")
    return (f"cannot allocate an array of shape {shape} and data type {dt}: it needs "
            f"{nbytes} bytes ({_human(nbytes)}) of host memory, {why}; {what}or process "
            f"the data in pieces (for example as the chunks of a Dask array)")


def _allocate(shape: tuple[int, ...], dt: np.dtype,
              make: Callable[[], np.ndarray], values: bool = False) -> np.ndarray:
    """``make()``, the page-aligned allocation of an array of ``shape`` and ``dt``; its
    failure reported in the user's terms (shape, data type, bytes), not in those of the
    padded ``uint8`` buffer underneath.  ``values``: ``make`` also computes values (a
    range), so numpy's ``ValueError`` is about them and passes unchanged."""
    nbytes = math.prod(shape) * dt.itemsize
    if nbytes > sys.maxsize:
        raise ValueError(_too_big(shape, dt, nbytes, f"more than the largest allocation a "
                                                     f"process can address ({sys.maxsize} "
                                                     f"bytes)"))
    try:
        return make()
    except MemoryError:
        raise MemoryError(_too_big(shape, dt, nbytes, "and the allocation failed (not "
                                                      "enough memory)")) from None
    except ValueError as e:  # numpy: "array is too big", "Maximum allowed dimension ..."
        if values:
            raise
        raise ValueError(_too_big(shape, dt, nbytes, f"which numpy refused ({e})")) from None


def empty(shape: int | tuple[int, ...], *, dtype: Any = None,
          device: Any = None) -> HostPtrArray:
    """An uninitialised array in page-aligned storage.

    On a mapped or copied device (``device=``, at least the device compute threshold)
    the array is marked newest on the device, with no byte moved: a kernel that fills it
    publishes no garbage, and a host write of all of it acquires none.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.empty((2, 3)).shape
    (2, 3)
    """
    dt = _given_dtype(np.float64 if dtype is None else dtype)
    shp, dev = _shape(shape), requested_device(device)
    if dev.framework == "opencl":  # filled there where placement says so (see _fill there)
        r = try_device("empty", (), device=dev, shape=shp, dtype=dt)
        if r is not None:
            return r
    a = _aligned(shp, dt)
    return _new(a, Storage(a), dev)


def zeros(shape: int | tuple[int, ...], *, dtype: Any = None,
          device: Any = None) -> HostPtrArray:
    """An array of zeros in page-aligned storage.

    On a mapped or copied device (``device=``, at least the device compute threshold)
    the device fills it and its newest data stays there: an array created on a device is
    meant for kernels there, which then find it with nothing published; the host
    acquires it only if it reads it (one transfer either way, never two).

    Examples
    --------
    >>> import hostarray as ha
    >>> print(ha.zeros(3))
    [0. 0. 0.]
    """
    dt = _given_dtype(np.float64 if dtype is None else dtype)
    shp, dev = _shape(shape), requested_device(device)
    if dev.framework == "opencl":  # filled by the device (see hostarray._placement)
        r = try_device("full", (), device=dev, shape=shp, dtype=dt, value=0)
        if r is not None:
            return r
    a = _allocate(shp, dt, lambda: aligned_zeros(shp, dt))
    return _new(a, Storage(a), dev)


def _aligned(shape: tuple[int, ...], dt: np.dtype) -> np.ndarray:
    """Uninitialised page-aligned memory for ``shape`` and ``dt`` (see :func:`_allocate`)."""
    n = math.prod(shape) * dt.itemsize
    return _allocate(shape, dt, lambda: aligned_empty(n).view(dt).reshape(shape))


def _like_device(x: HostPtrArray, device: Any) -> Device:
    return requested_device(device, dev_of(x))


def _check_like(x: Any) -> None:
    """``*_like`` takes an array (its shape, data type and device): a list is refused."""
    if not (hasattr(x, "shape") and hasattr(x, "dtype")):
        raise TypeError(f"expected a hostarray array, got {type(x).__name__}; make it one "
                        f"with ha.asarray first")


def _scalar_dtype(value: Any) -> np.dtype:
    """The default data type for a Python scalar fill value."""
    if isinstance(value, HostPtrArray):
        return value.dtype
    if isinstance(value, (bool, np.bool_)):
        return np.dtype(np.bool_)
    if isinstance(value, (int, np.integer)):
        return np.dtype(np.int64) if isinstance(value, int) else np.asarray(value).dtype
    if isinstance(value, complex):
        return np.dtype(np.complex128)
    if isinstance(value, float):
        return np.dtype(np.float64)
    return np.asarray(value).dtype


def _fill_value(value: Any) -> Any:
    return value._host()[()] if isinstance(value, HostPtrArray) else value


def full(shape: int | tuple[int, ...], fill_value: Any, *, dtype: Any = None,
         device: Any = None) -> HostPtrArray:
    """An array of ``fill_value`` in page-aligned storage; the data type defaults to
    the scalar's kind (bool, int64, float64 or complex128).

    Filled by the device on a mapped or copied ``device`` (as :func:`zeros`, and why).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.full((2,), 7)
    HostPtrArray([7, 7], dtype=int64)
    """
    dt = _scalar_dtype(fill_value) if dtype is None else _given_dtype(dtype)
    _check_dtype(dt)  # (a str fill value made a str array: refused as asarray refuses it)
    shp, dev = _shape(shape), requested_device(device)
    if dev.framework == "opencl":  # filled by the device (see hostarray._placement)
        r = try_device("full", (), device=dev, shape=shp, dtype=dt, value=fill_value)
        if r is not None:
            return r
    a = _aligned(shp, dt)
    a.fill(_fill_value(fill_value))
    return _new(a, Storage(a), dev)


def ones(shape: int | tuple[int, ...], *, dtype: Any = None,
         device: Any = None) -> HostPtrArray:
    """An array of ones in page-aligned storage (filled by a mapped or copied ``device``,
    as :func:`zeros`).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.ones(3, dtype=ha.int8)
    HostPtrArray([1, 1, 1], dtype=int8)
    """
    return full(shape, 1, dtype=np.float64 if dtype is None else dtype, device=device)


def empty_like(x: HostPtrArray, /, *, dtype: Any = None, device: Any = None) -> HostPtrArray:
    """An uninitialised array with ``x``'s shape (and data type, device unless given).

    On a mapped or copied device the result is made there (see :func:`empty`):
    the result of ``*_like`` of an array whose newest data is on a device is too.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.empty_like(ha.zeros((2, 2))).shape
    (2, 2)
    """
    _check_like(x)
    return empty(x.shape, dtype=x.dtype if dtype is None else dtype,
                 device=_like_device(x, device))


def zeros_like(x: HostPtrArray, /, *, dtype: Any = None, device: Any = None) -> HostPtrArray:
    """Zeros with ``x``'s shape (and data type, device unless given).

    On a mapped or copied device the result is made there (see :func:`zeros`):
    the result of ``*_like`` of an array whose newest data is on a device is too.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.zeros_like(ha.asarray([1, 2]))
    HostPtrArray([0, 0], dtype=int64)
    """
    _check_like(x)
    return zeros(x.shape, dtype=x.dtype if dtype is None else dtype,
                 device=_like_device(x, device))


def ones_like(x: HostPtrArray, /, *, dtype: Any = None, device: Any = None) -> HostPtrArray:
    """Ones with ``x``'s shape (and data type, device unless given).

    On a mapped or copied device the result is made there (see :func:`zeros`):
    the result of ``*_like`` of an array whose newest data is on a device is too.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.ones_like(ha.asarray([1.5, 2.5]))
    HostPtrArray([1., 1.], dtype=float64)
    """
    _check_like(x)
    return full(x.shape, 1, dtype=x.dtype if dtype is None else dtype,
                device=_like_device(x, device))


def full_like(x: HostPtrArray, /, fill_value: Any, *, dtype: Any = None,
              device: Any = None) -> HostPtrArray:
    """``fill_value`` with ``x``'s shape (and data type, device unless given).

    On a mapped or copied device the result is made there (see :func:`zeros`):
    the result of ``*_like`` of an array whose newest data is on a device is too.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.full_like(ha.asarray([1, 2]), 9)
    HostPtrArray([9, 9], dtype=int64)
    """
    _check_like(x)
    return full(x.shape, fill_value, dtype=x.dtype if dtype is None else dtype,
                device=_like_device(x, device))


def arange(start: int | float, /, stop: int | float | None = None, step: int | float = 1, *,
           dtype: Any = None, device: Any = None) -> HostPtrArray:
    """Evenly spaced values in ``[start, stop)`` (``[0, start)`` if ``stop`` is None).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.arange(1, 7, 2)
    HostPtrArray([1, 3, 5], dtype=int64)
    """
    if stop is None:
        start, stop = 0, start
    dt = _dtype(dtype)
    if dt is None:
        dt = np.dtype(np.int64 if all(isinstance(v, (int, np.integer))
                                      for v in (start, stop, step)) else np.float64)
    n = _range_length(start, stop, step)
    return wrap(_allocate((n,), dt, lambda: np.arange(start, stop, step, dtype=dt), True),
                requested_device(device))


def _range_length(start: Any, stop: Any, step: Any) -> int:
    """How many values ``arange`` makes (for a failed allocation's message; 0 where the
    arguments are wrong, numpy then says what is wrong)."""
    try:
        if all(isinstance(v, int) for v in (start, stop, step)):
            return builtins.max(0, -((start - stop) // step))
        return builtins.max(0, math.ceil((stop - start) / step))
    except (ArithmeticError, TypeError, ValueError):
        return 0


def eye(n_rows: int, n_cols: int | None = None, /, *, k: int = 0, dtype: Any = None,
        device: Any = None) -> HostPtrArray:
    """A two-dimensional array with ones on the ``k``-th diagonal.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.eye(2, 3, k=1, dtype=ha.int8)
    HostPtrArray([[0, 1, 0],
                  [0, 0, 1]], dtype=int8)
    """
    dt = _given_dtype(np.float64 if dtype is None else dtype)
    m = n_rows if n_cols is None else n_cols
    _shape((n_rows, m))
    a = _aligned((n_rows, m), dt)
    a.fill(0)
    if -n_rows < k < m:
        a.reshape(-1)[max(k, -k * m):: m + 1][: min(n_rows + min(k, 0), m - max(k, 0))] = 1
    return _new(a, Storage(a), requested_device(device))


def linspace(start: int | float | complex, stop: int | float | complex, /, num: int, *,
             dtype: Any = None, device: Any = None, endpoint: bool = True) -> HostPtrArray:
    """``num`` evenly spaced values from ``start`` to ``stop``.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.linspace(0, 1, 5)
    HostPtrArray([0.  , 0.25, 0.5 , 0.75, 1.  ], dtype=float64)
    """
    dt = _dtype(dtype)
    if dt is None:
        dt = np.dtype(np.complex128 if isinstance(start, complex) or isinstance(stop, complex)
                      else np.float64)
    n = operator.index(num)
    return wrap(_allocate((builtins.max(0, n),), dt,
                          lambda: np.linspace(start, stop, n, endpoint=endpoint, dtype=dt),
                          True),
                requested_device(device))


def meshgrid(*arrays: HostPtrArray, indexing: str = "xy") -> tuple[HostPtrArray, ...]:
    """Coordinate matrices from one-dimensional coordinate arrays (a tuple).

    Examples
    --------
    >>> import hostarray as ha
    >>> X, Y = ha.meshgrid(ha.asarray([1, 2, 3]), ha.asarray([4, 5]))
    >>> X.shape, Y.shape
    ((2, 3), (2, 3))
    """
    if indexing not in ("xy", "ij"):
        raise ValueError(f"indexing must be 'xy' or 'ij', not {indexing!r}")
    dev = result_device(*arrays)
    grids = np.meshgrid(*(host(a) for a in arrays), indexing=indexing)  # type: ignore[call-overload]
    return tuple(wrap(g, dev) for g in grids)


def tril(x: HostPtrArray, /, *, k: int = 0) -> HostPtrArray:
    """The lower triangle of the last two axes of ``x`` (elements above diagonal ``k`` zeroed).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.tril(ha.ones((2, 2), dtype=ha.int8))
    HostPtrArray([[1, 0],
                  [1, 1]], dtype=int8)
    """
    return wrap(np.tril(host(x), k=k), dev_of(x))


def triu(x: HostPtrArray, /, *, k: int = 0) -> HostPtrArray:
    """The upper triangle of the last two axes of ``x`` (elements below diagonal ``k`` zeroed).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.triu(ha.ones((2, 2), dtype=ha.int8))
    HostPtrArray([[1, 1],
                  [0, 1]], dtype=int8)
    """
    return wrap(np.triu(host(x), k=k), dev_of(x))


def from_dlpack(x: Any, /, *, device: Device | str | None = None,
                copy: bool | None = None) -> HostPtrArray:
    """An array over the data of any object with ``__dlpack__`` (numpy, PyTorch on CPU, ...).

    The memory is adopted without a copy where it can be: always on the host,
    and on an OpenCL device when it is one contiguous range whose address is a
    multiple of ``max(device.host_alignment, itemsize)`` (the host alignment is
    probed per device: 1 byte on PoCL, so any element-aligned memory).
    Otherwise the data is copied into page-aligned storage (and ``copy=False``
    raises ``BufferError``).  ``copy=True`` always copies, into page-aligned
    storage.  Producers whose data is not in host memory raise ``BufferError``.

    Memory that belongs to a ``HostPtrArray`` (a DLPack export of it, passed on
    through other libraries) gives a view of that array: one memory range has
    one coherence state.  Other adopted memory stays the producer's: while it
    is held elsewhere, launches publish before and acquire after.

    Parameters
    ----------
    x : object
        An object implementing ``__dlpack__`` and ``__dlpack_device__``.
    device : Device or str, optional
        Where the result lives; ``None`` means the host (DLPack data here is
        always host memory).
    copy : bool, optional
        ``True``: always copy; ``False``: never copy; ``None``: copy only if needed.

    Returns
    -------
    HostPtrArray

    Examples
    --------
    >>> import numpy as np, hostarray as ha
    >>> a = np.arange(6.0).reshape(2, 3)
    >>> x = ha.from_dlpack(a)
    >>> np.shares_memory(np.asarray(x), a)
    True
    >>> ha.from_dlpack(a, copy=True)[0, 1]
    HostPtrArray(1., dtype=float64)
    """
    if isinstance(x, HostPtrArray):  # device=None keeps x's device, as the standard says
        dev = requested_device(device, x._device)
        if copy:
            return wrap(aligned_copy(x._host()), dev)
        if dev == x._device:
            return x
        if copy is False and dev.framework != "host" \
                and _sharing.copy_needed(x._s.base, dev) is not None:
            raise BufferError(f"this array's memory can't be shared with {dev} without a copy")
        return x.to_device(dev)
    dev = requested_device(device, HOST)
    if not hasattr(x, "__dlpack__"):
        # AttributeError: the standard's error for an object without __dlpack__
        raise AttributeError(f"a {type(x).__name__} does not implement __dlpack__; convert it "
                             f"with ha.asarray")
    if dev.framework not in ("host", "opencl"):
        raise BufferError(f"from_dlpack can place data on the host or an OpenCL device, "
                          f"not {dev}")
    try:
        a = np.from_dlpack(x, copy=False if copy is False else None)
    except ValueError as e:  # numpy's way of saying a copy is unavoidable
        raise BufferError(str(e)) from None
    if a.dtype.kind not in "biufc":
        raise TypeError(f"hostarray holds bool and numeric data only, not {a.dtype}")
    if copy:
        return wrap(aligned_copy(a), dev)
    return adopt(a, dev, copy, BufferError)
