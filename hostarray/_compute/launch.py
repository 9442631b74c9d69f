"""Build and launch hostarray's own kernels on HostPtrArray operands.

Generated kernels receive each array as its storage's whole buffer plus an
element offset and element strides (never a sub-buffer): views, broadcasts and
negative strides need no copy and no alignment, and one launch never passes a
buffer with an overlapping sub-buffer of it.  The coherence bookkeeping is the
same as for a user's kernel (:mod:`hostarray.kernels`): before the launch the
device is made current for the bytes each operand covers (only those), after
it the written bytes are device-newest and the launch is recorded.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyopencl as cl

from .._array import HostPtrArray
from .._devices import Device
from .._sharing import ensure_buffer, memory_fault
from .._stats import COUNTERS
from .._storage import locked
from ..backends.opencl import build_program
from ..errors import BadLaunch
from ..kernels import _PENDING, Launch, _Pending, _Run
from .pool import PooledStorage

__all__ = ["ArrayArg", "GROUP", "array_arg", "c_type", "compiled", "enqueue",
           "overlaps_badly", "supports", "usable"]

GROUP = 256  # work-items per group of the generated kernels

# by dtype, not dtype.name: the name is rebuilt on every access (microseconds)
_C = {np.dtype(k): v for k, v in (
    ("bool", "uchar"), ("int8", "char"), ("uint8", "uchar"), ("int16", "short"),
    ("uint16", "ushort"), ("int32", "int"), ("uint32", "uint"), ("int64", "long"),
    ("uint64", "ulong"), ("float32", "float"), ("float64", "double"))}
_F64 = np.dtype("float64")


def c_type(dt: np.dtype) -> str:
    """The OpenCL C type of a supported data type (``bool`` is ``uchar``: 0 or 1)."""
    return _C[dt]


def supports(dev: Device, dt: np.dtype) -> bool:
    """Whether generated kernels on ``dev`` handle ``dt`` (native byte order; float64
    only where the device has it; no float16 or complex)."""
    if dt not in _C or not dt.isnative:  # a non-native dtype compares equal to the native
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


class ArrayArg:
    """An array operand of a generated launch: its storage, the bytes it covers, and its
    element offset and strides in the storage's buffer."""

    __slots__ = ("x", "s", "lo", "hi", "offset", "strides", "mode")

    def __init__(self, x: HostPtrArray, offset: int, strides: tuple[int, ...], lo: int,
                 hi: int, mode: str) -> None:
        self.x, self.s, self.offset, self.strides = x, x._s, offset, strides
        self.lo, self.hi, self.mode = lo, hi, mode


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


# -- programs: built once per (source, device) ----------------------------------------------
_programs: dict[tuple[Device, str], tuple[Any, threading.Lock]] = {}
_build_lock = threading.Lock()


_BY_C = {c: dt for dt, c in _C.items() if dt.kind != "b"}
_BY_C.update({"size_t": np.dtype(np.uint64), "ptrdiff_t": np.dtype(np.int64)})


def _argument_dtypes(source: str, name: str) -> list[Any] | None:
    """Per argument of kernel ``name`` in ``source``: the numpy type of a scalar,
    ``None`` for a pointer (``__global``/``__local``); ``None`` where the signature
    is not one this reads (a macro for a type): then pyopencl converts each value."""
    m = re.search(rf"\bvoid\s+{name}\s*\(([^)]*)\)", source)
    if m is None:
        return None
    out: list[Any] = []
    for param in m.group(1).split(","):
        words = param.replace("*", " * ").split()
        if "*" in words or "__local" in words or "__global" in words:
            out.append(None)
        elif len(words) >= 2 and words[-2] in _BY_C:
            out.append(_BY_C[words[-2]])  # "const long n": the type before the name
        else:
            return None
    return out


_OPTIONS: dict[Device, list[str]] = {}


def _options(dev: Device) -> list[str]:
    """Build options of generated kernels: IEEE 754's correctly rounded float32 division
    and square root where the device offers them (OpenCL allows 2.5 and 3 ulp otherwise,
    and NVIDIA's compiler folds the double-precision workaround of
    :mod:`hostarray._compute.elementwise` back into an approximate float division)."""
    opts = _OPTIONS.get(dev)
    if opts is None:
        cfg = int(getattr(dev._cl_device, "single_fp_config", 0))
        exact = cfg & int(cl.device_fp_config.CORRECTLY_ROUNDED_DIVIDE_SQRT)
        opts = _OPTIONS[dev] = ["-cl-fp32-correctly-rounded-divide-sqrt"] if exact else []
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
            rt = dev.runtime
            t0 = time.perf_counter()
            prg = build_program(rt.context, source, _options(dev), str(dev))
            knl = getattr(prg, name)
            # scalars declared: pyopencl packs them directly instead of trying one
            # conversion after another (70 us per launch for seven arguments on PoCL)
            dtypes = _argument_dtypes(source, name)
            if dtypes is not None:
                knl.set_scalar_arg_dtypes(dtypes)
            COUNTERS.add(kernels_compiled=1, compile_seconds=time.perf_counter() - t0)
            hit = _programs[key] = (knl, threading.Lock())
    return hit


def enqueue(dev: Device, kernel: tuple[Any, threading.Lock], name: str, n: int,
            args: Sequence[Any], arrays: Sequence[ArrayArg] | None = None,
            device_op: bool = False, new: Sequence[Any] = ()) -> None:
    """Launch ``kernel`` over ``n`` work-items (rounded up to whole groups: the kernel
    returns for ids ``>= n``), with ``args``: :class:`ArrayArg` (passed as the storage's
    whole buffer) or scalars (numpy scalars of the declared types).  ``arrays``: the
    :class:`ArrayArg` of ``args`` once each, where the caller has them (an operand both
    read and written is one ``"rw"`` ArrayArg, passed twice in ``args``).  ``device_op``:
    the launch is a whole operation of the device path (counted in ``device_ops``).
    ``new``: storages the caller has just taken from the pool (results, temporaries) that
    no other thread can reach yet: their locks are not taken.

    Under the operands' storage locks: publish what the device lacks of the bytes read,
    wait for other devices' launches where bytes are written, enqueue, record."""
    rt = dev.runtime
    if rt.graveyard:
        rt.sweep()
    if arrays is None:
        arrays = [v for v in args if type(v) is ArrayArg]
    if len(arrays) == 1:
        storages = [arrays[0].s]
    elif len(arrays) == 2:
        storages = [arrays[0].s] if arrays[0].s is arrays[1].s else \
            [arrays[0].s, arrays[1].s]
    else:
        storages = list({id(v.s): v.s for v in arrays}.values())
    knl, klock = kernel
    gs = (-(-n // GROUP) * GROUP,)
    held = [s for s in storages if s not in new] if new else storages
    with held[0].lock if len(held) == 1 else locked(held):
        cl_args = []
        for v in args:
            if type(v) is ArrayArg:
                buf = v.s.buffers.get(dev)
                if buf is None:
                    buf = ensure_buffer(v.x, dev)
                cl_args.append(buf.buf)
            else:
                cl_args.append(v)
        # a write to bytes an open cl_buffer block on another device may write: refused
        # before anything moves (InUse)
        for v in arrays:
            if v.s.coh.raw_blocks:  # (the message is built only where one is open)
                v.s.refuse_in_use(dev, v.lo, v.hi, f"the device operation {name!r} on {dev}",
                                  writes=v.mode != "r")
        # reads first, with the write flag where the same operand is written (in place)
        for v in arrays:
            if v.mode != "w":
                v.s.prepare_device_read(dev, v.lo, v.hi, v.mode == "rw")
        for v in arrays:
            if v.mode == "w":
                v.s.prepare_device_write(dev, v.lo, v.hi)
        with klock:
            try:
                knl.set_args(*cl_args)
                ev = rt.last_event = cl.enqueue_nd_range_kernel(rt.queue, knl, gs, (GROUP,))
            except cl.Error as e:  # typed as a user kernel's refusal; nothing was recorded
                raise BadLaunch(name, f"the driver refused the launch: {e}") from None
            finally:
                # the kernel object must not keep these memory objects alive (see kernels.py)
                for j, v in enumerate(args):
                    if type(v) is ArrayArg:
                        knl.set_arg(j, None)
        run = _Run(ev, name, dev)
        for v in arrays:
            if v.mode == "r":
                v.s.record_launch(dev, run, v.lo, v.hi, False)
        for v in arrays:
            if v.mode != "r":
                v.s.record_launch(dev, run, v.lo, v.hi, True)
    COUNTERS.launched(device_op)
    # a launch keeps the storages it uses alive until it is known finished; pooled ones
    # need not be kept: their memory stays in the pool, and the next launch that takes it
    # runs after this one (an in-order queue)
    keep = [s for s in storages if type(s) is not PooledStorage]
    if keep:
        pending = _PENDING.get(dev)
        if pending is None:
            pending = _PENDING.setdefault(dev, _Pending())
        pending.add(Launch(run, keep))
