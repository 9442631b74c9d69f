"""Build and launch hostarray's own kernels on HostPtrArray operands.

Generated kernels receive each array as its storage's whole buffer plus an
element offset and element strides (never a sub-buffer): views, broadcasts and
negative strides need no copy and no alignment, and one launch never passes a
buffer with an overlapping sub-buffer of it.  The launch is the one protocol of
:mod:`hostarray._launch`, as for a user's kernel: before the launch the device is
made current for the bytes each operand covers (only those), after it the written
bytes are device-newest and the launch is recorded.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyopencl as cl

from .. import _launch
from .._array import HostPtrArray
from .._devices import Device
from .._launch import _LIMITS, ArrayArg
from .._sharing import memory_fault
from ..backends.opencl import C_TYPES, typed_kernel
from .pool import PooledStorage

__all__ = ["ArrayArg", "GROUP", "array_arg", "c_type", "compiled", "enqueue",
           "overlaps_badly", "supports", "usable"]

GROUP = 256  # work-items per group of the generated kernels

# the data types generated kernels handle (no float16, no complex)
_TYPES = frozenset(dt for dt in C_TYPES if dt.kind in "biu" or dt.name in ("float32",
                                                                            "float64"))
_F64 = np.dtype("float64")


def c_type(dt: np.dtype) -> str:
    """The OpenCL C type of a supported data type (``bool`` is ``uchar``: 0 or 1)."""
    return C_TYPES[dt]


def supports(dev: Device, dt: np.dtype) -> bool:
    """Whether generated kernels on ``dev`` handle ``dt`` (native byte order; float64
    only where the device has it; no float16 or complex)."""
    if dt not in _TYPES or not dt.isnative:
        return False
    if dt == _F64:
        return _has_fp64(dev)
    return True


_FP64: dict[Device, bool] = {}


def _has_fp64(dev: Device) -> bool:
    v = _FP64.get(dev)
    if v is None:
        d = dev._cl_device
        v = _FP64[dev] = bool(getattr(d, "double_fp_config", 0)) or \
            "cl_khr_fp64" in d.extensions
    return v


def usable(s: Any, dev: Device) -> bool:
    """Whether storage ``s`` has, or may get, a buffer on ``dev`` (one range of memory the
    device may use): checked before anything is created or moved."""
    return dev in s.buffers or (s.contiguous_bytes() is not None
                                and memory_fault(s.base, dev, 0) is None)


def array_arg(x: HostPtrArray, dev: Device, mode: str = "r") -> ArrayArg | None:
    """``x`` as a generated kernel's operand on ``dev`` (``mode`` ``"r"``, ``"w"`` or
    ``"rw"``), or ``None`` where it can't be one: its offset or strides are not whole
    elements, or ``dev`` can't use its memory."""
    a, s = x._a, x._s
    item = a.itemsize
    off, lo, hi = x._bytes()
    if off % item or any(st % item for st in a.strides) or not usable(s, dev):
        return None
    return ArrayArg(x, off // item, tuple(st // item for st in a.strides), lo, hi, mode)


def overlaps_badly(out: HostPtrArray, x: HostPtrArray) -> bool:
    """Whether ``x`` shares bytes with ``out`` without being its very elements: a
    work-item could read an element another one wrote already (numpy copies such a
    source first)."""
    if x._s is not out._s:
        return False
    first1, lo1, hi1 = x._bytes()
    first2, lo2, hi2 = out._bytes()
    a, b = x._a, out._a
    if first1 == first2 and a.shape == b.shape and a.strides == b.strides:
        return False
    return lo1 < hi2 and lo2 < hi1


# -- kernels: built once per (source, device) ---------------------------------------------
# The typed kernel of each generated source per device, with the lock its argument setting
# and enqueue take together; its program is in the one program cache (the device runtime's).
_programs: dict[tuple[Device, str], tuple[Any, threading.Lock]] = {}
# the positions of each such kernel's buffer arguments (by id of its _programs entry), from
# the argument info: unset after each enqueue
_BUFFERS: dict[int, tuple[int, ...]] = {}
_build_lock = threading.Lock()
_OPTIONS: dict[Device, tuple[str, ...]] = {}


def _options(dev: Device) -> tuple[str, ...]:
    """Build options of generated kernels: argument info (their scalar arguments' types come
    from it) and IEEE 754's correctly rounded float32 division and square root where the
    device offers them (OpenCL allows 2.5 and 3 ulp otherwise, and NVIDIA's compiler folds
    the double-precision workaround of :mod:`hostarray._compute.elementwise` back into an
    approximate float division)."""
    opts = _OPTIONS.get(dev)
    if opts is None:
        cfg = int(getattr(dev._cl_device, "single_fp_config", 0))
        exact = cfg & int(cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT)
        opts = _OPTIONS[dev] = ("-cl-kernel-arg-info",
                                *(["-cl-fp32-correctly-rounded-divide-sqrt"] if exact else []))
    return opts


def compiled(dev: Device, source: str, name: str) -> tuple[Any, threading.Lock]:
    """The kernel ``name`` of ``source`` built for ``dev`` (cached) and the lock its
    argument setting and enqueue take together.  A build counts in ``ha.stats()``:
    ``kernels_compiled`` and ``compile_seconds``."""
    key = (dev, source)
    hit = _programs.get(key)
    if hit is not None:
        return hit
    with _build_lock:
        hit = _programs.get(key)
        if hit is None:
            prg = dev.runtime.program(source, _options(dev), counted=True)[0]
            # scalars declared from the argument info (backends.opencl.typed_kernel)
            knl, info = typed_kernel(prg, name, int(dev._cl_device.address_bits))
            hit = (knl, threading.Lock())
            if info is not None:
                _BUFFERS[id(hit)] = tuple(i for i, a in enumerate(info) if a[1] == "buffer")
            _programs[key] = hit
    return hit


def enqueue(dev: Device, kernel: tuple[Any, threading.Lock], name: str, n: int,
            args: Sequence[Any], arrays: Sequence[ArrayArg] | None = None,
            device_op: bool = False, new: Sequence[Any] = (), group: int = GROUP) -> None:
    """Launch ``kernel`` over ``n`` work-items (rounded up to whole groups of ``group``
    work-items: the kernel returns for ids ``>= n``), with ``args``: :class:`ArrayArg`
    (passed as the storage's whole buffer) or scalars (numpy scalars of the declared
    types).  ``arrays``: the :class:`ArrayArg` of ``args`` once each, where the caller has
    them (an operand both read and written is one ``"rw"`` ArrayArg, passed twice in
    ``args``).  ``device_op``: the launch is a whole operation of the device path (counted
    in ``device_ops``).
    ``new``: storages the caller has just taken from the pool (results, temporaries) that
    no other thread can reach yet: their locks are not taken.

    Under the operands' storage locks: publish what the device lacks of the bytes read,
    wait for other devices' launches where bytes are written, enqueue, record
    (:func:`hostarray._launch.launch`)."""
    rt = dev._runtime or dev.runtime  # (made: the kernel was built there)
    if rt.graveyard:
        rt.sweep()
    if arrays is None:
        arrays = [v for v in args if type(v) is ArrayArg]
    if len(arrays) == 1:
        storages = [arrays[0].s]
        uses = [arrays[0].use]
    elif len(arrays) == 2:
        a, b = arrays
        storages = [a.s] if a.s is b.s else [a.s, b.s]
        uses = [a.use, b.use]
    else:
        storages = list({id(v.s): v.s for v in arrays}.values())
        uses = [v.use for v in arrays]
    # the locks taken: not those of the storages just taken from the pool; a launch keeps
    # the storages it uses alive until it is known finished: not pooled ones, whose memory
    # stays in the pool, and the next launch that takes it runs after this one (in order)
    held = keep = storages
    for s in storages:  # (one loop: two comprehensions cost more, on every operation)
        if type(s) is PooledStorage:
            keep = [s for s in storages if type(s) is not PooledStorage]
            if new:
                held = [s for s in storages if s not in new]
            break
    # the global size's limits, as for a user's kernel (kernels.Kernel._sizes): refused
    # before anything moves, never handed to a driver that would kill the process (PoCL
    # counts work-groups in 32 bits).  Arrays as large as that don't fit a device today.
    lim = _LIMITS.get(dev) or _launch.launch_limits(dev)
    gs = -(-n // group) * group
    if gs > lim.max_size or gs // group > lim.max_groups:
        lim.check_groups(name, dev, n, group)  # (raises)
    # (positional: a call with keywords costs more, on every operation)
    _launch.launch(dev, rt, kernel, name, (gs,), (group,), args, uses, storages, held,
                   keep or None, _BUFFERS.get(id(kernel)), "the device operation", None,
                   device_op)
