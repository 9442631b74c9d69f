"""NumPy protocols, DLPack, pickling and Python conveniences for ``HostPtrArray``.

The methods on :class:`~hostarray.HostPtrArray` delegate here.  The rules:

* numpy computes on the host views the coherence hooks hand out: inputs are
  read through ``x._host()`` (acquiring first when a device wrote last) and
  outputs written through ``x._host_for_write()``; no raw view escapes to the
  caller except through ``__array__`` and DLPack, which register an escape.
* array results come back as ``HostPtrArray`` on the inputs' device (compute
  follows data); results that are views of an input stay views of its
  storage; numpy scalars stay numpy scalars, as numpy returns them.
* two different OpenCL devices in one call raise ``ValueError``.
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import numpy as np

from ._array import HostPtrArray, _view, aligned_copy, host_view, wrap
from ._devices import HOST, Device
from ._devices import device as _parse_device
from ._errors import HostPtrError
from ._storage import Storage, aligned_empty, locked

__all__ = ["from_dlpack", "install_ndarray_methods", "array", "array_ufunc", "array_function",
           "dlpack", "dlpack_device", "reduce", "copy", "deepcopy", "iterate", "length",
           "contains", "format_array", "result_device"]

KDL_CPU = 1  # DLPack's device type for host memory

# -- devices -----------------------------------------------------------------------------------

def result_device(objs: Any) -> Device:
    """The device results go to: the one non-host device among ``objs``' arrays (looking
    into lists and tuples), else the host.

    Raises ``ValueError`` when arrays on two different non-host devices meet.
    """
    dev = HOST
    for o in objs:
        if isinstance(o, HostPtrArray):
            d = o._device
        elif isinstance(o, (list, tuple)):
            d = result_device(o)
        else:
            continue
        if d.framework != "host" and d != dev:
            if dev.framework != "host":
                raise ValueError(f"arrays on two devices ({dev} and {d}) in one call; move "
                                 f"one with x.to_device(...) first")
            dev = d
    return dev


def _wrap_result(r: Any, dev: Device, sources: list[HostPtrArray]) -> Any:
    """A numpy result as hostarray returns it: arrays wrapped (views of an input's storage
    stay views of it), containers rebuilt, scalars and other objects as they are."""
    if isinstance(r, np.ndarray):
        if type(r) is not np.ndarray:  # e.g. np.matrix, masked arrays: numpy's own types
            return r
        for src in sources:
            if r.size and np.may_share_memory(r, src._s.base):
                return _view(src, r)
        return wrap(r, dev)
    if isinstance(r, tuple):
        items = [_wrap_result(v, dev, sources) for v in r]
        return type(r)(*items) if hasattr(r, "_fields") else tuple(items)
    if isinstance(r, list):
        return [_wrap_result(v, dev, sources) for v in r]
    return r


# -- __array__ ---------------------------------------------------------------------------------

def array(x: HostPtrArray, dtype: Any = None, copy: bool | None = None) -> np.ndarray:
    """``x.__array__``: the host data as numpy, per NumPy 2's ``copy`` rules.

    Without a copy the returned view is an escape (it may be kept and written), so
    handing it out waits for in-flight launches and acquires first."""
    if dtype is not None and np.dtype(dtype) != x.dtype:
        if copy is False:
            raise ValueError(f"converting {x.dtype} to {np.dtype(dtype)} needs a copy; pass "
                             f"copy=None or copy=True")
        return x._host().astype(dtype)
    if copy:
        return x._host().copy()
    return host_view(x)


# -- __array_ufunc__ ---------------------------------------------------------------------------

_PLAIN = frozenset({HostPtrArray, np.ndarray, int, float, complex, bool, type(None)})


def _foreign(v: Any) -> bool:
    """Whether ``v`` is an array type of another library that should handle the call."""
    return type(v) not in _PLAIN and hasattr(v, "__array_ufunc__") \
        and not isinstance(v, (HostPtrArray, np.ndarray, np.generic))


def _aligned_outputs(ufunc: np.ufunc, args: list[Any], kwargs: dict[str, Any],
                     dev: Device) -> tuple[np.ndarray, ...] | None:
    """Outputs for a ``ufunc.__call__`` on a device, allocated in aligned storage so that
    wrapping them needs no copy; ``None`` where numpy's own resolution is safer."""
    if dev.framework == "host" or "dtype" in kwargs or "signature" in kwargs \
            or ufunc.signature is not None:
        return None
    dts: list[Any] = []
    for a in args:
        if isinstance(a, (np.ndarray, np.generic)):
            dts.append(a.dtype)
        elif type(a) is bool:
            dts.append(np.dtype(bool))
        elif type(a) in (int, float, complex):
            dts.append(type(a))
        else:
            return None
    try:
        resolved = ufunc.resolve_dtypes((*dts, *([None] * ufunc.nout)),
                                        casting=kwargs.get("casting", "same_kind"))
        shape = np.broadcast_shapes(*(np.shape(a) for a in args))
    except (TypeError, ValueError, np.exceptions.DTypePromotionError):
        return None
    if not shape:
        return None  # numpy returns scalars for 0-d calls
    n = int(np.prod(shape))
    return tuple(aligned_empty(n * dt.itemsize).view(dt).reshape(shape)
                 for dt in resolved[ufunc.nin:])


def array_ufunc(x: HostPtrArray, ufunc: np.ufunc, method: str, *inputs: Any,
                **kwargs: Any) -> Any:
    """``x.__array_ufunc__``: every ufunc and method on host views, results as HostPtrArrays."""
    out = kwargs.get("out", ())
    for v in (*inputs, *out):
        if _foreign(v):
            return NotImplemented
    dev = result_device((*inputs, *out))
    # Reads first: an output that is also an input is then acquired before it is written.
    args = [v._host() if isinstance(v, HostPtrArray) else v for v in inputs]
    where = kwargs.get("where")
    if isinstance(where, HostPtrArray):
        kwargs["where"] = where._host()
    if method == "at":
        if isinstance(inputs[0], HostPtrArray):
            with inputs[0]._writing() as args[0]:
                getattr(ufunc, method)(*args, **kwargs)
        else:
            getattr(ufunc, method)(*args, **kwargs)
        return None
    with locked(o._s for o in out if isinstance(o, HostPtrArray)):  # written under the lock
        if out:
            whole = where is None
            kwargs["out"] = tuple(o._host_for_write(whole) if isinstance(o, HostPtrArray)
                                  else o for o in out)
        elif method == "__call__":
            outs = _aligned_outputs(ufunc, args, kwargs, dev)
            if outs is not None:
                kwargs["out"] = outs
        result = getattr(ufunc, method)(*args, **kwargs)
    results = result if ufunc.nout > 1 and method == "__call__" else (result,)
    wrapped = []
    for i, r in enumerate(results):
        o = out[i] if i < len(out) else None
        if isinstance(o, HostPtrArray):
            wrapped.append(o)
        elif o is not None:
            wrapped.append(r)  # a numpy out= array is returned as numpy returns it
        else:  # a fresh result: ufuncs return views of their inputs only through out=
            wrapped.append(wrap(r, dev) if type(r) is np.ndarray else r)
    return wrapped[0] if len(wrapped) == 1 else tuple(wrapped)


# -- __array_function__ ------------------------------------------------------------------------

# Functions that write into a positional argument: (function, index of the written argument).
_WRITES_ARG: dict[Callable[..., Any], int] = {
    np.copyto: 0, np.put: 0, np.place: 0, np.putmask: 0, np.fill_diagonal: 0,
    np.put_along_axis: 0,
}


def _namespace_route(func: Callable[..., Any], args: tuple[Any, ...],
                     kwargs: dict[str, Any]) -> Any:
    """The hostarray namespace call equivalent to ``func(*args, **kwargs)``, or ``None``.

    Only calls whose meaning is the same in numpy and in the standard are routed:
    every array argument a HostPtrArray, no numpy-only keyword."""
    import hostarray as ha

    def ours(*vs: Any) -> bool:
        return all(isinstance(v, HostPtrArray) for v in vs)

    name: str | None = None
    call_args: tuple[Any, ...] = ()
    call_kwargs: dict[str, Any] = {}
    if func is np.concatenate and len(args) == 1 and set(kwargs) <= {"axis"} \
            and isinstance(args[0], (list, tuple)) and args[0] and ours(*args[0]):
        name, call_args = "concat", (tuple(args[0]),)
        call_kwargs = {"axis": kwargs.get("axis", 0)}
    elif func is np.stack and len(args) == 1 and set(kwargs) <= {"axis"} \
            and isinstance(args[0], (list, tuple)) and args[0] and ours(*args[0]):
        name, call_args, call_kwargs = "stack", (tuple(args[0]),), dict(kwargs)
    elif func is np.where and len(args) == 3 and not kwargs and ours(*args):
        name, call_args = "where", args
    elif func in (np.sort, np.argsort) and len(args) == 1 and set(kwargs) <= {"axis"} \
            and ours(args[0]) and kwargs.get("axis", -1) is not None:
        name, call_args, call_kwargs = func.__name__, args, dict(kwargs)
    elif func is np.expand_dims and ours(args[0]) and len(args) + len(kwargs) == 2 \
            and isinstance(args[1] if len(args) > 1 else kwargs.get("axis"), int):
        name, call_args = "expand_dims", (args[0],)
        call_kwargs = {"axis": args[1] if len(args) > 1 else kwargs["axis"]}
    if name is None:
        return None
    target = getattr(ha, name, None)
    if target is None:
        return None
    return target(*call_args, **call_kwargs)


def _to_host(v: Any, sources: list[HostPtrArray]) -> Any:
    if isinstance(v, HostPtrArray):
        sources.append(v)
        return v._host()
    if type(v) is list or type(v) is tuple:
        return type(v)(_to_host(i, sources) for i in v)
    return v


def array_function(x: HostPtrArray, func: Callable[..., Any], types: tuple[type, ...],
                   args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
    """``x.__array_function__``: through the namespace where it has a matching function,
    otherwise numpy's own function on host views, array results wrapped back."""
    for t in types:
        if not issubclass(t, (HostPtrArray, np.ndarray)):
            return NotImplemented
    routed = _namespace_route(func, args, kwargs)
    if routed is not None:
        return routed
    dev = result_device((*args, *kwargs.values()))
    sources: list[HostPtrArray] = []
    hargs = [_to_host(a, sources) for a in args]
    hkwargs = {k: _to_host(v, sources) for k, v in kwargs.items()}
    # Writes after reads, so a written argument that is also read was acquired first.
    written: dict[int, HostPtrArray] = {}
    i = _WRITES_ARG.get(func)
    if i is not None and i < len(args) and isinstance(args[i], HostPtrArray):
        hargs[i] = args[i]._host_for_write()
        written[id(hargs[i])] = args[i]
    outs = kwargs.get("out")
    for o in outs if isinstance(outs, tuple) else (outs,):
        if isinstance(o, HostPtrArray):
            written[id(o._a)] = o
    with locked(w._s for w in written.values()):  # written under the lock
        for j, h in enumerate(hargs):
            if id(h) in written:
                hargs[j] = written[id(h)]._host_for_write()
        if isinstance(outs, HostPtrArray):
            hkwargs["out"] = outs._host_for_write()
        elif isinstance(outs, tuple):
            hkwargs["out"] = tuple(o._host_for_write() if isinstance(o, HostPtrArray) else o
                                   for o in outs)
        result = func(*hargs, **hkwargs)
    if isinstance(result, np.ndarray):
        if id(result) in written:
            return written[id(result)]
        if outs is not None and any(result is o for o in (outs if isinstance(outs, tuple)
                                                          else (outs,))):
            return result  # a numpy out= array comes back as numpy returns it
    return _wrap_result(result, dev, sources)


# -- DLPack ------------------------------------------------------------------------------------

def dlpack_device(x: HostPtrArray) -> tuple[int, int]:
    """``x.__dlpack_device__``: always host memory, ``(kDLCPU, 0)``."""
    return (KDL_CPU, 0)


def dlpack(x: HostPtrArray, *, stream: Any = None, max_version: tuple[int, int] | None = None,
           dl_device: tuple[int, int] | None = None, copy: bool | None = None) -> Any:
    """``x.__dlpack__``: export the host bytes (acquired first) as a DLPack capsule.

    Without a copy the consumer holds a pointer into ``x``'s memory and may write through
    it, so the export is an escape for as long as the consumer keeps it."""
    if stream is not None:
        raise BufferError("hostarray arrays live in host memory: DLPack stream must be None")
    if dl_device is not None and tuple(dl_device) != (KDL_CPU, 0):
        raise BufferError(f"hostarray exports host memory only (dl_device=({KDL_CPU}, 0)), "
                          f"not {tuple(dl_device)}")
    if copy:
        src: np.ndarray = x._host()
    else:
        src = host_view(x)
        if not x._a.flags.writeable:
            src.flags.writeable = False
    return src.__dlpack__(max_version=max_version, copy=copy)


def from_dlpack(x: Any, /, *, device: Device | str | None = None,
                copy: bool | None = None) -> HostPtrArray:
    """An array over the data of any object with ``__dlpack__`` (numpy, PyTorch on CPU, ...).

    The memory is adopted without a copy where it can be: always on the host,
    and on an OpenCL device when its address meets the device's alignment
    (``Device.alignment``, 128 bytes on PoCL) and it is one contiguous range.
    Otherwise the data is copied into page-aligned storage (and ``copy=False``
    raises ``BufferError``).  ``copy=True`` always copies, into page-aligned
    storage.  Producers whose data is not in host memory raise ``BufferError``.

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
        dev = x._device if device is None else _parse_device(device)
        if copy:
            return wrap(aligned_copy(x._host()), dev)
        if dev == x._device:
            return x
        if copy is False and dev.framework != "host" and not _shares_ok(x._s, dev):
            raise BufferError(f"this array's memory can't be shared with {dev} without a copy")
        return x.to_device(dev)
    dev = HOST if device is None else _parse_device(device)
    if not hasattr(x, "__dlpack__"):
        raise TypeError(f"a {type(x).__name__} does not implement __dlpack__; convert it with "
                        f"ha.asarray")
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
    from ._array import adopt
    return adopt(a, dev, copy, BufferError)


def _shares_ok(s: Storage, dev: Device) -> bool:
    return s.nbytes == 0 or (s.contiguous_bytes() is not None and s.address % dev.alignment == 0)


# -- pickling and copies -----------------------------------------------------------------------

def _rebuild(a: np.ndarray, device_key: str) -> HostPtrArray:
    """Unpickle: the data on the device of that name if this process has it, else the host."""
    dev = HOST
    if device_key != "cpu":
        try:
            dev = _parse_device(device_key)
        except HostPtrError as e:
            warnings.warn(f"the pickled array was on {device_key}, which this process does not "
                          f"have ({e}); it is on the host now", RuntimeWarning, stacklevel=2)
    if not a.flags.writeable:  # e.g. unpickled from a read-only buffer: kernels may write it
        a = aligned_copy(a)
    return wrap(a, dev)


def reduce(x: HostPtrArray) -> tuple[Any, ...]:
    """``x.__reduce__``: the host data (acquired first) and the device recorded by name."""
    return (_rebuild, (x._host(), str(x._device)))


def copy(x: HostPtrArray) -> HostPtrArray:
    """``copy.copy(x)``: a new array with a copy of the data, on the same device (as numpy)."""
    return wrap(aligned_copy(x._host()), x._device)


def deepcopy(x: HostPtrArray, memo: dict[int, Any]) -> HostPtrArray:
    """``copy.deepcopy(x)``: like :func:`copy` (the elements are plain numbers)."""
    r = copy(x)
    memo[id(x)] = r
    return r


# -- Python conveniences -----------------------------------------------------------------------

def length(x: HostPtrArray) -> int:
    """``len(x)``: the first dimension; a 0-d array has none (``TypeError``, as numpy)."""
    if x.ndim == 0:
        raise TypeError("len() of a 0-d array")
    return x.shape[0]


def iterate(x: HostPtrArray) -> Any:
    """``iter(x)``: numpy scalars for a 1-D array (as numpy), views along axis 0 otherwise."""
    if x.ndim == 0:
        raise TypeError("iteration over a 0-d array")
    if x.ndim == 1:
        return iter(x._host().copy())  # a snapshot: later kernel writes don't race the loop
    return (_view(x, x._host()[i]) for i in range(x.shape[0]))


def contains(x: HostPtrArray, value: Any) -> bool:
    """``value in x``: whether any element equals ``value`` (numpy's rule)."""
    v = value._host() if isinstance(value, HostPtrArray) else value
    return bool((x._host() == v).any())


def format_array(x: HostPtrArray, spec: str) -> str:
    """``format(x, spec)``: a 0-d array formats like its element; an empty spec gives ``str``."""
    if not spec:
        return str(x)
    if x.ndim == 0:
        return format(x._host().item(), spec)
    raise TypeError(f"unsupported format string {spec!r} for a {x.ndim}-d HostPtrArray; format "
                    f"its elements, e.g. with x.tolist()")


# -- numpy's ndarray methods ---------------------------------------------------------------

def _shape_args(args: tuple[Any, ...]) -> Any:
    """``x.reshape(2, 3)`` and ``x.reshape((2, 3))`` mean the same (as in numpy)."""
    return args[0] if len(args) == 1 else args


def _sort_in_place(x: HostPtrArray, axis: int = -1, kind: Any = None, order: Any = None) -> None:
    with x._s.lock:
        x._host_for_write().sort(axis=axis, kind=kind, order=order)


def _fill(x: HostPtrArray, value: Any) -> None:
    with x._s.lock:
        x._host_for_write(whole=True).fill(value)


def _view_as(x: HostPtrArray, dtype: Any = None) -> HostPtrArray:
    a = x._host()
    return _view(x, a.view() if dtype is None else a.view(dtype))


_METHODS: dict[str, Callable[..., Any]] = {
    "reshape": lambda x, *shape, **kw: np.reshape(x, _shape_args(shape), **kw),
    "transpose": lambda x, *axes: np.transpose(x, _shape_args(axes) if axes else None),
    "swapaxes": np.swapaxes, "squeeze": np.squeeze, "ravel": np.ravel,
    "flatten": lambda x: wrap(x._host().flatten(), x._device),
    "astype": lambda x, dtype, *a, **kw: np.astype(x, dtype, *a, **kw)
    if np.dtype(dtype) != x.dtype or kw.get("copy", True) else x,
    "copy": lambda x, order="C": copy(x),
    "view": _view_as, "sort": _sort_in_place, "fill": _fill,
    "sum": np.sum, "prod": np.prod, "mean": np.mean, "std": np.std, "var": np.var,
    "min": np.min, "max": np.max, "argmin": np.argmin, "argmax": np.argmax,
    "any": np.any, "all": np.all, "cumsum": np.cumsum, "cumprod": np.cumprod,
    "clip": np.clip, "round": np.round, "dot": np.dot, "nonzero": np.nonzero,
    "argsort": np.argsort, "searchsorted": np.searchsorted, "take": np.take,
    "repeat": np.repeat, "diagonal": np.diagonal, "trace": np.trace, "compress": np.compress,
    "conj": np.conjugate, "conjugate": np.conjugate,
}
_ATTRIBUTES: dict[str, Callable[[HostPtrArray], Any]] = {
    "real": np.real, "imag": np.imag, "itemsize": lambda x: x.dtype.itemsize,
    "strides": lambda x: x._a.strides,
}


def _method(name: str, f: Callable[..., Any]) -> Callable[..., Any]:
    def method(self: HostPtrArray, *args: Any, **kwargs: Any) -> Any:
        return f(self, *args, **kwargs)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = (f"numpy's ``ndarray.{name}``, on the host data; array results are "
                      f"HostPtrArrays on the same device.")
    return method


def install_ndarray_methods(cls: type) -> None:
    """Give ``cls`` numpy's ``ndarray`` methods and attributes it lacks (``x.reshape``,
    ``x.sum``, ``x.astype``, ``x.real`` ...), on host views with results wrapped back.

    Real class attributes, not ``__getattr__``: numpy probes arrays for missing
    attributes (``__array_interface__``...) on every conversion, and a Python
    ``__getattr__`` would slow each probe down."""
    for name, f in _METHODS.items():
        if name not in cls.__dict__:
            setattr(cls, name, _method(name, f))
    for name, g in _ATTRIBUTES.items():
        if name not in cls.__dict__:
            setattr(cls, name, property(g, doc=f"numpy's ``ndarray.{name}``."))


install_ndarray_methods(HostPtrArray)
