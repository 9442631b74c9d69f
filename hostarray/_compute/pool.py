"""The device-compute pool: buffers for device results and temporaries, reused by size.

Every result and temporary of the device path comes from :func:`result` (the one entry
point the device path allocates through; its signature stays).  What a result is made
of depends on the device's link:

* **mapped and copied links** (a discrete GPU; ``HOSTARRAY_LINK=copied``): a buffer of
  the device's own memory, and host memory that is address space only
  (:func:`~hostarray._storage.lazy_empty`): the OS commits its pages as the host first
  touches them, so a result the host never looks at costs no host RAM, and one it reads
  part of costs the pages it reads (the acquire copies into them; ``ha.stats()``'s
  ``host_bytes_committed`` counts them).  A ``USE_HOST_PTR`` buffer would pin, and so
  commit, every page at its creation (18.6 ms per GiB on the H200), and keep them;
* **shared links** (CPU devices, integrated GPUs: host memory *is* device memory):
  page-aligned host memory with a ``USE_HOST_PTR`` buffer over it, zero-copy as
  everywhere else on such a link.

A result's storage goes back to the pool when it dies, if nothing else can still reach
its memory (no numpy view of it, no buffer on another device); the host pages it
committed are given back to the OS then (``MADV_DONTNEED``), so idle buffers hold device
memory only.  A storage taken again starts with a fresh coherence state (nothing stale:
the host memory is garbage, committed nowhere, until the launch that takes it writes the
device's copy).  Reuse is safe against commands of the storage's previous life because
the device queue is in order: the launch writing the new result runs after them, and
every host access to the new result waits for that launch.

Idle buffers are kept per device, size class (whole pages) and kind, as CuPy's memory
pool keeps them: at most :func:`pool_limit` bytes (least recently returned dropped
first).  When the driver or the OS has no memory for a new buffer, the pool gives every
idle buffer back, lets go of the dead buffers a busy queue still kept, and tries once
more; then it raises :class:`~hostarray.errors.DeviceOutOfMemory`.
:func:`clear_pool` gives every idle buffer back.
"""

from __future__ import annotations

import gc
import sys
import threading
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import numpy as np

from .._array import HostPtrArray, _new
from .._devices import Device
from .._storage import PAGE_SIZE, Storage, aligned_empty, give_back_pages, lazy_empty
from ..errors import DeviceOutOfMemory, Refused

__all__ = ["PooledStorage", "clear_pool", "pool_bytes", "pool_info", "pool_limit", "result",
           "take", "size_class"]

# (device, class bytes, device-only): the kind matters, a link may be forced for a while
_Key = tuple[Device, int, bool]
# an idle entry: (base, buffer, base's address, commit grain: 0 for committed host memory)
_Entry = tuple[np.ndarray, Any, int, int]

_lock = threading.Lock()
_idle: OrderedDict[_Key, list[_Entry]] = OrderedDict()  # the dict's order: the return order
_bytes = [0]
_limit = [1 << 31]
# takes served from idle buffers, takes that made a new one, buffers taken back
_counts = {"hits": 0, "misses": 0, "returned": 0}
# False: off a shared link too, results get committed host memory with a USE_HOST_PTR
# buffer (the pool before issue 23): only benchmarks/bench_device_born.py sets it, to
# measure both kinds in one run
_DEVICE_ONLY = [True]


def size_class(nbytes: int) -> int:
    """The bytes of the buffer a result of ``nbytes`` gets: whole pages (at least one).

    Examples
    --------
    >>> from hostarray._compute.pool import size_class
    >>> from hostarray._storage import PAGE_SIZE
    >>> size_class(1) == size_class(PAGE_SIZE) == PAGE_SIZE
    True
    """
    return max(PAGE_SIZE, -(-nbytes // PAGE_SIZE) * PAGE_SIZE)


def pool_limit(nbytes: int | None = None) -> int:
    """The most bytes of idle buffers the pool keeps (2 GiB by default); with ``nbytes``,
    set it (and trim the pool) and return the previous value.

    Examples
    --------
    >>> from hostarray._compute.pool import pool_limit
    >>> old = pool_limit(1 << 30)
    >>> pool_limit(old) == 1 << 30
    True
    """
    old = _limit[0]
    if nbytes is not None:
        if nbytes < 0:
            raise ValueError(f"the pool limit must be >= 0 bytes, got {nbytes}")
        _limit[0] = nbytes
        with _lock:
            _trim()
    return old


def pool_bytes() -> int:
    """Bytes held by idle buffers in the pool (device memory; their host memory is given
    back to the OS on a mapped or copied link)."""
    return _bytes[0]


def pool_info() -> dict[str, int]:
    """The pool's state: ``idle_bytes``, ``idle_buffers``, ``limit`` and, since the
    process started, ``hits`` (takes served by an idle buffer), ``misses`` (takes that
    made a new one) and ``returned`` (dead results whose buffer came back).

    Examples
    --------
    >>> from hostarray._compute.pool import pool_info
    >>> sorted(pool_info())
    ['hits', 'idle_buffers', 'idle_bytes', 'limit', 'misses', 'returned']
    """
    with _lock:
        return {"idle_bytes": _bytes[0], "idle_buffers": sum(map(len, _idle.values())),
                "limit": _limit[0], **_counts}


def clear_pool() -> int:
    """Give every idle buffer of the device-compute pool back (its device memory and its
    host memory); returns the bytes freed.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.clear_pool() >= 0
    True
    """
    with _lock:
        freed = _bytes[0]
        dropped = list(_idle.values())
        _idle.clear()
        _bytes[0] = 0
    del dropped  # (the buffers go outside the lock: their finalizers may take others)
    return freed


def _trim() -> None:
    while _bytes[0] > _limit[0] and _idle:
        key, entries = next(iter(_idle.items()))
        entries.pop(0)
        _bytes[0] -= key[1]
        if not entries:
            del _idle[key]


class PooledStorage(Storage):
    """A storage taken from the pool: it goes back when it dies (see the module)."""

    __slots__ = ("_pool_key", "_grain", "_pool_buffer")
    _pool_key: _Key  # where it goes back
    _grain: int  # its host memory's commit grain (0: committed host memory)
    _pool_buffer: Any  # the buffer it was taken with: only that one goes back

    def __del__(self) -> None:
        try:
            coh = self.coh
            if coh is not None and coh.deferred:
                # a pending expression writing this memory (issue 23) never runs now; one
                # being enqueued by another thread is waited for (then it comes first)
                for t in tuple(coh.deferred):
                    if t.out() is self:
                        t.cancel()
            key = self._pool_key
            buffers = self.buffers
            if len(buffers) != 1 or key[0] not in buffers:
                return  # attached elsewhere too: a command there may still use the memory
            buf = buffers[key[0]]
            if buf is not self._pool_buffer:
                # its buffer was freed and another made (hostptr.free_buffer, then a launch):
                # maybe one over the host memory itself (a mapped link's, whose pages the
                # driver pinned: giving them back would cut the buffer off them)
                return
            base = self.base
            grain = self._grain
            # a numpy view someone still holds (numpy collapses view bases onto the memory's
            # owner) would see the next result's bytes: then the memory is not reused
            if buf.host is not base or _owner_refs(base) > _FREE_REFS[grain > 0]:
                return
            if key[1] > _limit[0]:
                return
            if grain:
                coh = self.coh
                committed = coh.committed_ranges() if coh is not None else [(0, key[1])]
                if committed:
                    # nobody reaches this memory any more: the pages the host touched go
                    # back to the OS, and the idle buffer holds device memory only
                    give_back_pages(base, committed)
            # never wait here: a finalizer may run inside take() or clear_pool() on this very
            # thread (a collection while they hold the lock); then the memory just goes
            if not _lock.acquire(blocking=False):
                return
            try:
                _idle.setdefault(key, []).append((base, buf, self.address, grain))
                _idle.move_to_end(key)
                _bytes[0] += key[1]
                _counts["returned"] += 1
                _trim()
            finally:
                _lock.release()
        except Exception:  # interpreter teardown: let the memory go
            pass


def _owner_refs(base: np.ndarray) -> int:
    """References to the object owning ``base``'s memory."""
    owner = base.base if base.base is not None else base
    return sys.getrefcount(owner)


def _free_refs(make: Callable[[], np.ndarray]) -> int:
    # measured, not assumed: the references the memory's owner has in __del__ when nobody
    # else holds it (the count differs between Python versions), for memory from ``make``
    seen = []

    class _Probe:
        __slots__ = ("base", "host")
        base: np.ndarray
        host: np.ndarray

        def __del__(self) -> None:
            seen.append(_owner_refs(self.base))

    p = _Probe()
    p.base = make()
    p.host = p.base
    del p
    return seen[0]


# by the memory's kind: committed host memory (aligned_empty), lazily committed (lazy_empty)
_FREE_REFS = {False: _free_refs(lambda: aligned_empty(PAGE_SIZE)),
              True: _free_refs(lambda: lazy_empty(PAGE_SIZE)[0])}


def _out_of_memory(e: BaseException) -> bool:
    """Whether ``e`` says there was no memory for a buffer (the device's or the host's)."""
    if isinstance(e, Refused):
        # (imported here: this module is imported with hostarray, pyopencl is not)
        from ..backends.opencl import OUT_OF_MEMORY_CODES

        return e.reason.kind == "backend" and e.reason.code in OUT_OF_MEMORY_CODES
    return isinstance(e, MemoryError)


def _make(dev: Device, size: int, device_only: bool) -> tuple[np.ndarray, Any, int]:
    """A new ``(base, buffer, commit grain)`` of ``size`` bytes for ``dev``."""
    if device_only:
        base, grain = lazy_empty(size)
    else:
        base, grain = aligned_empty(size), 0
    return base, dev.runtime.create_buffer(base, dev, device_only=device_only), grain


def _make_or_free(dev: Device, size: int, device_only: bool) -> tuple[np.ndarray, Any, int]:
    """:func:`_make`; where memory runs out, give the idle buffers back (and the dead ones
    a busy queue keeps), collect, and try once more; then :class:`DeviceOutOfMemory`."""
    try:
        return _make(dev, size, device_only)
    except (Refused, MemoryError) as e:
        if not _out_of_memory(e):
            raise
        first = e
    freed = clear_pool()
    gc.collect()  # dead results in reference cycles hold device memory too
    rt = dev.runtime
    rt.queue.finish()  # the buffers a busy queue kept (DeviceRuntime.bury) can go now
    rt.sweep()
    try:
        return _make(dev, size, device_only)
    except (Refused, MemoryError) as e:
        if not _out_of_memory(e):
            raise
        cause = e.reason.text if isinstance(e, Refused) else str(e)
        raise DeviceOutOfMemory(dev, size, freed, (cause or str(first)).strip()[:200]) \
            from None


def take(dev: Device, nbytes: int) -> PooledStorage:
    """A storage of at least ``nbytes`` (:func:`size_class`) with a buffer on ``dev``,
    idle from the pool or new, for a launch on ``dev`` to write: its state says ``dev``
    holds the newest bytes (:meth:`~hostarray._coherence.Coherence.device_result`) and,
    off a shared link, that none of its host memory is committed.  Raises
    :class:`~hostarray.errors.DeviceOutOfMemory` where no memory is left even after the
    pool is emptied, :class:`~hostarray.errors.Refused` where the driver refuses the
    buffer for another reason."""
    size = size_class(nbytes)
    rt = dev._runtime or dev.runtime
    device_only = rt.link != "shared" and _DEVICE_ONLY[0]
    key = (dev, size, device_only)
    entry = None
    with _lock:
        entries = _idle.get(key)
        if entries:
            entry = entries.pop()
            _bytes[0] -= size
            if not entries:
                del _idle[key]
            _counts["hits"] += 1
        else:
            _counts["misses"] += 1
    if entry is None:
        base, buf, grain = _make_or_free(dev, size, device_only)
        address = 0
    else:
        base, buf, address, grain = entry
    s = PooledStorage(base)
    s._pool_key = key
    s._grain = grain
    s._pool_buffer = buf
    s._address = address
    s.add_result_buffer(dev, buf, grain)
    # not registered by address (hostarray._sharing): only hostarray holds this memory;
    # an export registers the storage when it hands the memory out
    return s


def result(dev: Device, shape: tuple[int, ...], dt: np.dtype) -> HostPtrArray:
    """A new array of ``shape`` and ``dt`` over a storage from :func:`take`: newest
    nowhere yet, for a launch to write.  The device path's one allocation entry point."""
    nbytes = dt.itemsize
    for k in shape:
        nbytes *= k
    s = take(dev, nbytes)
    a = s.base[:nbytes].view(dt)
    if len(shape) != 1:
        a = a.reshape(shape)
    x = _new(a, s, dev)
    x._span = (0, 0, nbytes)  # (HostPtrArray._bytes: the first bytes of the storage)
    return x
