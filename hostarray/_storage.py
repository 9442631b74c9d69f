"""Aligned host storage: one ``Storage`` record per allocation.

An array and all its views share one ``Storage``.  It owns (or borrows) the
numpy memory, the device buffers created over it, the lock and the
coherence state, and it performs the transfers that
:class:`~hostarray._coherence.Coherence` plans.  Device buffers are opaque
objects with ``publish()``, ``acquire()`` and ``release()`` (see
:mod:`hostarray.backends`), so this module needs numpy only.
"""

from __future__ import annotations

import mmap
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any

import numpy as np

from ._coherence import Coherence
from ._errors import LaunchFailed
from ._stats import COUNTERS

__all__ = ["PAGE_SIZE", "PAD", "Storage", "aligned_empty", "address_of"]

PAGE_SIZE = mmap.PAGESIZE
# Called with a device key after the host acquired from that device (so every launch
# issued there before has finished); hostarray.kernels lets go of finished launches.
AFTER_DEVICE_SYNC: list[Callable[[Hashable], None]] = []
PAD = 64  # allocations are padded to a multiple of a cache line


def address_of(a: np.ndarray) -> int:
    """Address of the first byte of ``a``."""
    return a.__array_interface__["data"][0]


def aligned_empty(nbytes: int) -> np.ndarray:
    """Uninitialised ``uint8`` memory starting on a page boundary.

    The returned array has exactly ``nbytes`` elements; the allocation
    behind it is padded to a multiple of :data:`PAD` bytes (at least one
    pad) so a device may round accesses up without leaving the allocation.
    """
    padded = max(PAD, -(-nbytes // PAD) * PAD)
    raw = np.empty(padded + PAGE_SIZE, dtype=np.uint8)
    start = -address_of(raw) % PAGE_SIZE
    # slice the padded range first: numpy gives an empty slice of raw the base's address
    return raw[start:start + padded][:nbytes]


_LOCK_CREATION = threading.Lock()
_NO_BUFFERS: Mapping[Hashable, Any] = MappingProxyType({})  # shared, read-only


class Storage:
    """One host allocation, its device buffers and its coherence state.

    ``base`` is the numpy array over the whole allocation: a C-contiguous
    ``uint8`` array for storage hostarray allocated, or the numpy array a
    user handed in (then possibly non-contiguous: such storage can't get a
    device buffer).
    """

    __slots__ = ("base", "_lock", "coh", "buffers", "host_stale", "host_exclusive",
                 "__weakref__")

    def __init__(self, base: np.ndarray) -> None:
        # Every array operation makes a Storage for its result: the lock and the
        # buffer dict are created only when a device or a thread needs them.
        self.base = base
        self._lock: threading.RLock | None = None
        self.coh: Coherence | None = None  # created on the first device buffer
        self.buffers: Mapping[Hashable, Any] = _NO_BUFFERS
        # Mirrors of the coherence flags, read without the lock on every access.
        self.host_stale = False
        self.host_exclusive = True

    @property
    def lock(self) -> threading.RLock:
        """The storage's lock (re-entrant), created on first use."""
        lock = self._lock
        if lock is None:
            with _LOCK_CREATION:
                if self._lock is None:
                    self._lock = threading.RLock()
                lock = self._lock
        return lock

    # -- the memory -------------------------------------------------------------
    @property
    def nbytes(self) -> int:
        return self.base.nbytes

    @property
    def address(self) -> int:
        return address_of(self.base)

    def contiguous_bytes(self) -> np.ndarray | None:
        """The allocation as one ``uint8`` array, or ``None`` if it is not one range."""
        b = self.base
        if not (b.flags.c_contiguous or b.flags.f_contiguous):
            return None
        if b.dtype == np.uint8 and b.ndim == 1:
            return b
        return b.reshape(-1, order="A").view(np.uint8)

    # -- device buffers ------------------------------------------------------------
    def _mirror(self) -> None:
        c = self.coh
        self.host_stale = c.host_stale
        self.host_exclusive = c.host_exclusive

    def add_buffer(self, key: Hashable, buffer: Any) -> None:
        """Record ``buffer`` as this storage's copy on device ``key``."""
        with self.lock:
            if self.coh is None:
                self.coh = Coherence()
            if self.buffers is _NO_BUFFERS:
                self.buffers = {}
            self.buffers[key] = buffer
            self.coh.add_device(key)
            self._mirror()

    def free_buffer(self, key: Hashable) -> bool:
        """Drop ``key``'s buffer, acquiring first if it holds the newest data."""
        with self.lock:
            buf = self.buffers.get(key)
            if buf is None:
                return False
            coh = self.coh
            if coh.must_acquire_before_forget(key):
                self._acquire_from(key)
            else:
                self._wait_for([t for t, k, _ in coh.inflight if k == key])
            del self.buffers[key]
            coh.forget_device(key)
            self._mirror()
        buf.release()
        return True

    # -- transfers -------------------------------------------------------------------
    def _acquire_from(self, key: Hashable) -> None:
        launches = [t for t, k, _ in self.coh.inflight if k == key]
        moved = self.buffers[key].acquire()
        self.coh.acquired(key)
        COUNTERS.add(acquires=1, bytes_acquired=moved)
        for hook in AFTER_DEVICE_SYNC:
            hook(key)
        self._raise_if_failed(launches, key)

    def _publish_to(self, key: Hashable) -> None:
        token, moved = self.buffers[key].publish()
        self.coh.published(key, token)
        COUNTERS.add(publishes=1, bytes_published=moved)

    def _wait_for(self, tokens: list[Any]) -> None:
        if tokens:
            for t in tokens:
                try:
                    t.wait()
                except Exception:  # a failed launch: its status is checked below
                    pass
            COUNTERS.add(waits=1)
            self._raise_if_failed(tokens, None)

    def _raise_if_failed(self, tokens: list[Any], key: Hashable | None) -> None:
        """Report launches the device marked failed (a negative status), once."""
        failed = [t for t in tokens if getattr(t, "command_execution_status", 0) < 0]
        if not failed:
            return
        coh = self.coh
        if key is None:
            key = next((k for t, k, _ in coh.inflight if t is failed[0]), "the device")
        coh.drop_launches(failed)
        self._mirror()
        raise LaunchFailed(key, int(failed[0].command_execution_status))

    # -- the hooks every host access goes through ---------------------------------------
    def sync_for_host_read(self) -> None:
        """Make the host current (acquire from a current device if needed)."""
        with self.lock:
            if self.coh is not None:
                key = self.coh.source_for_host()
                if key is not None:
                    self._acquire_from(key)
                    self._mirror()

    def sync_for_host_write(self, whole: bool = False) -> None:
        """Prepare a host write: wait for launches using the data, acquire unless
        ``whole`` (the write overwrites every byte), then make the host the
        only current side."""
        with self.lock:
            coh = self.coh
            if coh is None:
                return
            self._wait_for(coh.hazards_for_host_write())
            if not whole:
                key = coh.source_for_host()
                if key is not None:
                    self._acquire_from(key)
            coh.host_written()
            self._mirror()

    def begin_escape(self) -> None:
        """A raw view that may be written behind our back is handed out."""
        with self.lock:
            coh = self.coh
            if coh is None:
                self.coh = coh = Coherence()
            self._wait_for(coh.hazards_for_host_write())
            key = coh.source_for_host()
            if key is not None:
                self._acquire_from(key)
            coh.escape_begins()
            self._mirror()

    def end_escape(self) -> None:
        # Runs from a finalizer, possibly inside the garbage collector while this thread
        # holds another storage's lock: never wait for this lock (a lock-order deadlock
        # with a launch locking both); if it is busy, the next launch applies the end.
        lock = self.lock
        if not lock.acquire(blocking=False):
            with _LOCK_CREATION:
                self.coh.deferred_ends += 1
            return
        try:
            self.coh.escape_ends()
            self._apply_deferred_ends()
            self._mirror()
        finally:
            lock.release()

    def _apply_deferred_ends(self) -> None:
        coh = self.coh
        if coh.deferred_ends:
            with _LOCK_CREATION:
                n, coh.deferred_ends = coh.deferred_ends, 0
            for _ in range(n):
                coh.escape_ends()

    @property
    def escaped(self) -> bool:
        return self.coh is not None and self.coh.escaped

    # -- used by launches (hostarray.kernels), under self.lock --------------------------
    def prepare_device_read(self, key: Hashable) -> None:
        """Publish to ``key`` if it is not current (acquiring elsewhere first)."""
        coh = self.coh
        self._apply_deferred_ends()
        if coh.escaped:
            coh.host_may_have_written()  # a raw view may have written since the last launch
        source, publish = coh.plan_device_read(key)
        if source is not None:
            self._acquire_from(source)
        if publish:
            self._publish_to(key)
        self._mirror()

    def prepare_device_write(self, key: Hashable) -> None:
        """Before a write-only launch on ``key``: wait for nothing, publish nothing.

        Launches on another device that still use the data are waited for,
        since this device's queue does not order against theirs."""
        coh = self.coh
        self._wait_for([t for t, k, _ in coh.inflight if k != key])

    def record_launch(self, key: Hashable, token: Any, writes: bool) -> None:
        coh = self.coh
        if writes:
            coh.device_written(key, token)
        else:
            coh.device_read_launched(key, token)
        if len(coh.inflight) > 8:
            # A device's queue is in order: its newest token covers the older ones.
            # Without this, an array only ever read by kernels (never waited for)
            # collects one token per launch and every launch scans them all.
            newest = {k: (t, k, w) for t, k, w in coh.inflight}
            coh.inflight = list(newest.values())
        if coh.escaped:
            if writes:
                self._acquire_from(key)  # raw views must see the result
            else:
                # a raw view may be written right after this call: the launch (and
                # its publish, a copy still reading host memory) must be done first
                self._wait_for([token])
        self._mirror()

    # -- explicit hostptr operations ---------------------------------------------------
    def publish_explicit(self, key: Hashable) -> None:
        with self.lock:
            if key not in self.buffers:
                return
            coh = self.coh
            self._wait_for(coh.hazards_for_host_write())
            coh.discard_device_writes()
            self._publish_to(key)
            self._mirror()

    def acquire_explicit(self, key: Hashable) -> None:
        with self.lock:
            if key not in self.buffers:
                return
            coh = self.coh
            if coh.devices[key] == coh.latest and coh.host_stale:
                self._acquire_from(key)
                self._mirror()


@contextmanager
def locked(storages: Iterable[Storage]) -> Iterator[None]:
    """Hold the locks of ``storages`` (in one global order: no lock-order deadlock).

    A host write holds its storage's lock from the coherence check to the last
    byte written, so another thread's whole-storage publish or acquire can't
    interleave with it (the write would be lost on a copied or mapped link)."""
    ordered = sorted({id(s): s for s in storages}.values(), key=id)
    for s in ordered:
        s.lock.acquire()
    try:
        yield
    finally:
        for s in reversed(ordered):
            s.lock.release()
