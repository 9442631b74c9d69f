"""May this device use this memory?  The one place that decides, and the registry of
live storages by address range.

* :func:`memory_fault` is the only decision whether a device may get a buffer over a
  range of host memory; everything else (attach, launches, ``asarray``, ``to_device``,
  ``from_dlpack``, ``hostptr.of_numpy``) asks it, and every fault has one type wherever
  it is met: memory that is not one contiguous range is :class:`NotHostBacked`; an
  address below the device's requirement is :class:`Refused` with reason
  ``"alignment"``; zero bytes or more than the device's largest allocation is
  :class:`Refused` with reason ``"size"``.
* :func:`view_offset` checks a view handed to the device inside its array's buffer
  (a kernel argument, ``hostptr.cl_buffer``): contiguous, starting on a sub-buffer origin.
* the registry maps address ranges to the live :class:`Storage` over them, so adopting
  memory that already belongs to a storage gives a view of that storage (one memory
  range, one coherence state) instead of a second, independent one.
"""

from __future__ import annotations

import bisect
import threading
import weakref
from typing import Any, Protocol

import numpy as np

from ._devices import Device
from ._storage import Storage, address_of
from .errors import HostPtrError, NotHostBacked, Refusal, Refused

__all__ = ["ArrayView", "host_requirement", "memory_fault", "copy_needed", "check_memory",
           "check_storage", "view_offset", "ensure_buffer", "register", "find", "find_range",
           "byte_extent", "extent", "view_within"]


class ArrayView(Protocol):
    """What this module reads of an array: its elements (``_a``) and their storage
    (``_s``); a :class:`~hostarray.HostPtrArray` is one (the array's module builds on this
    one, not the other way round)."""

    _a: np.ndarray
    _s: Storage


# -- the decision -------------------------------------------------------------------------------

def host_requirement(dev: Device, itemsize: int) -> int:
    """Alignment (bytes) that memory of ``itemsize``-byte elements needs to back a buffer
    on ``dev``: the device's probed host-pointer alignment
    (:attr:`~hostarray.Device.host_alignment`, 1 on the copied link), never less than
    the element size."""
    return max(dev.host_alignment, itemsize)


def memory_fault(a: np.ndarray, dev: Device, array_id: int) -> HostPtrError | None:
    """Why ``dev`` may not get a buffer over the memory of ``a`` (a whole storage's
    base, or a numpy array about to become one) — the typed error — or ``None``."""
    if dev.framework != "opencl":
        return Refused(dev, Refusal("device_type", device_type=dev.type))
    if not (a.flags.c_contiguous or a.flags.f_contiguous):
        return NotHostBacked(array_id, "its memory is not one contiguous range")
    n = a.nbytes
    if n == 0 or n > dev.max_alloc:
        return Refused(dev, Refusal("size", size=n, limit=dev.max_alloc))
    addr = address_of(a)
    item = a.dtype.itemsize
    # the requirement never exceeds max(dev.alignment, item): memory aligned to that (every
    # allocation hostarray makes) is accepted without asking the device for its probe
    if addr % max(dev.alignment, item):
        required = host_requirement(dev, item)
        if addr % required:
            return Refused(dev, Refusal("alignment", address=addr, required=required))
    return None


def copy_needed(a: np.ndarray, dev: Device) -> HostPtrError | None:
    """The fault that keeps ``dev`` from using ``a``'s memory *and that a copy into
    aligned storage would cure* (not one range, or below the alignment), or ``None``.

    Zero bytes and too many bytes are faults too, but a copy has them as well: arrays
    with those are kept as they are (a launch or an attach then refuses them)."""
    fault = memory_fault(a, dev, id(a))
    if isinstance(fault, NotHostBacked) or (
            isinstance(fault, Refused) and fault.reason.kind == "alignment"):
        return fault
    return None


def why_copy(fault: HostPtrError) -> str:
    """A few words on what a :func:`copy_needed` fault is about, for messages."""
    if isinstance(fault, Refused):
        return (f"its address {fault.reason.address:#x} is not a multiple of the "
                f"{fault.reason.required}-byte alignment {fault.device} needs for host memory")
    return "it is not one contiguous range"


def check_memory(a: np.ndarray, dev: Device, array_id: int) -> None:
    """Raise :func:`memory_fault`'s error, if any."""
    fault = memory_fault(a, dev, array_id)
    if fault is not None:
        raise fault


def check_storage(s: Storage, dev: Device, array_id: int) -> np.ndarray:
    """The storage's bytes (contiguous ``uint8``) if ``dev`` may get a buffer over them;
    raises the typed error otherwise."""
    check_memory(s.base, dev, array_id)
    raw = s.contiguous_bytes()
    assert raw is not None
    return raw


def view_offset(x: ArrayView, dev: Device, what: str = "the array") -> int:
    """Byte offset of ``x`` in its storage's buffer, checked for a device to use that part
    (``x`` one contiguous range, starting on the device's sub-buffer alignment,
    :attr:`~hostarray.Device.alignment`); raises :class:`NotHostBacked` or
    :class:`Refused` (``"alignment"``; ``"size"`` for zero bytes).  ``what`` names ``x`` in
    messages."""
    a, s = x._a, x._s
    if not a.size:  # zero bytes: no buffer range (and never the whole buffer)
        raise Refused(dev, Refusal("size", size=0, limit=dev.max_alloc))
    if not a.flags.c_contiguous:
        raise NotHostBacked(id(x), f"{what} is a non-contiguous view, not one buffer range")
    off = address_of(a) - s.address
    if off % dev.alignment:
        k = dev.alignment // a.itemsize or 1
        raise Refused(dev, Refusal(
            "alignment", address=s.address + off, required=dev.alignment,
            text=f"{what} is a view starting at byte {off} of its array; a sub-buffer must "
                 f"start on a multiple of {dev.alignment} bytes: start the view at a "
                 f"multiple of {k} elements, or pass a copy (ha.asarray(x, copy=True))"))
    return off


def ensure_buffer(x: ArrayView, dev: Device) -> Any:
    """``x``'s storage's buffer on ``dev``, created (lazy attach) if missing; raises the
    typed error if ``dev`` may not use the storage's memory (nothing changes then)."""
    s = x._s
    buf = s.buffers.get(dev)
    if buf is None:
        with s.lock:
            buf = s.buffers.get(dev)
            if buf is None:
                raw = check_storage(s, dev, id(x))
                buf = dev.runtime.create_buffer(raw, dev)
                s.add_buffer(dev, buf)
                register(s)
    return buf


# -- the registry of live storages by address range -------------------------------------------
#
# Only storages someone else may reach the memory of are registered: adopted user memory,
# exported storages (np.asarray(x), DLPack) and storages with a device buffer.  Entries are
# (start, end, weak reference) sorted by start; a dead storage's entry is skipped and dropped
# at the next registration (a weakref callback may run inside any allocation, so it only
# counts).  A storage keeps its memory alive, so a live entry's range can't be reused.

_LOCK = threading.Lock()
_STARTS: list[int] = []
_ENTRIES: list[tuple[int, int, weakref.ReferenceType[Storage]]] = []
_REGISTERED: dict[int, weakref.ReferenceType[Storage]] = {}  # id(storage) -> its entry's ref
_LONGEST = [0]  # the longest range ever registered: bounds the backward scan of find()
_DEAD = [0]


def _died(key: int, ref: weakref.ReferenceType[Storage]) -> None:
    if _REGISTERED.get(key) is ref:
        del _REGISTERED[key]
    _DEAD[0] += 1


def byte_extent(a: np.ndarray) -> tuple[int, int]:
    """``[lo, hi)``: the bytes ``a``'s elements occupy (``lo == hi`` when it has none)."""
    return extent(address_of(a), a.shape, a.strides, a.itemsize)


def extent(address: int, shape: tuple[int, ...], strides: tuple[int, ...] | None,
           itemsize: int) -> tuple[int, int]:
    """``[lo, hi)`` of elements laid out as an ``__array_interface__`` says (``strides``
    ``None``: C order)."""
    n = 1
    for d in shape:
        n *= d
    if n == 0:
        return address, address
    if strides is None:
        return address, address + n * itemsize
    lo = hi = address
    for d, st in zip(shape, strides):
        if st < 0:
            lo += (d - 1) * st
        else:
            hi += (d - 1) * st
    return lo, hi + itemsize


def register(s: Storage, lo: int | None = None, hi: int | None = None) -> None:
    """Let :func:`find` see ``s`` (a no-op if it is registered already, or if its memory
    is not one range); ``lo, hi`` are its bytes where the caller knows them."""
    key = id(s)
    if key in _REGISTERED:
        return
    b = s.base
    if not (b.flags.c_contiguous or b.flags.f_contiguous):
        return
    if lo is None or hi is None:
        lo, hi = byte_extent(b)
    if lo == hi:
        return
    with _LOCK:
        if key in _REGISTERED:
            return
        if _DEAD[0] > 16 and _DEAD[0] * 4 > len(_ENTRIES):
            live = [e for e in _ENTRIES if e[2]() is not None]
            _ENTRIES[:] = live
            _STARTS[:] = [e[0] for e in live]
            _DEAD[0] = 0
        ref = weakref.ref(s, lambda r, key=key: _died(key, r))  # type: ignore[misc]
        i = bisect.bisect_right(_STARTS, lo)
        _STARTS.insert(i, lo)
        _ENTRIES.insert(i, (lo, hi, ref))
        _REGISTERED[key] = ref
        if hi - lo > _LONGEST[0]:
            _LONGEST[0] = hi - lo


def find(a: np.ndarray) -> Storage | None:
    """The live registered storage whose memory holds every byte of ``a``, or ``None``."""
    if not _STARTS:
        return None
    return find_range(*byte_extent(a))


def find_range(lo: int, hi: int) -> Storage | None:
    """The live registered storage whose memory holds the bytes ``[lo, hi)``, or ``None``."""
    if lo == hi or not _STARTS:
        return None
    with _LOCK:
        j = bisect.bisect_right(_STARTS, lo) - 1
        floor = lo - _LONGEST[0]
        while j >= 0 and _STARTS[j] >= floor:
            _, end, ref = _ENTRIES[j]
            s = ref()
            if s is None:  # dead: dropped here (entries below j keep their index)
                del _STARTS[j]
                del _ENTRIES[j]
            elif end >= hi:
                return s
            j -= 1
    return None


class _Within:
    """Base object of a view built over a storage's memory: keeps the storage's base
    alive, and nothing the user handed in."""

    __slots__ = ("__array_interface__", "_keep")

    def __init__(self, iface: dict[str, Any], keep: np.ndarray) -> None:
        self.__array_interface__ = iface
        self._keep = keep


def view_within(s: Storage, a: np.ndarray, writeable: bool,
                address: int | None = None) -> np.ndarray:
    """``a``'s elements (same address, shape, strides, dtype), as an array whose base is
    ``s``'s own memory rather than ``a`` or whatever ``a`` refers to."""
    iface = {"shape": a.shape, "typestr": a.dtype.str, "strides": a.strides,
             "data": (address_of(a) if address is None else address, not writeable),
             "version": 3}
    return np.asarray(_Within(iface, s.base))
