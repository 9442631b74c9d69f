"""Compute follows data: where an operation runs, and where its result goes, decided once.

An operation runs on an OpenCL device, with kernels hostarray generates
(:mod:`hostarray._compute`), when :func:`target` says so:

* every array operand is a HostPtrArray on one OpenCL device whose host link is
  *mapped* or *copied* (on a *shared* link the host reads the device's bytes with no copy,
  and numpy is the right engine); other operands are Python scalars;
* at least one operand's newest bytes are on that device and not on the host (a kernel
  wrote them); the other operands are current on the device too, or host-newest and at
  most :data:`PUBLISH_LIMIT` bytes each (then published);
* the largest array involved (an operand or the result) has at least
  :func:`device_compute_threshold` bytes.

Everything else runs on the host with numpy.  Either way the result goes to
:func:`result_device`: the operands' device (the host, or their one other device; two
different devices raise ``ValueError``, here and nowhere else).

:func:`try_device` is the one entry of the device path: every namespace function,
operator, ``x[key] = value``, ``astype``, copy and creation function that has one asks
it, with the operation's name, its operands, ``out=`` and its other arguments; it
answers with the result computed on the device, or ``None``, and the caller computes on
the host.  Callers ask only where :func:`device_newest` holds for an operand (one
attribute test: the host path pays nothing more), creation functions only for an
OpenCL device; the element-wise functions and operators make that test inline.

numpy's spellings on device data (``np.exp(x)``, ``np.mean(x, axis=0)``, ``x.sum()``)
reach it through the namespace's functions (:mod:`hostarray._numpy_spelling` translates
them; ``out=`` of a ufunc asks :func:`try_device` directly, as the in-place operators
do); a numpy spelling the device path can't take is counted by :func:`refused`.  Pending
(lazy) element-wise expressions are meant to plug in here too: it sees the operation,
the operands, their data types and ``out=``.
"""

from __future__ import annotations

import math
import operator
import threading
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np

from . import _compute, _settings, _stats
from ._array import HostPtrArray, _basic_target, _new, basic_key
from ._coherence import HOST as _HOST_SIDE
from ._compute import PUBLISH_LIMIT
from ._devices import HOST, Device
from ._devices import default_device as _default_device
from ._devices import device as _parse_device

if TYPE_CHECKING:  # loaded on first use through _compute.__getattr__ (they import pyopencl)
    from ._compute import elementwise, matmul, misc, reductions  # noqa: F401

__all__ = ["PUBLISH_LIMIT", "device_compute_threshold", "set_device_compute_threshold",
           "device_newest", "target", "try_device", "result_nbytes", "result_device",
           "join", "requested_device", "refused"]

HPA = HostPtrArray
_SCALARS = (bool, int, float)


# -- where results go ------------------------------------------------------------------------

def join(d1: Device, d2: Device) -> Device:
    """The device of a result computed from inputs on ``d1`` and ``d2``: the one that is
    not the host; ``ValueError`` for two different devices."""
    if d1 is d2 or d1 == d2:
        return d1
    if d1.framework == "host":
        return d2
    if d2.framework == "host":
        return d1
    raise ValueError(f"arrays on two different devices ({d1} and {d2}) in one call; move one "
                     f"with x.to_device(...) first")


def result_device(*objs: Any) -> Device:
    """The device results of an operation on ``objs`` go to: the one device other than the
    host among their arrays (looking into lists and tuples), else the host."""
    d = HOST
    for o in objs:
        if type(o) is HPA or isinstance(o, HostPtrArray):
            od = o._device
            if od is not d:
                d = join(d, od)
        elif isinstance(o, (list, tuple)):
            od = result_device(*o)
            if od is not d:
                d = join(d, od)
    return d


def requested_device(device: Any, default: Device | None = None) -> Device:
    """A ``device=`` argument as a Device; ``None`` is ``default``, else the default device
    (the innermost ``ha.default_device`` block's, else ``HOSTARRAY_DEVICE``'s, else the
    host, as ``__array_namespace_info__().default_device()`` reports it)."""
    if device is None:
        return _default_device() if default is None else default
    if type(device) is Device:
        return device
    return _parse_device(device)


# -- the threshold -------------------------------------------------------------------------------

class _Unset:
    pass


_UNSET: Any = _Unset()
_lock = threading.Lock()
# read from the environment at first use, not at import (hostarray._settings: a bad value
# raises there, and ``import hostarray`` never fails on it)
_threshold: list[Any] = [_UNSET]


def _parsed() -> int | None:
    with _lock:
        if _threshold[0] is _UNSET:
            _threshold[0] = _settings.device_compute_min_bytes()
        return _threshold[0]


def device_compute_threshold() -> int | None:
    """The smallest size, in bytes, of an operation's largest array for it to run on a
    device (``None``: the device path is off).

    The default is 1 MiB (below that, a launch costs more than numpy's work plus the
    acquire); the environment variable ``HOSTARRAY_DEVICE_COMPUTE_MIN_BYTES`` (a number of
    bytes, or ``off``) sets it, read at first use; :func:`set_device_compute_threshold` at
    run time.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.device_compute_threshold() is None or ha.device_compute_threshold() >= 0
    True
    """
    v = _threshold[0]
    return _parsed() if v is _UNSET else v


def set_device_compute_threshold(nbytes: int | None) -> int | None:
    """Set :func:`device_compute_threshold` (``0``: every size; ``None``: never) and
    return the previous value.

    Examples
    --------
    >>> import hostarray as ha
    >>> old = ha.set_device_compute_threshold(0)   # every size, e.g. to test the device path
    >>> _ = ha.set_device_compute_threshold(old)
    """
    if nbytes is not None:
        if isinstance(nbytes, (bool, np.bool_)):
            raise TypeError("the threshold is a number of bytes or None, not a bool")
        try:
            nbytes = operator.index(nbytes)  # numpy integers too
        except TypeError:
            raise TypeError(f"the threshold is a number of bytes or None, not "
                            f"{type(nbytes).__name__}") from None
        if nbytes < 0:
            raise ValueError(f"the threshold must be >= 0 bytes, got {nbytes}")
    old = device_compute_threshold()  # raises for a bad environment value, as before
    with _lock:
        _threshold[0] = nbytes
    return old


# -- where operations run ----------------------------------------------------------------------

def device_newest(x: Any) -> bool:
    """Whether ``x`` is a HostPtrArray some of whose bytes may be newer on a device than on
    the host (its storage's flag: one attribute test).  Only then may an operation on it
    run on a device; :func:`target` decides."""
    return type(x) is HPA and x._s.host_stale


def target(operands: tuple[Any, ...],
           result_nbytes: int | Callable[[], int] = 0) -> Device | None:
    """The device an operation on ``operands`` runs on, or ``None`` for the host (see the
    module's docstring for the rule).  Operands that are not HostPtrArrays must be Python
    scalars (a numpy array operand keeps the host path).  ``result_nbytes``: the result's
    size, or a function giving it (called only where the operands alone are below the
    threshold)."""
    limit = _threshold[0]
    if limit is _UNSET:
        limit = _parsed()
    if limit is None:
        return None
    dev: Any = None
    newest = False
    largest = result_nbytes if type(result_nbytes) is int else 0
    small_host: list[HostPtrArray] = []
    for x in operands:
        if type(x) is not HPA:
            if x is None or type(x) in _SCALARS:
                continue
            return None  # numpy input, complex scalars: the host path
        d = x._device
        if dev is None:
            if d.framework != "opencl":
                return None
            dev = d
        elif d is not dev:
            return None  # the host path raises the mixed-device error
        if x._a.ndim > 32:
            return None  # numpy's broadcasting helpers stop at 32 operands/dimensions
        s = x._s
        n = x._a.nbytes
        if n > largest:
            largest = n
        coh = s.coh
        if coh is None:  # never on a device: host-newest
            small_host.append(x)
            continue
        buf = s.buffers.get(dev)
        if buf is None:
            small_host.append(x)
            continue
        if buf.link == "shared":
            return None
        _, lo, hi = x._span or x._bytes()  # (the span, cached after the first use)
        with s.lock:  # another thread may be changing the map (it has the lock by now)
            sides = coh.sides_current(lo, hi)
        if dev in sides:
            if _HOST_SIDE not in sides:
                newest = True
        elif _HOST_SIDE in sides:
            small_host.append(x)
        else:
            return None  # the newest bytes are on another device (or split): the host path
    if not newest:
        return None
    if largest < limit:
        if type(result_nbytes) is int or result_nbytes() < limit:  # type: ignore[operator]
            return None
    for x in small_host:
        _, lo, hi = x._span or x._bytes()  # a strided view publishes its whole span
        if hi - lo > PUBLISH_LIMIT:
            return None
    return dev  # (a device-newest operand's buffer is off a shared link: checked above)


def refused(operands: tuple[Any, ...]) -> None:
    """A call on ``operands`` that the device path can't take (numpy's spelling with an
    argument the namespace has no meaning for, such as ``np.sum(x, initial=1)``) runs on
    the host: ``ha.stats().host_fallbacks`` counts it where :func:`target` would have
    sent it to a device (nothing where the host's was the path anyway)."""
    for x in operands:
        if type(x) is HPA and x._s.host_stale:
            if target(operands) is not None:
                _stats.COUNTERS.add(host_fallbacks=1)
            return


def result_nbytes(fn: Any, operands: tuple[Any, ...]) -> int:
    """Bytes of the broadcast result of numpy's ``fn`` on ``operands`` (HostPtrArrays and
    Python scalars): its type as ``fn`` resolves it where ``fn`` is a ufunc, else the
    widest operand's; 0 where the shapes don't broadcast (the host path raises)."""
    arrays = [x._a for x in operands if type(x) is HPA]
    try:
        n = math.prod(np.broadcast_shapes(*(a.shape for a in arrays)))
    except (ValueError, RuntimeError):
        return 0
    item = max(a.itemsize for a in arrays)
    if isinstance(fn, np.ufunc):
        try:
            dts = tuple(x._a.dtype if type(x) is HPA else type(x) for x in operands)
            item = fn.resolve_dtypes((*dts, None))[-1].itemsize
        except (TypeError, ValueError):
            pass
    return n * item


# -- the entry -----------------------------------------------------------------------------------

def try_device(op: str, operands: tuple[Any, ...], out: HostPtrArray | None = None,
               **kw: Any) -> HostPtrArray | None:
    """Operation ``op`` (the namespace's name: ``"add"``, ``"sum"``, ``"matmul"``,
    ``"astype"``, ``"setitem"``, ``"full"`` ...) of ``operands`` computed on the device
    :func:`target` picks, into ``out`` where given, with the function's other arguments
    ``kw``; ``None``: compute on the host (where the device was picked but can't do it,
    ``ha.stats().host_fallbacks`` counts it).

    ``kw`` per operation: element-wise ones take ``fn``, numpy's implementation (its
    result type sizes a broadcast result for the threshold); reductions and cumulative
    functions their keyword arguments; ``tensordot`` ``axes``; ``astype`` ``dtype``
    (``copy`` none); ``setitem`` ``key`` (operands ``(x, value)``; answers ``x``);
    ``empty`` and ``full`` (no operands) ``device``, ``shape``, ``dtype`` and ``full``'s
    ``value``."""
    entry = _ENTRIES.get(op)
    if entry is not None:
        return entry(op, operands, out, kw)
    # an element-wise operation (the hottest entry: no frame of its own)
    fn = kw.get("fn")
    dev = target(operands, 0 if out is not None else lambda: result_nbytes(fn, operands))
    if dev is None:
        return None
    return _compute.elementwise.elementwise(op, dev, operands, out)


def _matmul_nbytes(x1: HostPtrArray, x2: HostPtrArray) -> int:
    """Bytes of ``x1 @ x2``'s result, as far as the shapes say (0 where they don't fit)."""
    s1, s2 = x1._a.shape, x2._a.shape
    try:
        bshape = np.broadcast_shapes(s1[:-2], s2[:-2])
    except ValueError:
        return 0
    m = s1[-2] if len(s1) >= 2 else 1
    n = s2[-1] if len(s2) >= 2 else 1
    try:
        item = np.matmul.resolve_dtypes((x1._a.dtype, x2._a.dtype, None))[2].itemsize
    except (TypeError, ValueError):
        return 0
    return math.prod(bshape) * m * n * item


def _matmul(op: str, operands: tuple[Any, ...], out: HostPtrArray | None,
            kw: dict[str, Any]) -> HostPtrArray | None:
    # the result counts in the threshold: an outer product can be far larger than its operands
    x1, x2 = operands
    both = type(x1) is HPA and type(x2) is HPA
    dev = target(operands, _matmul_nbytes(x1, x2) if both else 0)
    if dev is None:
        return None
    return _compute.matmul.matmul(dev, x1, x2, out)


def _tensordot(op: str, operands: tuple[Any, ...], out: HostPtrArray | None,
               kw: dict[str, Any]) -> HostPtrArray | None:
    x1, x2 = operands
    axes = kw["axes"]
    nbytes = 0
    if type(x1) is HPA and type(x2) is HPA:
        ax = _compute.matmul.contracted_axes(x1._a.ndim, x2._a.ndim, axes)
        if ax is not None:
            nbytes = max(x1._a.itemsize, x2._a.itemsize) * math.prod(
                [n for i, n in enumerate(x1._a.shape) if i not in ax[0]]
                + [n for j, n in enumerate(x2._a.shape) if j not in ax[1]])
    dev = target(operands, nbytes)
    if dev is None:
        return None
    return _compute.matmul.tensordot(dev, x1, x2, axes)


def _reduction(op: str, operands: tuple[Any, ...], out: HostPtrArray | None,
               kw: dict[str, Any]) -> HostPtrArray | None:
    dev = target(operands)
    if dev is None:
        return None
    return _compute.reductions.reduction(op, dev, operands, **kw)


def _cumulative_nbytes(x: HostPtrArray, dtype: Any) -> int:
    """The size of a cumulative result of ``x`` in ``dtype`` (its initial row left out)."""
    try:
        return x._a.size * np.dtype(dtype if dtype is not None else x._a.dtype).itemsize
    except TypeError:
        return 0  # a bad dtype: the host path raises numpy's error


def _cumulative(op: str, operands: tuple[Any, ...], out: HostPtrArray | None,
                kw: dict[str, Any]) -> HostPtrArray | None:
    (x,) = operands
    dtype = kw["dtype"]
    # the result (dtype=, include_initial) may be larger than x: it counts too
    dev = target(operands, lambda: _cumulative_nbytes(x, dtype))
    if dev is None:
        return None
    return _compute.reductions.cumulative(op, dev, x, kw["axis"], dtype, kw["include_initial"])


def _selection(op: str, operands: tuple[Any, ...], out: HostPtrArray | None,
               kw: dict[str, Any]) -> HostPtrArray | None:
    dev = target(operands, lambda: result_nbytes(None, operands))
    if dev is None:
        return None
    a, b, c = operands
    if op == "where":
        return _compute.misc.where(a, b, c, dev)
    return _compute.misc.clip(a, b, c, dev)


def _astype(op: str, operands: tuple[Any, ...], out: HostPtrArray | None,
            kw: dict[str, Any]) -> HostPtrArray | None:
    x, dt = operands[0], kw["dtype"]
    dev = target(operands, x._a.size * dt.itemsize)
    if dev is None:
        return None
    return _compute.misc.astype(x, dt, dev)


def _copy(op: str, operands: tuple[Any, ...], out: HostPtrArray | None,
          kw: dict[str, Any]) -> HostPtrArray | None:
    x = operands[0]
    dev = target(operands, x._a.nbytes)
    if dev is None:
        return None
    return _compute.misc.copy(x, dev)


# -- x[key] = value ------------------------------------------------------------------------------

def _element(key: Any, ndim: int) -> bool:
    """Whether the basic ``key`` names one element (an integer per axis: numpy's scalar
    assignment, which takes no array)."""
    parts = key if type(key) is tuple else (key,)
    return len(parts) == ndim and all(type(k) is int for k in parts)


def _newest_in(x: HostPtrArray, view: np.ndarray) -> bool:
    """Whether some bytes ``view`` (of ``x``'s storage) covers are newer on a device than
    on the host."""
    coh = x._s.coh
    if coh is None:
        return False
    lo, hi = x._s.byte_range(view)
    with x._s.lock:  # (as in target: another thread may be changing the map)
        return not coh.is_host_current(lo, hi)


def _setitem(op: str, operands: tuple[Any, ...], out: HostPtrArray | None,
             kw: dict[str, Any]) -> HostPtrArray | None:
    """``x[key] = value`` on ``x``'s device, with no acquire of ``x``: ``key`` a basic index,
    ``value`` a real scalar or a HostPtrArray on the same device (the rule above, for the
    bytes written: the largest of ``x`` and ``value`` from the threshold, some of the
    written bytes or of ``value`` newest on the device)."""
    x, value = operands
    key = kw["key"]
    dev = x._device
    if dev.framework != "opencl" or not basic_key(key):
        return None
    limit = device_compute_threshold()
    if limit is None:
        return None
    big = x._a.nbytes
    if type(value) is HPA:
        if value._device is not dev or (value._a.ndim and _element(key, x._a.ndim)):
            return None  # numpy refuses an array (even of one element) for one element
        big = max(big, value._a.nbytes)
    elif not (type(value) in _SCALARS or (isinstance(value, np.generic)
                                           and value.dtype.kind in "biuf")):
        return None
    if big < limit:
        return None
    buf = x._s.buffers.get(dev)
    if (dev.link if buf is None else buf.link) not in ("mapped", "copied"):
        return None
    try:
        written = _basic_target(x._a, key)
    except (IndexError, TypeError, ValueError):
        return None  # numpy's error comes from the host path
    if written is None or written.size == 0 or written.ndim > 32:
        return None
    if not _newest_in(x, written) and not (type(value) is HPA
                                          and _newest_in(value, value._a)):
        return None  # the newest bytes are the host's, so is the work
    if _compute.misc.setitem(_new(written, x._s, dev), value, dev) is None:
        return None
    return x


# -- creation ------------------------------------------------------------------------------------

def _fill(op: str, operands: tuple[Any, ...], out: HostPtrArray | None,
          kw: dict[str, Any]) -> HostPtrArray | None:
    """A new array of ``shape`` and ``dtype`` on the OpenCL ``device`` filled there by a
    kernel (``empty``: device-newest, uninitialised), or ``None``: the host allocates it.

    An array created with ``device=`` a mapped or copied device is made to be used
    there: filled by the host, its first kernel would publish every byte; filled by the
    device, nothing moves until the host looks (and then it moves once, as the publish
    would have).  Below the threshold, and on a shared link (the host fills the very
    memory the device uses), the host fills it."""
    dev, shape, dt = kw["device"], kw["shape"], kw["dtype"]
    limit = device_compute_threshold()
    if (dev.framework != "opencl" or limit is None or math.prod(shape) * dt.itemsize < limit
            or dev.link == "shared"):
        return None
    if op == "empty":
        return _compute.misc.fill(dev, shape, dt)
    value = kw["value"]
    if type(value) is HPA and value._device is not dev:
        value = value._host()[()]  # another device's scalar: its value, as on the host
    return _compute.misc.fill(dev, shape, dt, value)


_Entry = Callable[[str, tuple[Any, ...], Any, dict[str, Any]], Any]
_ENTRIES: dict[str, _Entry] = {
    "matmul": _matmul, "tensordot": _tensordot, "where": _selection, "clip": _selection,
    "astype": _astype, "copy": _copy, "setitem": _setitem, "empty": _fill, "full": _fill,
    "cumulative_sum": _cumulative, "cumulative_prod": _cumulative,
    **{name: _reduction for name in ("sum", "prod", "max", "min", "mean", "std", "var", "any",
                                     "all", "argmax", "argmin", "vecdot", "vector_norm")},
}
