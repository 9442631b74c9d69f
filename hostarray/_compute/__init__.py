"""Compute where the newest data is: the device path of the namespace.

A namespace function or operator runs on an OpenCL device, with kernels
hostarray generates, when :func:`target` says so:

* every array operand is a HostPtrArray on one OpenCL device whose host link
  is *mapped* or *copied* (on a *shared* link the host reads the device's
  bytes with no copy, and numpy is the right engine);
* at least one operand's newest bytes are on that device and not on the host
  (a kernel wrote them); the other operands are current on the device too, or
  host-newest and at most :data:`PUBLISH_LIMIT` bytes (then published);
* the largest array involved (an operand or the result) has at least
  :func:`device_compute_threshold` bytes.

Then nothing is acquired: the result is a HostPtrArray on that device whose
newest data is on the device, and the host acquires it only when it looks.
Everything else runs on the host with numpy, as before.  ``ha.stats()``
counts ``device_ops`` (operations run on the device) and ``host_fallbacks``
(operations :func:`target` sent to the device but that the device path
can't do: an unsupported data type, such as complex or float16, or a view
whose offset is not a whole number of elements).

Which namespace functions the device path computes is recorded in
:data:`DEVICE_FUNCTIONS`: each module of this package adds its names when it is
imported (:func:`register`); :func:`device_functions` imports them all and
returns the record (the documentation's coverage table is generated from it).
"""

from __future__ import annotations

import importlib
import math
import operator
import os
import pkgutil
import threading
from collections.abc import Callable, Iterable
from typing import Any

import numpy as np

from .._array import HostPtrArray
from .._coherence import HOST
from .._devices import Device

__all__ = ["DEVICE_FUNCTIONS", "PUBLISH_LIMIT", "device_compute_threshold", "result_nbytes",
           "device_functions", "register", "set_device_compute_threshold", "target"]

HPA = HostPtrArray

#: host-newest operands up to this many bytes are published for a device operation
PUBLISH_LIMIT = 1 << 20

#: namespace function name -> a short note on what of it stays on the host ("" if
#: nothing); filled by the modules of this package at import (see :func:`register`)
DEVICE_FUNCTIONS: dict[str, str] = {}

_DEFAULT_THRESHOLD = 1 << 20
_ENV = "HOSTARRAY_DEVICE_COMPUTE_MIN_BYTES"
_lock = threading.Lock()


def _from_env() -> int | None:
    given = os.environ.get(_ENV, "")
    v = given.strip().lower()
    if not v:
        return _DEFAULT_THRESHOLD
    if v in ("off", "none", "never"):
        return None
    try:
        n = int(v)
    except ValueError:
        raise ValueError(f"{_ENV}={given!r}: give a number of bytes (0: every size) or "
                         f"'off'") from None
    if n < 0:
        raise ValueError(f"{_ENV}={given!r}: the threshold must be >= 0 bytes (or 'off')")
    return n


class _Unset:
    pass


_UNSET: Any = _Unset()
# read from the environment at first use, not at import: a bad value raises there (like
# the other HOSTARRAY_* settings), and ``import hostarray`` never fails on it
_threshold: list[Any] = [_UNSET]


def _parsed() -> int | None:
    with _lock:
        if _threshold[0] is _UNSET:
            _threshold[0] = _from_env()
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


def _range(x: HostPtrArray) -> tuple[int, int]:
    _, lo, hi = x._bytes()
    return lo, hi


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
            if x is None or type(x) in (bool, int, float):
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
        lo, hi = _range(x)
        sides = coh.sides_current(lo, hi)
        if dev in sides:
            if HOST not in sides:
                newest = True
        elif HOST in sides:
            small_host.append(x)
        else:
            return None  # the newest bytes are on another device (or split): the host path
    if not newest:
        return None
    if largest < limit:
        if type(result_nbytes) is int or result_nbytes() < limit:  # type: ignore[operator]
            return None
    for x in small_host:
        lo, hi = _range(x)  # a strided view publishes its whole span
        if hi - lo > PUBLISH_LIMIT:
            return None
    return dev  # (a device-newest operand's buffer is off a shared link: checked above)


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


def register(names: Iterable[str], note: str = "") -> None:
    """Record that the device path computes the namespace functions ``names`` (spelt as
    the namespace spells them: ``"add"``, ``"sum"``, ``"linalg.vector_norm"``; the array's
    operators follow their function); ``note`` says briefly what of them stays on the host
    (e.g. ``"float16, complex on host"``; ``""``: nothing).

    Each module of :mod:`hostarray._compute` calls this at import for what it handles,
    so that :func:`device_functions` (and the documentation) follows the code."""
    for name in names:
        DEVICE_FUNCTIONS[name] = note


_IMPLEMENTATIONS: dict[tuple[str, str], Any] = {}


def implementation(module: str, name: str) -> Any:
    """``hostarray._compute.<module>.<name>``, imported on first use (the modules import
    pyopencl, which a host-only program never loads) and then found in one lookup: an
    ``import`` statement in a function costs a microsecond or more on every call."""
    try:
        return _IMPLEMENTATIONS[module, name]
    except KeyError:
        fn = getattr(importlib.import_module(f"{__name__}.{module}"), name)
        _IMPLEMENTATIONS[module, name] = fn
        return fn


def device_functions() -> dict[str, str]:
    """Every namespace function the device path computes, with its note (see
    :func:`register`): imports every module of :mod:`hostarray._compute` (and so
    pyopencl) first, so that each has registered its names."""
    for m in pkgutil.iter_modules(__path__):
        importlib.import_module(f"{__name__}.{m.name}")
    return dict(DEVICE_FUNCTIONS)
