"""A bounded pool of attached host storages for device results and temporaries.

Creating a ``CL_MEM_USE_HOST_PTR`` buffer pins the host pages on NVIDIA (18.6 ms
per GiB measured on the H200), so the device path takes its results from here:
page-aligned host memory with a buffer on the device already.  A result's
storage goes back to the pool when it dies, if nothing else can still reach its
memory (no numpy view of it, no buffer on another device); a storage taken
again starts with a fresh coherence state (nothing stale: the host memory is
host-valid garbage until the launch that takes it writes it).  Reuse is safe
against commands of the storage's previous life because the device queue is in
order: the launch writing the new result runs after them, and every host
access to the new result waits for that launch.

The pool keeps at most :func:`pool_limit` bytes of idle storages (least
recently returned dropped first) and empties itself and retries once when the
driver refuses a new buffer.  :func:`clear_pool` gives every idle storage back.
"""

from __future__ import annotations

import sys
import threading
from collections import OrderedDict
from typing import Any

import numpy as np

from .._array import HostPtrArray, _new
from .._devices import Device
from .._storage import PAGE_SIZE, Storage, aligned_empty
from ..errors import Refused

__all__ = ["PooledStorage", "clear_pool", "pool_bytes", "pool_limit", "result", "take"]

_lock = threading.Lock()
# (device, nbytes) -> idle (base, buffer, base's address); the dict's order is the return order
_idle: OrderedDict[tuple[Device, int], list[tuple[np.ndarray, Any, int]]] = OrderedDict()
_bytes = [0]
_limit = [1 << 31]


def pool_limit(nbytes: int | None = None) -> int:
    """The most bytes of idle storages the pool keeps (2 GiB by default); with
    ``nbytes``, set it (and trim the pool) and return the previous value."""
    old = _limit[0]
    if nbytes is not None:
        if nbytes < 0:
            raise ValueError(f"the pool limit must be >= 0 bytes, got {nbytes}")
        _limit[0] = nbytes
        with _lock:
            _trim()
    return old


def pool_bytes() -> int:
    """Bytes held by idle storages in the pool."""
    return _bytes[0]


def clear_pool() -> int:
    """Give every idle storage of the device-compute pool back (its host memory and its
    device buffer); returns the bytes freed.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.clear_pool() >= 0
    True
    """
    with _lock:
        freed = _bytes[0]
        _idle.clear()
        _bytes[0] = 0
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

    __slots__ = ("_pool_key",)
    _pool_key: tuple[Device, int]  # (device, bytes): where it goes back

    def __del__(self) -> None:
        try:
            key = self._pool_key
            buffers = self.buffers
            if len(buffers) != 1 or key[0] not in buffers:
                return  # attached elsewhere too: a command there may still use the memory
            buf = buffers[key[0]]
            base = self.base
            # a numpy view someone still holds (numpy collapses view bases onto the memory's
            # owner) would see the next result's bytes: then the memory is not reused
            if buf.host is not base or _owner_refs(base) > _FREE_REFS:
                return
            # never wait here: a finalizer may run inside take() or clear_pool() on this very
            # thread (a collection while they hold the lock); then the memory just goes
            if not _lock.acquire(blocking=False):
                return
            try:
                if key[1] > _limit[0]:
                    return
                _idle.setdefault(key, []).append((base, buf, self.address))
                _idle.move_to_end(key)
                _bytes[0] += key[1]
                _trim()
            finally:
                _lock.release()
        except Exception:  # interpreter teardown: let the memory go
            pass


def _owner_refs(base: np.ndarray) -> int:
    """References to the object owning ``base``'s memory."""
    owner = base.base if base.base is not None else base
    return sys.getrefcount(owner)


def _free_refs() -> int:
    # measured, not assumed: the references the memory's owner has in __del__ when nobody
    # else holds it (the count differs between Python versions)
    seen = []

    class _Probe:
        __slots__ = ("base", "host")
        base: np.ndarray
        host: np.ndarray

        def __del__(self) -> None:
            seen.append(_owner_refs(self.base))

    p = _Probe()
    p.base = aligned_empty(PAGE_SIZE)
    p.host = p.base
    del p
    return seen[0]


_FREE_REFS = _free_refs()


def take(dev: Device, nbytes: int) -> PooledStorage:
    """A storage of at least ``nbytes`` (whole pages) with a buffer on ``dev``, idle from
    the pool or new, for a launch on ``dev`` to write: its state says ``dev`` holds the
    newest bytes (:meth:`~hostarray._coherence.Coherence.device_result`).  Raises
    :class:`~hostarray.hostptr.Refused` if the driver refuses a buffer even after the
    pool is emptied."""
    size = max(PAGE_SIZE, -(-nbytes // PAGE_SIZE) * PAGE_SIZE)
    key = (dev, size)
    entry = None
    with _lock:
        entries = _idle.get(key)
        if entries:
            entry = entries.pop()
            _bytes[0] -= size
            if not entries:
                del _idle[key]
    if entry is None:
        base = aligned_empty(size)
        rt = dev.runtime
        try:
            buf = rt.create_buffer(base, dev)
        except Refused:
            if not clear_pool():
                raise
            buf = rt.create_buffer(base, dev)  # once more, with the idle memory given back
        address = 0
    else:
        base, buf, address = entry
    s = PooledStorage(base)
    s._pool_key = key
    s._address = address
    s.add_result_buffer(dev, buf)
    # not registered by address (hostarray._sharing): only hostarray holds this memory;
    # an export registers the storage when it hands the memory out
    return s


def result(dev: Device, shape: tuple[int, ...], dt: np.dtype) -> HostPtrArray:
    """A new array of ``shape`` and ``dt`` over a storage from :func:`take`: newest
    nowhere yet, for a launch to write."""
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
