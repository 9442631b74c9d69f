"""Aligned host storage: one ``Storage`` record per allocation.

An array and all its views share one ``Storage``.  It owns (or borrows) the
numpy memory, the device buffers created over it, the lock and the
coherence state, and it performs the transfers that
:class:`~hostarray._coherence.Coherence` plans.  Device buffers are opaque
objects with ``publish()``, ``acquire()`` and ``release()`` (see
:mod:`hostarray.backends`), so this module needs numpy only.
"""

from __future__ import annotations

import array
import ctypes
import mmap
import sys
import threading
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any

import numpy as np

from ._coherence import Coherence
from ._stats import COUNTERS
from .errors import LaunchFailed

__all__ = ["PAGE_SIZE", "PAD", "Storage", "HostWrite", "UserMemory", "aligned_empty",
           "address_of", "host_writes"]

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


def _status(token: Any) -> int:
    """A launch token's OpenCL status (0 complete, > 0 pending, < 0 failed); after a device
    fault, the driver's error when asked (NVIDIA answers -9999 for an event once a kernel
    made an illegal access)."""
    try:
        return int(getattr(token, "command_execution_status", 0))
    except Exception as e:
        code = getattr(e, "code", None)
        return code if isinstance(code, int) and code < 0 else -1


class UserMemory:
    """The base object of a storage over memory the user already had (adopted, not copied).

    The user may still hold the adopted array, or a view of it, and write it
    behind hostarray's back: such a storage counts as escaped while
    :meth:`alive` (see the coherence model).  hostarray's own views of the
    storage refer to this object, not to the user's array, so the reference
    counts of the user's objects say whether anybody else still holds them.
    """

    __slots__ = ("__array_interface__", "array", "__weakref__")

    def __init__(self, a: np.ndarray) -> None:
        self.__array_interface__ = a.__array_interface__
        self.array = a

    def alive(self) -> bool:
        """Whether anything but hostarray may still reach the adopted memory (CPython
        reference counts; ``True`` whenever that can't be told)."""
        if not _REFCOUNTS_WORK:
            return True
        obj: Any = self.array
        while True:
            # self.array or the child's .base / .obj, the local name, getrefcount's argument
            if sys.getrefcount(obj) > 3:
                return True
            if isinstance(obj, np.ndarray):
                if obj.base is None:
                    return False  # numpy's own memory, held by nobody else
                obj = obj.base
            elif isinstance(obj, memoryview):
                obj = obj.obj
            else:
                # the owner of the memory, held by nobody else if it is a plain buffer type;
                # any other owner (a DLPack capsule's manager...) may be reachable from the
                # user's side in ways reference counts don't show: assume it is
                return not isinstance(obj, _PLAIN_OWNERS)


_PLAIN_OWNERS = (bytes, bytearray, mmap.mmap, array.array, ctypes.Array)


def _check_refcounts() -> bool:
    """Whether :meth:`UserMemory.alive` reads this interpreter's reference counts right."""
    try:
        root = np.zeros(4)
        held = root[1:]
        m = UserMemory(held)
        if not m.alive():
            return False
        del root
        if not m.alive():  # held's base is still reachable through `held` only... and held
            return False
        del held
        return not m.alive()
    except Exception:
        return False


_REFCOUNTS_WORK = True
_REFCOUNTS_WORK = _check_refcounts()


_LOCK_CREATION = threading.Lock()
# shared and read-only; typed as the dict that replaces it before any buffer is added
_NO_BUFFERS: dict[Hashable, Any] = MappingProxyType({})  # type: ignore[assignment]


class Storage:
    """One host allocation, its device buffers and its coherence state.

    ``base`` is the numpy array over the whole allocation: a C-contiguous
    ``uint8`` array for storage hostarray allocated, or the numpy array a
    user handed in (then possibly non-contiguous: such storage can't get a
    device buffer).
    """

    __slots__ = ("base", "_lock", "coh", "buffers", "host_stale", "host_exclusive",
                 "user", "unreported", "__weakref__")

    def __init__(self, base: np.ndarray, user: UserMemory | None = None) -> None:
        # Every array operation makes a Storage for its result: the lock and the
        # buffer dict are created only when a device or a thread needs them.
        self.base = base
        self._lock: threading.RLock | None = None
        # created on the first device buffer (or escape); typed without ``None``: every
        # method using it is reached only once a buffer exists or tests for ``None`` first
        self.coh: Coherence = None  # type: ignore[assignment]
        self.buffers: dict[Hashable, Any] = _NO_BUFFERS
        # Mirrors of the coherence flags, read without the lock on every access.
        self.host_stale = False
        self.host_exclusive = True
        # memory the user handed in and may still write (an escape while they hold it)
        self.user = user
        # failed launches met with another failure: raised at the next host accesses
        self.unreported: list[Any] = []

    @classmethod
    def over_user_memory(cls, a: np.ndarray) -> Storage:
        """A storage over the user's array ``a`` itself (no copy)."""
        user = UserMemory(a)
        return cls(np.asarray(user), user)

    def _new_coherence(self) -> Coherence:
        coh = self.coh = Coherence()
        if self.user is not None:
            coh.escape_begins()  # the user's own array may be written at any time
        return coh

    def _check_foreign(self) -> None:
        """End the user-memory escape once nobody but hostarray holds that memory."""
        user = self.user
        if user is not None and self.coh is not None and not user.alive():
            self.user = None
            self.coh.escape_ends()

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
        # failures still to report send every host access down the slow path
        self.host_stale = c.host_stale or bool(self.unreported)
        self.host_exclusive = c.host_exclusive and not self.unreported

    def _report_pending(self) -> None:
        """Raise the next failed launch not reported yet (one per host access)."""
        tokens, self.unreported = self.unreported, []
        self._mirror()
        self._raise_if_failed(tokens, None)

    def add_buffer(self, key: Hashable, buffer: Any) -> None:
        """Record ``buffer`` as this storage's copy on device ``key``."""
        with self.lock:
            if self.coh is None:
                self._new_coherence()
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
        launches = self.coh.launches_on(key)
        if any(_status(t) > 0 for t in launches):
            COUNTERS.add(waits=1)  # the acquire blocks until these launches finish
        try:
            moved = self.buffers[key].acquire()
        except Exception:
            # a launch that failed explains a failed transfer (NVIDIA refuses every
            # command on a queue after a kernel fault): raise that, typed, once
            self._raise_if_failed(launches, key)
            raise
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
        """Report launches the device marked failed (a negative status), once.

        Failed tokens are forgotten here, reported or not.  A token of a kernel
        launch (``hostarray.kernels``) names its ``kernel`` and ``device`` and is
        shared by every storage the launch used and by its ``Launch``: its
        ``claim_report()`` says whether the failure is still to be raised, so a
        launch's failure is raised once, by whichever access or ``Launch.wait()``
        meets it first.  Other tokens (a transfer, raw pyopencl work) belong to
        this storage alone."""
        status = _status
        failed = [t for t in tokens if status(t) < 0]
        if not failed:
            return
        coh = self.coh
        where = {id(t): k for t, k, _ in coh.inflight}
        coh.drop_launches(failed)
        self._mirror()
        # a kernel's failure first: after a fault some drivers fail every later command,
        # and answer for any event with the fault's status (NVIDIA: -9999)
        failed.sort(key=lambda t: getattr(t, "kernel", None) is None)
        for i, t in enumerate(failed):
            claim = getattr(t, "claim_report", None)
            if claim is not None and not claim():
                continue  # raised already (Launch.wait or another array of the launch)
            # one error at a time: the other failed launches at the next host accesses
            self.unreported.extend(f for f in failed[i + 1:] if hasattr(f, "claim_report"))
            self._mirror()
            device = getattr(t, "device", None) or key or where.get(id(t), "the device")
            kernel = getattr(t, "kernel", None)
            what = None if kernel else "a transfer or raw pyopencl command"
            raise LaunchFailed(device, status(t), what, kernel)

    # -- the hooks every host access goes through ---------------------------------------
    def sync_for_host_read(self) -> None:
        """Make the host current (acquire from a current device if needed)."""
        with self.lock:
            if self.unreported:
                self._report_pending()
            if self.coh is not None:
                key = self.coh.source_for_host()
                if key is not None:
                    self._acquire_from(key)
                    self._mirror()

    def host_write(self, whole: bool = False, view: Any = None) -> HostWrite:
        """A host write as one transaction: ``with storage.host_write(whole): <write>``.

        On entry (under the storage's lock, held to the end): wait for launches
        that use the data, and acquire stale data unless ``whole``.  On a normal
        exit the host becomes the only current side.  If the write raises, a
        skipped acquire is not recorded as a write (the device keeps the newest
        data; see :meth:`Coherence.host_write_failed`).

        ``whole`` is the caller's promise that the write overwrites every byte
        of the storage *and* that its value was fully evaluated beforehand
        (nothing about the old contents can still be read by it)."""
        return HostWrite(self, whole, view)

    def _begin_host_write(self, whole: bool) -> int:
        """0: nothing to record; 1: recorded on success; 2: acquire skipped."""
        coh = self.coh
        if coh is None or self.host_exclusive:
            return 0
        if self.unreported:
            self._report_pending()
        self._wait_for(coh.hazards_for_host_write())
        if coh.host_stale:
            if whole:
                return 2
            self._acquire_from(coh.source_for_host())
        return 1

    def _end_host_write(self, mode: int, ok: bool) -> None:
        coh = self.coh
        if ok:
            coh.host_written()
        else:
            coh.host_write_failed(skipped_acquire=mode == 2)
        self._mirror()

    def begin_escape(self) -> None:
        """A raw view that may be written behind our back is handed out."""
        with self.lock:
            coh = self.coh
            if coh is None:
                coh = self._new_coherence()
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
    def prepare_device_read(self, key: Hashable, writes: bool = False) -> None:
        """Publish to ``key`` if it is not current (acquiring elsewhere first).

        ``writes``: the launch also writes, so launches on other devices that
        still use the data are waited for (their queues are not ordered with
        ``key``'s)."""
        coh = self.coh
        self._apply_deferred_ends()
        self._check_foreign()
        if writes and coh.inflight:
            self._wait_for(coh.hazards_for_device_write(key))
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
        self._apply_deferred_ends()
        self._check_foreign()
        self._wait_for(coh.hazards_for_device_write(key))

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
        """Copy the newest data into ``key``'s buffer now (always one publish).

        Device writes not read back yet are kept on every link: the host acquires
        them first (newest wins), then publishes."""
        with self.lock:
            if key not in self.buffers:
                return
            coh = self.coh
            self._apply_deferred_ends()
            self._check_foreign()
            source = coh.source_for_host()
            if source is not None:
                self._acquire_from(source)
            self._publish_to(key)
            self._mirror()

    def acquire_explicit(self, key: Hashable) -> None:
        with self.lock:
            if key not in self.buffers:
                return
            coh = self.coh
            if coh.is_current(key) and coh.host_stale:
                self._acquire_from(key)
                self._mirror()

    def discard_raw_use(self, key: Hashable, token: Any) -> None:
        """Raw pyopencl work on ``key`` raised: wait for what it enqueued, and let
        ``key``'s copy hold nothing trusted (the host keeps its data)."""
        with self.lock:
            self._wait_for([token])
            self.coh.device_invalidated(key)
            self._mirror()


class HostWrite:
    """Context manager of :meth:`Storage.host_write`; ``__enter__`` returns ``view``."""

    __slots__ = ("storage", "whole", "view", "mode")

    def __init__(self, storage: Storage, whole: bool, view: Any = None) -> None:
        self.storage = storage
        self.whole = whole
        self.view = view
        self.mode = 0

    def __enter__(self) -> Any:
        s = self.storage
        lock = s.lock
        lock.acquire()
        try:
            self.mode = s._begin_host_write(self.whole)
        except BaseException:
            lock.release()
            raise
        return self.view

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        s = self.storage
        try:
            if self.mode:
                s._end_host_write(self.mode, exc_type is None)
        finally:
            s.lock.release()


@contextmanager
def host_writes(writes: Iterable[HostWrite]) -> Iterator[list[Any]]:
    """Enter several :class:`HostWrite` transactions (locks in one global order);
    yields their views."""
    writes = list(writes)
    with locked(w.storage for w in writes):
        entered: list[HostWrite] = []
        try:
            views = []
            for w in writes:
                views.append(w.__enter__())
                entered.append(w)
            yield views
        except BaseException:
            et, ev, tb = sys.exc_info()
            for w in reversed(entered):
                w.__exit__(et, ev, tb)
            raise
        else:
            for w in reversed(entered):
                w.__exit__(None, None, None)


class locked:  # noqa: N801 - used like a function: ``with locked(storages):``
    """Hold the locks of ``storages`` (in one global order: no lock-order deadlock).

    A host write holds its storage's lock from the coherence check to the last
    byte written, so another thread's whole-storage publish or acquire can't
    interleave with it (the write would be lost on a copied or mapped link).
    A class rather than a generator: launches and writes enter it on every call."""

    __slots__ = ("ordered",)

    def __init__(self, storages: Iterable[Storage]) -> None:
        unique = {id(s): s for s in storages}
        self.ordered = [unique[k] for k in sorted(unique)] if len(unique) > 1 \
            else list(unique.values())

    def __enter__(self) -> None:
        taken: list[Storage] = []
        try:
            for s in self.ordered:
                s.lock.acquire()
                taken.append(s)
        except BaseException:
            for s in reversed(taken):
                s.lock.release()
            raise

    def __exit__(self, *exc: Any) -> None:
        for s in reversed(self.ordered):
            s.lock.release()
