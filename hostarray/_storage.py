# Over 700 lines: the Storage record and the executor of coherence plans belong together.
"""Aligned host storage: one ``Storage`` record per allocation.

An array and all its views share one ``Storage``.  It owns (or borrows) the
numpy memory, the device buffers created over it, the lock and the
coherence state, and it performs the transfers that
:class:`~hostarray._coherence.Coherence` plans, range by range (every rule of
what moves, and when, lives there).  Device buffers are opaque objects with
``publish(lo, hi)``, ``acquire(lo, hi)`` and ``release()`` (see
:mod:`hostarray.backends`), so this module needs numpy only.
"""

from __future__ import annotations

import array
import ctypes
import gc
import mmap
import sys
import threading
import warnings
import weakref
from collections.abc import Callable, Hashable, Iterable, Iterator
from contextlib import contextmanager
from types import MappingProxyType
from typing import Any

import numpy as np

from ._coherence import HOST, ON_HOST_COMMIT, Coherence, Run
from ._stats import COUNTERS
from .errors import InUse, LaunchFailed, _warn_kept_user_memory

__all__ = ["PAGE_SIZE", "PAD", "Storage", "HostWrite", "UserMemory", "aligned_empty",
           "lazy_empty", "give_back_pages", "address_of", "byte_bounds", "host_writes",
           "after_unlock"]

PAGE_SIZE = mmap.PAGESIZE
# Called with a device key after the host acquired from that device (so every launch
# issued there before has finished), once the storage's lock is released (after_unlock);
# hostarray.kernels lets go of finished launches.
AFTER_DEVICE_SYNC: list[Callable[[Hashable], None]] = []
# Called as hook(storage, "acquire" | "publish", runs, refusable) before a transfer moves a byte,
# under the storage's lock; hostarray._guard (the transfer guard) refuses it by raising (nothing
# changed), or logs it: the record goes to the handlers (user code) through after_unlock.
BEFORE_TRANSFER: list[Callable[[Storage, str, list[Run], bool], None]] = []
PAD = 64  # allocations are padded to a multiple of a cache line


def address_of(a: np.ndarray) -> int:
    """Address of the first byte of ``a``."""
    return a.__array_interface__["data"][0]


def byte_bounds(a: np.ndarray) -> tuple[int, int]:
    """``(first, end)`` addresses of the bytes ``a`` covers (empty for zero elements)."""
    lo = address_of(a)
    if not a.size:
        return lo, lo
    hi = lo + a.itemsize
    for n, st in zip(a.shape, a.strides):
        if st < 0:
            lo += st * (n - 1)
        else:
            hi += st * (n - 1)
    return lo, hi


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


def _huge_page_size() -> int:
    """The transparent huge page size, or 0 where huge pages are off (or unknown)."""
    try:
        with open("/sys/kernel/mm/transparent_hugepage/enabled") as f:
            if "[never]" in f.read():
                return 0
        with open("/sys/kernel/mm/transparent_hugepage/hpage_pmd_size") as f:
            return int(f.read().strip())
    except (OSError, ValueError):
        return 0


HUGE_PAGE = _huge_page_size() if hasattr(mmap, "MADV_HUGEPAGE") else 0
# From this size on, lazily committed memory is advised onto huge pages (numpy's own bound
# for its allocations): a first touch costs one fault per huge page instead of 512, and
# giving the pages back is ~20x faster (measured 600 -> 110 ms per GiB for the first touch,
# 120 -> 5 ms for MADV_DONTNEED, on the development machine)
HUGE_FROM = 4 << 20


_LAZY = all(hasattr(mmap, k) for k in ("MAP_PRIVATE", "MAP_ANONYMOUS", "MADV_DONTNEED"))


def lazy_empty(nbytes: int) -> tuple[np.ndarray, int]:
    """Uninitialised, page-aligned ``uint8`` memory of ``nbytes`` (whole pages) that costs
    no RAM until touched, and its commit grain: the bytes the OS commits at a first touch
    (a page; a huge page from :data:`HUGE_FROM` bytes, where the system has them); grain 0
    and committed memory (:func:`aligned_empty`) where the OS has no anonymous mappings.

    An anonymous private mapping: the OS backs it with zeroed pages as they are first
    touched, so a device result's host memory is only what the host reads or writes
    (see :meth:`hostarray._coherence.Coherence.host_touched`); :func:`give_back_pages`
    returns touched pages.  Raises ``MemoryError`` where the address space is refused.

    Examples
    --------
    >>> from hostarray._storage import lazy_empty, PAGE_SIZE
    >>> a, grain = lazy_empty(3 * PAGE_SIZE)
    >>> a.nbytes == 3 * PAGE_SIZE and a.ctypes.data % PAGE_SIZE == 0
    True
    """
    size = max(PAGE_SIZE, -(-nbytes // PAGE_SIZE) * PAGE_SIZE)
    if not _LAZY:  # no anonymous private mappings here: committed memory, as numpy's
        return aligned_empty(size), 0
    huge = HUGE_PAGE if HUGE_PAGE and size >= HUGE_FROM else 0
    total = size + huge  # room to start on a huge page boundary
    try:
        mm = mmap.mmap(-1, total, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS,
                       prot=mmap.PROT_READ | mmap.PROT_WRITE)
    except OSError as e:  # ENOMEM: no address space left (a ulimit -v, overcommit off)
        raise MemoryError(f"hostarray: could not map {total} bytes of host memory: {e}") \
            from None
    raw = np.frombuffer(mm, np.uint8)
    start = (-address_of(raw) % huge) if huge else 0
    if huge:
        mm.madvise(mmap.MADV_HUGEPAGE, start, size)
    # a slice of raw: numpy collapses views of it onto raw (as for aligned_empty), so the
    # pool sees every numpy view through raw's reference count
    return raw[start:start + size], (huge or PAGE_SIZE)


def give_back_pages(base: np.ndarray, ranges: list[tuple[int, int]]) -> None:
    """Return the pages of ``[lo, hi)`` in ``ranges`` (byte offsets in ``base``, memory from
    :func:`lazy_empty`, whole pages) to the OS: they cost no RAM until touched again, and
    read as zeros then.  Only for memory nobody else can reach any more."""
    raw = base.base
    mm = raw.base if isinstance(raw, np.ndarray) else None
    if isinstance(mm, memoryview):  # (np.frombuffer's base: a view of the mapping)
        mm = mm.obj
    if not isinstance(mm, mmap.mmap):
        raise AssertionError("give_back_pages: memory that lazy_empty did not make")
    start = address_of(base) - address_of(raw)
    for lo, hi in ranges:
        lo -= lo % PAGE_SIZE
        if hi > lo:
            mm.madvise(mmap.MADV_DONTNEED, start + lo, hi - lo)


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
        reference counts; ``True`` whenever that can't be told).

        The walk follows the memory's ownership down from the adopted array: an
        ndarray's ``.base``, a memoryview's object, a ctypes object's owner (see
        :func:`_ctypes_owner`).  Each object on the way must be held by its child
        alone; a memoryview must also be the only view of its managed buffer (the
        views ``memoryview(mv)``, ``mv[a:b]``, ``mv.cast()`` and numpy's
        ``np.frombuffer(mv)`` share the user's ``mv``'s, which the owner's count does
        not show).  The walk ends at an owner nobody else holds that owns its memory
        (numpy's own, a ``bytearray``, a ctypes object's own buffer...): unreachable.
        An object with a weak reference to it is reachable.  Anything it can't see
        through (an ``mmap``, a shared file mapping other
        mappings write; a DLPack capsule; an unknown exporter; memory at a raw
        address) is reachable."""
        if not _REFCOUNTS_WORK:
            return True
        obj: Any = self.array
        while True:
            # self.array or the child's link to it, the local name, getrefcount's argument;
            # a weak reference (weakref.ref, a WeakValueDictionary) hands a strong one back
            # at any time: the object is reachable while one exists
            if sys.getrefcount(obj) > 3 or weakref.getweakrefcount(obj):
                return True
            if isinstance(obj, np.ndarray):
                if obj.base is None:
                    # numpy's own memory, held by nobody else; memory numpy doesn't own
                    # (made by C code over a pointer) belongs to someone it doesn't name
                    return not obj.flags.owndata
                obj = obj.base
            elif isinstance(obj, memoryview):
                if not _only_view_of_its_buffer(obj):
                    return True
                obj = obj.obj
            elif isinstance(obj, _CDATA):
                obj = _ctypes_owner(obj)
                if obj is None:
                    return False  # the ctypes object's own buffer, held by nobody else
                if obj is _UNKNOWN:
                    return True
            else:
                # the owner of the memory, held by nobody else if it is a plain buffer type;
                # any other owner (an mmap, a DLPack capsule's manager...) may be reachable
                # from the user's side in ways reference counts don't show: assume it is
                return type(obj) not in _PLAIN_OWNERS


# buffer types that own their memory and hand it to nobody but through the buffer protocol
# (which a memoryview or a numpy array holding a reference shows).  Not mmap.mmap: a shared
# file mapping is written by every other mapping of the file, this process's or another's.
_PLAIN_OWNERS = frozenset({bytes, bytearray, array.array})
_CDATA: type = ctypes.c_int.__mro__[-2]  # ctypes' _CData, the base of every ctypes type
_UNKNOWN = object()


def _ctypes_owner(c: Any) -> Any:
    """The next object down the ownership of ctypes object ``c``'s memory: ``None`` when
    ``c`` owns it (its own buffer), ``_UNKNOWN`` when that can't be told.

    A sub-object (a field, ``pointer.contents``) lives in ``_b_base_``'s memory only if it
    lies inside ``_b_base_``'s buffer (``contents`` points anywhere); ``from_buffer`` keeps
    a memoryview of the source as its only ``_objects`` entry; ``from_address`` keeps
    nothing (memory at a raw address belongs to someone unnamed)."""
    if c._b_needsfree_:
        return None
    base = c._b_base_
    if base is not None:
        lo, n = ctypes.addressof(c), ctypes.sizeof(c)
        blo = ctypes.addressof(base)
        return base if blo <= lo and lo + n <= blo + ctypes.sizeof(base) else _UNKNOWN
    kept = c._objects
    if type(kept) is dict and len(kept) == 1 and _FROM_BUFFER_KEY in kept:
        mv = kept[_FROM_BUFFER_KEY]
        if type(mv) is memoryview:
            return mv
    return _UNKNOWN


def _from_buffer_key() -> Any:
    kept = (ctypes.c_char * 1).from_buffer(bytearray(1))._objects
    return next(iter(kept)) if isinstance(kept, dict) and len(kept) == 1 else _UNKNOWN


_FROM_BUFFER_KEY = _from_buffer_key()


def _buffer_refs(m: memoryview) -> int:
    """References to ``m``'s managed buffer (one per memoryview registered with it, plus
    this count's own), or ``-1`` where it can't be found (a memoryview that exports shows
    the collector nothing)."""
    refs = gc.get_referents(m)
    if len(refs) != 1 or type(refs[0]) is not _MANAGED_BUFFER:
        return -1
    return sys.getrefcount(refs[0])


def _only_view_of_its_buffer(m: memoryview) -> bool:
    """Whether ``m`` is the only memoryview over its managed buffer: views of a
    memoryview share the buffer of the one they were made from, and only its count shows
    them (``False`` where that can't be told)."""
    n = _buffer_refs(m)
    return n >= 0 and n == _ONE_VIEW_REFS


def _check_buffer_refs() -> int:
    """:func:`_buffer_refs` of a memoryview alone over its buffer, measured; ``-1`` where
    the count does not show a second view (then every memoryview is taken as shared)."""
    try:
        m = memoryview(bytearray(8))
        alone = _buffer_refs(m)
        m2 = m[2:]
        shared = _buffer_refs(m)
        del m2
        return alone if alone > 0 and shared == alone + 1 and _buffer_refs(m) == alone \
            else -1
    except Exception:
        return -1


def _managed_buffer_type() -> type:
    """The type of the object a memoryview holds its buffer through (CPython's
    ``managedbuffer``; a type nothing has where the collector shows no such object)."""
    refs = gc.get_referents(memoryview(b""))
    return type(refs[0]) if len(refs) == 1 else type("_NoManagedBuffer", (), {})


_MANAGED_BUFFER = _managed_buffer_type()
_ONE_VIEW_REFS = _check_buffer_refs()


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


def _owned(lock: Any) -> bool:
    """Whether this thread holds ``lock`` (an ``RLock``; ``False`` where that can't be
    asked)."""
    owned = getattr(lock, "_is_owned", None)
    return bool(owned()) if owned is not None else False


# -- code that may run the user's code, once no storage lock is held ---------------------------
#
# A storage's operations plan under its lock and then carry the plan out (a host read plans
# its acquires, then makes them; a launch publishes each argument, enqueues, records).  The
# lock is re-entrant, so user code run in between on the same thread (a transfer guard's log
# handler, a __del__ or weakref callback run when hostarray lets go of finished launches) may
# use the very array under way: its writes were overwritten by the rest of the plan (copied
# link) or tripped the plan's consistency checks.  Such calls are deferred with
# after_unlock() and run when the thread leaves its last hold of the locks involved: the state
# is consistent then, the operation complete, and the user code may do anything.

_DEFERRED: dict[int, list[tuple[Any, Callable[..., None], tuple[Any, ...]]]] = {}


_READ_ROUNDS = 4  # acquires of one host read, where log handlers launch work on its bytes


def after_unlock(storage: Storage, fn: Callable[..., None], *args: Any) -> None:
    """Call ``fn(*args)`` once this thread holds ``storage``'s lock no more (now if it
    doesn't); the same call queued twice runs once."""
    lock = storage._lock
    if lock is None or not _owned(lock):
        fn(*args)
        return
    queue = _DEFERRED.setdefault(threading.get_ident(), [])
    for _, f, a in queue:
        if f is fn and a == args:
            return
    queue.append((lock, fn, args))


def run_deferred() -> None:
    """Run this thread's deferred calls if it holds none of the locks they wait for (each
    one even if an earlier one raised; then the first error is raised)."""
    ident = threading.get_ident()
    queue = _DEFERRED.get(ident)
    if not queue or any(_owned(lock) for lock, _, _ in queue):
        return
    del _DEFERRED[ident]  # calls they make queue anew
    error: BaseException | None = None
    for _, fn, args in queue:
        try:
            fn(*args)
        except BaseException as e:  # noqa: PERF203 - one failing callback skips no other
            if error is None:
                error = e
    if error is not None:
        raise error


def _rlock_type() -> Any:
    """``_thread.RLock`` with a ``with`` exit that runs what was deferred (a subclass whose
    only Python method is ``__exit__``: entering costs what an ``RLock``'s does)."""
    import _thread

    try:
        class StorageLock(_thread.RLock):  # type: ignore[misc]
            __slots__ = ()

            def __exit__(self, *exc: Any) -> None:
                self.release()
                if _DEFERRED:
                    _after_release(exc[0] is not None)

        return StorageLock
    except TypeError:  # not subclassable here: a wrapper (slower, same behaviour)
        class WrappedLock:
            __slots__ = ("_rlock", "acquire", "release", "_is_owned")

            def __init__(self) -> None:
                r = self._rlock = threading.RLock()
                self.acquire, self.release = r.acquire, r.release
                self._is_owned = r._is_owned  # type: ignore[attr-defined]

            def __enter__(self) -> bool:
                return self.acquire()

            def __exit__(self, *exc: Any) -> None:
                self.release()
                if _DEFERRED:
                    _after_release(exc[0] is not None)

        return WrappedLock


def _after_release(raising: bool) -> None:
    """Run the deferred calls after a lock's release; while an exception propagates, one a
    call raises does not replace it."""
    if not raising:
        run_deferred()
        return
    try:
        run_deferred()
    except Exception:  # noqa: S110 - the exception under way is the one to see
        pass


_StorageLock = _rlock_type()
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
                 "user", "_address", "__weakref__")

    def __init__(self, base: np.ndarray, user: UserMemory | None = None) -> None:
        # Every array operation makes a Storage for its result: the lock and the
        # buffer dict are created only when a device or a thread needs them.
        self.base = base
        self._lock: threading.RLock | None = None
        # created on the first device buffer (or escape); typed without ``None``: every
        # method using it is reached only once a buffer exists or tests for ``None`` first
        self.coh: Coherence = None  # type: ignore[assignment]
        self.buffers: dict[Hashable, Any] = _NO_BUFFERS
        # The coherence state's fast-path flags, read without the lock on every access; set
        # by the state alone (Coherence's owner), never here: nothing stale, nothing to ask
        # before a host write while there is no state.
        self.host_stale = False
        self.host_exclusive = True
        # memory the user handed in and may still write (an escape while they hold it)
        self.user = user
        self._address = 0  # base's address, found on first use (0: not yet)

    @classmethod
    def over_user_memory(cls, a: np.ndarray) -> Storage:
        """A storage over the user's array ``a`` itself (no copy)."""
        user = UserMemory(a)
        return cls(np.asarray(user), user)

    @property
    def unreported(self) -> list[Any]:
        """Failed launches met with another failure, raised at the next host accesses
        (one each; :attr:`Coherence.unreported`)."""
        coh = self.coh
        return [] if coh is None else coh.unreported

    def _new_coherence(self) -> Coherence:
        coh = self.coh = Coherence(self.base.nbytes, self)
        if self.user is not None:
            coh.escape_begins(0, coh.size)  # the user's own array may be written at any time
        return coh

    def _check_foreign(self) -> None:
        """End the user-memory escape once nobody but hostarray holds that memory."""
        user = self.user
        if user is not None and self.coh is not None and not user.alive():
            self.user = None
            self.coh.escape_ends(0, self.coh.size)

    @property
    def lock(self) -> threading.RLock:
        """The storage's lock (re-entrant), created on first use."""
        lock = self._lock
        if lock is None:
            with _LOCK_CREATION:
                if self._lock is None:
                    self._lock = _StorageLock()
                lock = self._lock
        return lock

    # -- the memory -------------------------------------------------------------
    @property
    def nbytes(self) -> int:
        return self.base.nbytes

    @property
    def address(self) -> int:
        """Address of the allocation's first byte (the base never changes: kept)."""
        addr = self._address
        if not addr:
            addr = self._address = address_of(self.base)
        return addr

    def byte_range(self, view: np.ndarray | None) -> tuple[int, int]:
        """``[lo, hi)``: the bytes of the allocation ``view`` covers (all for ``None``)."""
        if view is None:
            return 0, self.base.nbytes
        lo, hi = byte_bounds(view)
        base = self.address
        return lo - base, hi - base

    def contiguous_bytes(self) -> np.ndarray | None:
        """The allocation as one ``uint8`` array, or ``None`` if it is not one range."""
        b = self.base
        if not (b.flags.c_contiguous or b.flags.f_contiguous):
            return None
        if b.dtype == np.uint8 and b.ndim == 1:
            return b
        return b.reshape(-1, order="A").view(np.uint8)

    # -- device buffers ------------------------------------------------------------
    def _report_pending(self) -> None:
        """Raise the next failed launch not reported yet (one per host access)."""
        self._raise_if_failed(self.coh.take_unreported(), None)

    def add_buffer(self, key: Hashable, buffer: Any) -> None:
        """Record ``buffer`` as this storage's copy on device ``key``."""
        with self.lock:
            if self.coh is None:
                self._new_coherence()
            if self.buffers is _NO_BUFFERS:
                self.buffers = {}
            self.buffers[key] = buffer
            self.coh.add_device(key)
            if self.coh.commit_grain and buffer.link != "copied":
                # a buffer over the host memory itself (a second device's): the driver may
                # touch all of it (NVIDIA pins every page)
                self.coh.host_touched(0, self.coh.size)

    def add_result_buffer(self, key: Hashable, buffer: Any, commit_grain: int = 0) -> None:
        """Record ``buffer`` as the only copy of a new storage that a launch on ``key``
        writes next (:meth:`Coherence.device_result`): nobody else reaches the storage
        yet, so no lock is taken.  ``commit_grain`` > 0: the storage's host memory is
        committed lazily (:func:`lazy_empty`; ``buffer`` must not use it)."""
        if self.coh is not None or self.user is not None:
            raise AssertionError("add_result_buffer: the storage is not new")
        self.coh = Coherence.device_result(self.base.nbytes, key, self, commit_grain)
        self.buffers = {key: buffer}

    def free_buffer(self, key: Hashable) -> bool:
        """Drop ``key``'s buffer, acquiring first if it holds the newest data."""
        with self.lock:
            buf = self.buffers.get(key)
            if buf is None:
                return False
            coh = self.coh
            runs = coh.plan_forget(key)
            if runs:
                self._acquire(runs)  # finishes key's launches too (an in-order queue)
            else:
                self._wait_for(coh.launches_on(key))
            del self.buffers[key]
            coh.forget_device(key)
        buf.release()
        return True

    # -- transfers -------------------------------------------------------------------
    def _acquire(self, runs: list[Run], refusable: bool = True) -> None:
        """Acquire each run ``(lo, hi, device)`` (one transfer each).  ``refusable``: a
        transfer guard may refuse it (not once a launch that needs it is enqueued)."""
        for guard in BEFORE_TRANSFER:
            guard(self, "acquire", runs, refusable)
        if self.coh.deferred:
            # launches recorded but not enqueued yet (the device path's pending expressions:
            # Coherence, "deferred launches"): the acquire, on the in-order queue, comes after
            for t in tuple(self.coh.deferred):
                t.flush()
        for lo, hi, key in runs:
            launches = self.coh.launches_on(key)
            if any(_status(t) > 0 for t in launches):
                COUNTERS.add(waits=1)  # the acquire blocks until these launches finish
            try:
                moved = self.buffers[key].acquire(lo, hi)
            except Exception:
                # a launch that failed explains a failed transfer (NVIDIA refuses every
                # command on a queue after a kernel fault): raise that, typed, once
                self._raise_if_failed(launches, key)
                raise
            self.coh.acquired(key, lo, hi)
            COUNTERS.add(acquires=1, bytes_acquired=moved)
            for hook in AFTER_DEVICE_SYNC:
                # letting go of finished launches may run the user's __del__ or weakref
                # callbacks: not in the middle of this plan (see after_unlock)
                after_unlock(self, hook, key)
            self._raise_if_failed(launches, key)

    def _publish(self, runs: list[Run]) -> None:
        """Publish each run ``(lo, hi, device)`` (one transfer each)."""
        for guard in BEFORE_TRANSFER:
            guard(self, "publish", runs, True)
        for lo, hi, key in runs:
            token, moved = self.buffers[key].publish(lo, hi)
            self.coh.published(key, lo, hi, token)
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
        where = {id(t): coh.device_of(t) for t in failed}
        coh.drop_launches(failed)
        # a kernel's failure first: after a fault some drivers fail every later command,
        # and answer for any event with the fault's status (NVIDIA: -9999)
        failed.sort(key=lambda t: getattr(t, "kernel", None) is None)
        for i, t in enumerate(failed):
            claim = getattr(t, "claim_report", None)
            if claim is not None and not claim():
                continue  # raised already (Launch.wait or another array of the launch)
            # one error at a time: the other failed launches at the next host accesses
            coh.report_later([f for f in failed[i + 1:] if hasattr(f, "claim_report")])
            device = getattr(t, "device", None) or key or where.get(id(t)) or "the device"
            kernel = getattr(t, "kernel", None)
            what = None if kernel else "a transfer or raw pyopencl command"
            raise LaunchFailed(device, status(t), what, kernel)

    # -- the hooks every host access goes through ---------------------------------------
    def sync_for_host_read(self, view: np.ndarray | None = None) -> None:
        """Make the host current for the bytes ``view`` covers (all for ``None``):
        acquire the stale ranges among them, and nothing else."""
        self.sync_range_for_host_read(*self.byte_range(view))

    def sync_range_for_host_read(self, lo: int, hi: int) -> None:
        """:meth:`sync_for_host_read` of the bytes ``[lo, hi)`` of the allocation.

        The transfer guard's log records reach their handlers as the lock is let go
        (:func:`after_unlock`), before the read uses the bytes: a handler that launched
        work on them made them stale again, and the read acquires once more (a few times
        at most: a handler launching at every acquire gets the bytes of its last round)."""
        for _ in range(_READ_ROUNDS):
            with self.lock:
                coh = self.coh
                if coh is None:
                    return
                if coh.unreported:
                    self._report_pending()
                if not coh.host_stale:
                    return
                runs = coh.plan_host_read(lo, hi)
                if not runs:
                    return
                self._acquire(runs)
            if not self.host_stale:
                return

    def host_write(self, whole: bool = False, view: np.ndarray | None = None) -> HostWrite:
        """A host write of the bytes ``view`` covers (all for ``None``) as one
        transaction: ``with storage.host_write(whole, view) as v: <write v>``.

        On entry (under the storage's lock, held to the end): wait for launches
        that use those bytes, and acquire their stale parts unless ``whole``.  On a
        normal exit the host becomes the only side holding them.  If the write
        raises, a skipped acquire is not recorded as a write (the device keeps the
        newest data; see :meth:`Coherence.host_write_failed`).

        ``whole`` is the caller's promise that the write overwrites every byte
        ``view`` covers (a contiguous view) *and* that its value was fully
        evaluated beforehand (nothing about the old contents can still be read
        by it)."""
        return HostWrite(self, whole, view)

    def _begin_host_write(self, w: HostWrite) -> None:
        """Sets ``w.mode``: 0 nothing to record; 1 recorded on success; 2 acquire skipped."""
        coh = self.coh
        if coh is None or self.host_exclusive:
            w.mode = 0
            return
        self.refuse_host_write(w.view)
        if coh.unreported:
            self._report_pending()
        lo, hi = w.lo, w.hi = self.byte_range(w.view)
        self._wait_for(coh.hazards_for_host_write(lo, hi))
        whole = w.whole
        if whole and coh.host_stale and numpy_may_raise_late():
            # numpy may raise after writing some or all of the range: then only a host
            # holding the newest bytes around what it wrote gives numpy's result
            whole = False
        runs = coh.plan_host_write(lo, hi, overwrites=whole)
        if runs:
            self._acquire(runs)
        w.mode = 2 if whole and not coh.is_host_current(lo, hi) else 1

    def _end_host_write(self, w: HostWrite, ok: bool) -> None:
        coh = self.coh
        if ok:
            coh.host_written(w.lo, w.hi)
        else:
            coh.host_write_failed(w.lo, w.hi, skipped_acquire=w.mode == 2)

    def begin_escape(self, view: np.ndarray | None = None) -> tuple[int, int]:
        """A raw view of ``view``'s bytes (all for ``None``) that may be written behind
        our back is handed out; returns the range to pass to :meth:`end_escape`."""
        with self.lock:
            coh = self.coh
            if coh is None:
                coh = self._new_coherence()
            lo, hi = self.byte_range(view)
            self._wait_for(coh.hazards_for_host_write(lo, hi))
            runs = coh.plan_host_read(lo, hi)
            if runs:
                self._acquire(runs)
            coh.escape_begins(lo, hi)
            return lo, hi

    def end_escape(self, lo: int, hi: int) -> None:
        # Runs from a finalizer, possibly inside the garbage collector at any allocation:
        # while this thread holds another storage's lock (never wait for this one: a
        # lock-order deadlock with a launch locking both), or while this thread is in the
        # middle of an operation on this very storage (the lock is re-entrant: changing
        # the state now would pull it from under that operation, e.g. skip a live raw
        # view's range in a loop over the escapes).  Then the end is deferred, without a
        # lock (a deque's append is atomic), and the next launch or end applies it.
        lock = self.lock
        if _owned(lock) or not lock.acquire(blocking=False):
            self.coh.deferred_ends.append((lo, hi))
            return
        try:
            self.coh.escape_ends(lo, hi)
            self._apply_deferred_ends()
        finally:
            lock.release()

    def _apply_deferred_ends(self) -> None:
        ends = self.coh.deferred_ends
        while ends:
            try:
                lo, hi = ends.popleft()
            except IndexError:  # emptied meanwhile
                break
            self.coh.escape_ends(lo, hi)

    @property
    def escaped(self) -> bool:
        return self.coh is not None and self.coh.escaped

    # -- used by launches (hostarray.kernels), under self.lock --------------------------
    def _before_launch(self) -> Coherence:
        coh = self.coh
        self._apply_deferred_ends()
        self._check_foreign()
        if coh.escaped:
            coh.raw_views_may_have_written()  # a raw view may have written since
        return coh

    def _warn_kept(self, key: Hashable) -> None:
        """hostarray.errors.PerformanceWarning, once, off a shared link (issue 22)."""
        buf = self.buffers.get(key)
        if buf is not None and self.user is not None:
            _warn_kept_user_memory(self.user, self.base.nbytes, key, buf.link)

    def refuse_in_use(self, side: Hashable, lo: int, hi: int, what: str,
                      writes: bool = True) -> None:
        """Raise :class:`~hostarray.errors.InUse` where an access by ``side`` to bytes
        ``[lo, hi)`` (``writes``: a write) conflicts with an open raw block (see
        :meth:`Coherence.raw_block_in_the_way`); before anything changed.  Costs one
        attribute test while no block is open."""
        coh = self.coh
        if coh is None or not coh.raw_blocks:
            return
        block = coh.raw_block_in_the_way(side, lo, hi, writes)
        if block is not None:
            raise InUse(block[0], (block[1], block[2]), what)

    def refuse_host_write(self, view: np.ndarray | None) -> None:
        """:meth:`refuse_in_use` for a host write of the bytes ``view`` covers (all for
        ``None``): every host write path calls it before it reads anything."""
        coh = self.coh
        if coh is not None and coh.raw_blocks:
            self.refuse_in_use(HOST, *self.byte_range(view), "a host write")

    def open_raw_block(self, key: Hashable, lo: int, hi: int) -> None:
        """A ``cl_buffer`` block on ``key`` that may write ``[lo, hi)`` opened (under the lock)."""
        self.coh.raw_block_opens(key, lo, hi)

    def end_raw_block(self, key: Hashable, lo: int, hi: int, detached: bool = False) -> None:
        self.coh.raw_block_ends(key, lo, hi, detached)

    def prepare_device_read(self, key: Hashable, lo: int, hi: int,
                            writes: bool = False) -> None:
        """Before a launch on ``key`` reads bytes ``[lo, hi)``: publish what ``key``
        lacks there (acquiring it elsewhere first where the host lacks it too).

        ``writes``: the launch also writes, so launches on other devices that
        still use those bytes are waited for (their queues are not ordered with
        ``key``'s)."""
        if self.user is None and self.coh.device_ready(key, lo, hi, writes):
            return  # nothing to publish, acquire or wait for (Coherence.device_ready)
        coh = self._before_launch()
        if self.user is not None:  # the user still holds the adopted array: all of it moves
            self._warn_kept(key)
        if writes:
            self._wait_for(coh.hazards_for_device_write(key, lo, hi))
        acquires, publishes = coh.plan_device_read(key, lo, hi)
        if acquires:
            self._acquire(acquires)
        if publishes:
            self._publish(publishes)

    def prepare_device_write(self, key: Hashable, lo: int, hi: int) -> None:
        """Before a write-only launch on ``key`` over ``[lo, hi)``: publish nothing;
        wait for launches on other devices that still use those bytes (this device's
        queue does not order against theirs)."""
        if self.user is None and self.coh.device_write_ready(key, lo, hi):
            return  # nothing to wait for (Coherence.device_write_ready)
        coh = self._before_launch()
        if self.user is not None:
            self._warn_kept(key)
        self._wait_for(coh.hazards_for_device_write(key, lo, hi))

    def record_launch(self, key: Hashable, token: Any, lo: int, hi: int,
                      writes: bool) -> None:
        """A launch on ``key`` was enqueued, reading (and if ``writes``, writing) ``[lo, hi)``."""
        coh = self.coh
        if writes:
            coh.device_written(key, lo, hi, token)
        else:
            coh.device_read_launched(key, lo, hi, token)
        if coh.escapes:
            if writes:
                # raw views must see the result (only the bytes they cover)
                self._acquire(coh.plan_raw_view_acquire(lo, hi), refusable=False)
            elif coh.raw_views_reach(lo, hi):
                # a raw view may be written right after this call: the launch (and
                # its publish, a copy still reading host memory) must be done first
                self._wait_for([token])

    # -- explicit hostptr operations ---------------------------------------------------
    def publish_explicit(self, key: Hashable, view: np.ndarray | None = None) -> None:
        """Copy the newest data of the bytes ``view`` covers (all for ``None``) into
        ``key``'s buffer now (one publish, less the bytes an open raw block on ``key``
        holds: its raw code's are the newest there).

        Device writes not read back yet are kept on every link: the host acquires
        them first (newest wins), then publishes."""
        with self.lock:
            if key not in self.buffers:
                return
            coh = self._before_launch()
            lo, hi = self.byte_range(view)
            if lo >= hi:
                return
            runs = coh.plan_host_read(lo, hi)
            if runs:
                self._acquire(runs)
            runs = coh.plan_explicit_publish(key, lo, hi)
            if runs:
                self._publish(runs)

    def acquire_explicit(self, key: Hashable, view: np.ndarray | None = None) -> None:
        """Make the writes of ``key``'s launches issued so far to the bytes ``view``
        covers (all for ``None``) visible on the host."""
        with self.lock:
            if key not in self.buffers:
                return
            runs = self.coh.plan_explicit_acquire(key, *self.byte_range(view))
            if runs:
                self._acquire(runs)

    def take_detached_writes(self, buf: Any, lo: int, hi: int) -> None:
        """Raw work wrote bytes ``[lo, hi)`` of ``buf``, a buffer freed meanwhile: the host
        takes them (one acquire, after the launches still using those host bytes)."""
        with self.lock:
            coh = self.coh
            self._wait_for(coh.hazards_for_host_write(lo, hi))
            moved = buf.acquire(lo, hi)  # after everything on the queue, the block's work too
            COUNTERS.add(acquires=1, bytes_acquired=moved)
            coh.host_written(lo, hi)

    def is_current(self, key: Hashable, lo: int, hi: int) -> bool:
        """Whether ``key`` holds the newest bytes of ``[lo, hi)``."""
        return self.coh.is_current(key, lo, hi)

    def discard_raw_use(self, key: Hashable, token: Any, lo: int = 0,
                        hi: int | None = None) -> None:
        """Raw pyopencl work on ``key`` over bytes ``[lo, hi)`` (default: all) raised: wait
        for what it enqueued, and let ``key``'s copy of them hold nothing trusted (the
        host keeps its data)."""
        with self.lock:
            self._wait_for([token])
            self.coh.device_invalidated(key, lo, hi)


class HostWrite:
    """Context manager of :meth:`Storage.host_write`; ``__enter__`` returns ``view``."""

    __slots__ = ("storage", "whole", "view", "mode", "lo", "hi")

    def __init__(self, storage: Storage, whole: bool, view: Any = None) -> None:
        self.storage = storage
        self.whole = whole
        self.view = view
        self.mode = 0
        self.lo = self.hi = 0

    def __enter__(self) -> Any:
        s = self.storage
        lock = s.lock
        lock.acquire()
        try:
            s._begin_host_write(self)
        except BaseException:
            lock.release()
            raise
        return self.view

    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> None:
        s = self.storage
        try:
            if self.mode:
                s._end_host_write(self, exc_type is None)
        finally:
            s.lock.release()
        if _DEFERRED:
            _after_release(exc_type is not None)


def numpy_may_raise_late() -> bool:
    """Whether numpy may raise, or run Python code, *after* writing (part of) an
    operation's output: its floating-point checks run once the loop is done, and raise
    when ``np.errstate`` says ``raise`` (or call back: ``call``, ``log``), when a warnings
    filter makes the ``RuntimeWarning`` an exception, or hand it to a replaced
    ``warnings.showwarning`` (code that may read the array being written).  A whole
    overwrite that skipped the acquire of stale device bytes could not tell then what
    numpy wrote (and a read from that code would acquire over it), so such writes
    acquire first."""
    if any(v in ("raise", "call", "log") for v in np.geterr().values()):
        return True
    if warnings.showwarning is not _SHOWWARNING:
        return True
    return any(f[0] == "error" and issubclass(RuntimeWarning, f[2]) for f in warnings.filters)


_SHOWWARNING = getattr(warnings, "_showwarning_orig", warnings.showwarning)


def _count_commit(nbytes: int) -> None:
    COUNTERS.add(host_bytes_committed=nbytes)


ON_HOST_COMMIT.append(_count_commit)  # (Coherence.host_touched: first touches, whole grains)


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
        if type(storages) is list and len(storages) == 2:  # a launch's usual case
            a, b = storages
            self.ordered = [a] if a is b else [a, b] if id(a) < id(b) else [b, a]
            return
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
        if _DEFERRED:
            _after_release(exc[0] is not None)
