# Over 700 lines: the launch protocol and its deferred form (pending expressions) belong together.
"""The one launch protocol, under user kernels, generated kernels and ``cl_buffer`` blocks.

Every use of an array's bytes by a device command goes through the same steps, under the
locks of the storages it uses (:func:`launch`; a raw block is a launch whose "enqueue" is
the user's code: :func:`begin`, the steps before, at its entry, :func:`record` at its exit):

1. refuse an access an open ``cl_buffer`` block is in the way of (``InUse``),
   look up the buffers (made on first use), refuse a sub-buffer that would retire one such
   a block holds (``BadLaunch``), then publish the bytes read where the device lacks them
   and wait where bytes written are still used elsewhere;
2. enqueue, then unset the kernel's buffer arguments;
3. :func:`record`: the storages record the launch (its token, :class:`_Run`) as reader or
   writer of its bytes, so that the host acquires lazily;
4. the launch's record (:class:`Launch`) keeps the storages it used alive until it is
   known finished (:class:`_Pending`, per device; let go after each device sync:
   :func:`_after_device_sync`).

A *use* is ``(storage, lo, hi, mode)``: the bytes ``[lo, hi)`` of the storage, ``mode``
``"r"``, ``"w"`` (written whole, nothing published) or ``"rw"``.  An array argument is
``(array, offset, nbytes)`` (its part of the buffer: a sub-buffer unless the whole) or an
:class:`ArrayArg` (the storage's whole buffer, as generated kernels take it).
"""

from __future__ import annotations

import atexit
import math
import operator
import re
import threading
import weakref
from collections import deque
from collections.abc import Sequence
from typing import Any

import pyopencl as cl

from ._devices import Device
from ._sharing import ensure_buffer
from ._stats import COUNTERS
from ._storage import AFTER_DEVICE_SYNC, _owned, after_unlock, locked
from .errors import BadLaunch, LaunchFailed

__all__ = ["ArrayArg", "Deferred", "Launch", "LaunchLimits", "WorkSizes", "begin", "defer",
           "launch", "launch_limits", "pending", "record"]

_COMPLETE = int(cl.command_execution_status.COMPLETE)


class ArrayArg:
    """An array operand passed as its storage's whole buffer, with its element offset and
    strides there, and the bytes it covers (``use``: see the module)."""

    __slots__ = ("x", "s", "lo", "hi", "offset", "strides", "mode", "use")

    def __init__(self, x: Any, offset: int, strides: tuple[int, ...], lo: int, hi: int,
                 mode: str) -> None:
        self.x, self.s, self.offset, self.strides, self.lo, self.hi, self.mode, self.use = \
            x, x._s, offset, strides, lo, hi, mode, (x._s, lo, hi, mode)


class _Run:
    """What the storages of a launch track for it (their in-flight token).

    The event, the kernel's name, the device and weak references to the storages whose
    locks the launch took (a token referring to storages would make a cycle; none to
    those just taken from the pool: a new object's costs an allocation, and clearing it).
    ``wait()`` and ``command_execution_status`` are the token protocol ``Storage`` relies
    on; :meth:`claim_report` makes a failure reported once, by whichever of
    :meth:`Launch.wait` or a host access meets it first."""

    __slots__ = ("event", "kernel", "device", "reported", "storages")

    def __init__(self, event: Any, kernel: str, device: Device, storages: list[Any]) -> None:
        self.event = event
        self.kernel = kernel
        self.device = device
        self.reported = False
        self.storages = (_ref(storages[0]),) if len(storages) == 1 else \
            tuple(map(_ref, storages))

    def wait(self) -> None:
        """(``Storage._wait_for``, under the storage's lock.)  The queue ran up to here (in
        order): the launches done before let go of their storages now, not at a later
        launch (a storage waiting for this launch, e.g. free_buffer, is often the last
        thing the host does with the array)."""
        self.event.wait()
        self.synced(True)

    def synced(self, locked: bool = False) -> None:
        """The host waited for this launch: let go of the launches finished on its device
        once this thread holds no lock of the launch's storages (that may run the user's
        ``__del__``: never inside a storage's operation; ``_storage.after_unlock``).
        ``locked``: a lock this token does not name is held (a storage new to the launch):
        they are let go of now, and what they kept at the next launch or device sync."""
        for ref in self.storages:
            s = ref()
            if s is not None and s._lock is not None and _owned(s._lock):
                after_unlock(s, _after_device_sync, self.device)
                return
        _after_device_sync(self.device, locked)

    @property
    def command_execution_status(self) -> int:
        """The event's status; after a device fault, the error the driver gives when asked
        (NVIDIA answers clGetEventInfo with -9999 once a kernel made an illegal access)."""
        try:
            return int(self.event.command_execution_status)
        except cl.Error as e:
            code = getattr(e, "code", None)
            return code if isinstance(code, int) and code < 0 else -1

    def claim_report(self) -> bool:
        """``True`` once: the caller reports this launch's failure; later callers don't."""
        with _REPORT_LOCK:
            first = not self.reported
            self.reported = True
        return first


_REPORT_LOCK = threading.Lock()
_ref = weakref.ref


class Launch:
    """A launch in flight (see :class:`hostarray.Launch`, the public subclass user kernels
    return); keeps the storages it used alive until it is known finished."""

    __slots__ = ("_run", "_keep")

    def __init__(self, run: _Run, keep: list[Any]) -> None:
        self._run = run
        self._keep = keep  # the storages: host memory outlives the launch

    @property
    def event(self) -> Any:
        return self._run.event

    @property
    def kernel(self) -> str:
        return self._run.kernel

    @property
    def device(self) -> Device:
        return self._run.device

    def wait(self) -> None:
        """Block until the launch has finished.

        Raises :class:`~hostarray.hostptr.LaunchFailed` if the device reports it
        failed, unless that failure was already raised (by an earlier ``wait()``
        or by a host access to an array the launch used): each failure is raised
        once."""
        run = self._run
        try:
            if run.command_execution_status > _COMPLETE:
                COUNTERS.add(waits=1)  # blocks for a launch still queued or running
            try:
                run.event.wait()
            except cl.Error:
                if run.command_execution_status >= 0:
                    raise
            status = run.command_execution_status
            if status < 0 and run.claim_report():
                raise LaunchFailed(run.device, status, kernel=run.kernel) from None
        finally:
            self._keep = []
            # the queue ran up to here: launches done before let go of their memory, and
            # buffers that died while they ran are released if nothing runs any more
            run.synced()

    @property
    def done(self) -> bool:
        """Whether the launch has finished (or failed: a negative status)."""
        return self._run.command_execution_status <= _COMPLETE

    def __repr__(self) -> str:
        return f"<Launch {self.kernel} {'done' if self.done else 'in flight'}>"


class _Pending:
    """Launches not yet known finished, per device: they keep their storages alive."""

    # Asking a launch's status costs ~1.5 us of host time on NVIDIA's driver (measured on
    # the H200): the finished ones are let go every PRUNE_EVERY launches, not on each.
    # Their storages outlive them by at most that many launches; every host access that
    # waits for the device lets go of them at once (_after_device_sync).
    PRUNE_EVERY = 8

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.launches: deque[Launch] = deque()
        self.added = 0  # launches added since the last prune
        self.later: list[Any] = []  # what launches let go of under a storage's lock kept

    def add(self, launch: Launch) -> None:
        n = self.added + 1
        if n < self.PRUNE_EVERY and not self.later:
            # (a deque's append is atomic: no lock; a count lost to a race only moves the
            # next prune)
            self.added = n
            self.launches.append(launch)
            return
        self.added = 0
        with self.lock:
            gone = self._prune()
            self.launches.append(launch)  # after the prune: not asked for its status yet
        # what the finished launches kept goes here, after the lock: its last reference may
        # run the user's __del__, which may launch again
        del gone

    def _prune(self) -> list[Any]:
        """Pop the finished launches from the head (under the lock); returns what they kept,
        for the caller to drop once it released the lock."""
        q = self.launches
        gone, self.later = self.later, []
        while q:
            head = q[0]
            keep = head._keep
            if keep:
                # Launch.done, inlined (on every eighth launch): finished, or failed (a
                # negative status, or an error asking for it)
                try:
                    if int(head._run.event.command_execution_status) > _COMPLETE:
                        break
                except cl.Error:
                    pass
                gone.append(keep)
                head._keep = []
            q.popleft()
        return gone

    def prune(self, locked: bool = False) -> None:
        """Let go of the finished launches; ``locked``: under a storage's lock, so what they
        kept is dropped at the next prune, not now (see :meth:`_Run.synced`)."""
        with self.lock:
            gone = self._prune()
            if locked:
                self.later = gone
                gone = []
        del gone  # after the lock (see add)


_PENDING: dict[Device, _Pending] = {}


def pending(dev: Device) -> _Pending:
    """The registry of ``dev``'s launches not known finished (also its runtime's
    ``pending``, read on every launch without hashing the device)."""
    p = _PENDING.get(dev)
    if p is None:
        p = _PENDING.setdefault(dev, _Pending())
        dev.runtime.pending = p
    return p


@atexit.register
def _finish_before_exit() -> None:
    """Wait for every device's queue and drop what launches hold, before the interpreter
    tears modules down in an arbitrary order (a driver may crash releasing buffers after
    its queue or context is gone, or while commands on them still run)."""
    from . import _devices as registry

    for dev in registry._OPENCL or ():
        rt = dev._runtime
        if rt is None:
            continue
        try:
            rt.queue.finish()
        except Exception:  # a failed device must not turn exit into a traceback
            continue
        rt.graveyard = []
    for p in _PENDING.values():
        p.launches.clear()
        p.later = []


def _after_device_sync(key: Any, locked: bool = False) -> None:
    # The host just synchronised with device ``key`` (an in-order queue: every launch
    # issued there before is finished): let go of what they kept (see _Pending.prune).
    p = _PENDING.get(key)
    if p is not None:
        p.prune(locked)
    rt = getattr(key, "_runtime", None)
    if rt is not None:
        rt.sweep()  # buffers that died while launches ran


AFTER_DEVICE_SYNC.append(_after_device_sync)


# PoCL's CPU devices deal a launch's work-groups out by a 32-bit index (lib/CL/devices/
# pthread/pthread_scheduler.c: the groups per thread and the group indices are `unsigned`):
# a launch of 2**32 work-groups or more kills the process, with `Assertion max_wgs > 0`
# (SIGABRT) or SIGILL.  Probed on PoCL 3.1 (Debian), with explicit local sizes: 2**32 - 1
# work-groups run, 2**32 (global (2**32,), local (1,); (2**34,), (4,); (2**16, 2**16),
# (1, 1)) and more crash, whatever the dimensions; the number of work-items alone does not
# matter ((2**32,) with the driver's local size of 4096 runs).
_POCL_MAX_GROUPS = 2**32 - 1


# NVIDIA's driver (H200, OpenCL 3.0 CUDA 13.0) runs every global size it is given, 2**32
# work-groups and more too, but hands kernels their global ids and sizes as 32-bit signed
# ints per dimension: with 2**31 work-items or more in a dimension, get_global_size(0) and
# get_global_id(0) of the later work-items come out negative (sign-extended: (2**32,) is
# seen as 0, (2**31,) as -2**31), so x[get_global_id(0)] writes before x
# (benchmarks/probes/probe_launch_limits.py on the H200).
_NVIDIA_MAX_SIZE = 2**31 - 1


class LaunchLimits:
    """What one launch on a device may ask for, beyond the local size's own limits.

    Attributes
    ----------
    max_size : int
        Work-items per dimension: a device ``size_t`` (``2**CL_DEVICE_ADDRESS_BITS - 1``);
        ``2**31 - 1`` on NVIDIA's driver (``_NVIDIA_MAX_SIZE``).
    max_items : int
        Work-items in all: ``2**CL_DEVICE_ADDRESS_BITS - 1`` (``get_global_linear_id()``).
    max_groups : int
        Work-groups in all: ``2**32 - 1`` on PoCL (``_POCL_MAX_GROUPS``), else ``max_items``.
    size_why, why : str
        Why ``max_size`` and ``max_groups`` are what they are, for messages.
    """

    __slots__ = ("max_size", "max_items", "max_groups", "bits", "size_why", "why")

    def __init__(self, cl_device: Any) -> None:
        self.bits = int(cl_device.address_bits)
        self.max_size = self.max_items = 2**self.bits - 1
        self.size_why = self.why = f"its {self.bits}-bit size_t"
        self.max_groups = self.max_items
        try:
            platform = cl_device.platform.name
            pocl = "PoCL" in cl_device.version or platform == "Portable Computing Language"
        except cl.Error:
            platform, pocl = "", False
        if pocl:
            self.max_groups = min(self.max_items, _POCL_MAX_GROUPS)
            self.why = "PoCL counts a launch's work-groups in 32 bits; more kill the process"
        elif platform.startswith("NVIDIA"):
            self.max_size = min(self.max_size, _NVIDIA_MAX_SIZE)
            self.size_why = ("NVIDIA's driver gives kernels 32-bit signed global ids and "
                             "sizes, not a size_t: more would make get_global_id() negative")

    def check_groups(self, name: str, dev: Device, n: int, group: int) -> None:
        """Refuse (``BadLaunch``) a launch of ``n`` work-items in groups of ``group`` that
        ``dev`` can't run (hostarray's generated kernels: arrays as large as that don't fit
        a device today)."""
        items = -(-n // group) * group
        if items > self.max_size or items // group > self.max_groups:
            why = self.size_why if items > self.max_size else self.why
            raise BadLaunch(name, f"{n} work-items in {items // group} work-groups of "
                                  f"{group}; {dev} runs at most {self.max_size} work-items and "
                                  f"{self.max_groups} work-groups in one launch ({why})",
                            limit=min(self.max_size, self.max_groups * group), requested=items)


_LIMITS: dict[Device, LaunchLimits] = {}


def launch_limits(dev: Device) -> LaunchLimits:
    """The :class:`LaunchLimits` of OpenCL device ``dev`` (read once)."""
    lim = _LIMITS.get(dev)
    if lim is None:
        lim = _LIMITS[dev] = LaunchLimits(dev._cl_device)
    return lim


# -- the sizes of one kernel's launches ------------------------------------------------------

def _ints(size: Any) -> tuple[int, ...] | None:
    """A launch size (an int, or a sequence of them; numpy integers too) as a tuple of
    ints, or ``None`` where it is not made of integers (a float is not truncated)."""
    if isinstance(size, (str, bytes)):
        return None
    try:
        return (operator.index(size),)
    except TypeError:
        pass
    try:
        return tuple(operator.index(v) for v in size)
    except TypeError:
        return None


_CL_STD = re.compile(r"^-cl-std=CL(\d+)\.(\d+)$")


def _non_uniform_groups(cl_device: Any, options: Sequence[str]) -> bool:
    """Whether launches of a program built with ``options`` on ``cl_device`` may have a
    global size that is not a multiple of the local size (OpenCL 2.0's non-uniform
    work-groups: the device supports them, the program is built for OpenCL C 2.0 or later
    and without ``-cl-uniform-work-group-size``).  Else OpenCL 1.2's rule holds."""
    std = [m for o in options if (m := _CL_STD.match(o))]
    if not std or int(std[-1].group(1)) < 2 or "-cl-uniform-work-group-size" in options:
        return False
    try:  # OpenCL 3.0 asks; a 2.x device must support them
        return bool(cl_device.non_uniform_work_group_support)
    except (cl.Error, AttributeError):
        return cl_device.version.startswith("OpenCL 2.")


class WorkSizes:
    """The global and local sizes the launches of one kernel on one device may take: the
    device's, its driver's (:class:`LaunchLimits`) and the kernel's own limits, read once
    (:meth:`_init_sizes`), and the check of each launch's sizes against them
    (:meth:`_sizes`).  The base of :class:`hostarray.kernels.Kernel`."""

    name: str
    device: Device
    _cl: Any  # the cl.Kernel

    def _init_sizes(self, cl_dev: Any, options: Sequence[str]) -> None:
        # the global size's limits (LaunchLimits); a launch with no local size and at most
        # ``_fast`` work-items meets them whatever local size the driver picks
        lim = launch_limits(self.device)
        self._limits = lim
        self._fast = min(lim.max_items, lim.max_groups)
        self._fast_dim = min(self._fast, lim.max_size)  # and per dimension
        self._non_uniform = _non_uniform_groups(cl_dev, options)
        # the device's and the kernel's limits, checked before anything is published
        wg = cl.kernel_work_group_info
        self._max_group = min(int(cl_dev.max_work_group_size),
                              int(self._group_info(wg.WORK_GROUP_SIZE, 2**62)))
        self._max_items = tuple(int(v) for v in cl_dev.max_work_item_sizes)
        self._local_limit = int(cl_dev.local_mem_size)
        # local memory the kernel declares itself (no __local argument has a size yet)
        self._static_local = int(self._group_info(wg.LOCAL_MEM_SIZE, 0))
        reqd = tuple(int(v) for v in self._group_info(wg.COMPILE_WORK_GROUP_SIZE, (0, 0, 0)))
        self._reqd = reqd if any(reqd) else None  # __attribute__((reqd_work_group_size))

    def _group_info(self, what: Any, default: Any) -> Any:
        """The kernel's work-group info ``what`` on its device; ``default`` (no check)
        where the driver does not answer."""
        try:
            return self._cl.get_work_group_info(what, self.device._cl_device)
        except cl.Error:
            return default

    def _refuse(self, why: str, **data: Any) -> BadLaunch:
        """A :class:`BadLaunch` carrying ``data`` (``argument``, ``limit``...)."""
        return BadLaunch(self.name, why, **data)

    def _sizes(self, global_size: Any, local_size: Any) -> tuple[tuple[int, ...], Any]:
        """``(global size, local size or None)`` as the driver gets them, or the typed
        refusal of a size the device or its driver can't run (checked here: PoCL aborts
        the process on some, before any error can be returned)."""
        if local_size is None and self._reqd is None:
            # the common case, accepted at once: a positive int (x.size) or 1 to 3 of them
            # (x.shape) with at most ``_fast`` work-items in all and ``_fast_dim`` in each
            # dimension, so within every limit whatever local size the driver picks;
            # anything else takes the checks below
            dim = self._fast_dim
            t = type(global_size)
            if t is int:
                if 0 < global_size <= dim:
                    return (global_size,), None
            elif t is tuple and 0 < len(global_size) <= 3:
                total = 1
                for g in global_size:
                    if type(g) is not int or not 0 < g <= dim:
                        break
                    total *= g
                else:
                    if total <= self._fast:
                        return global_size, None
        gs = _ints(global_size)  # ints, not int(): a float size is refused, not truncated
        if not gs or any(g <= 0 for g in gs):
            raise BadLaunch(self.name, f"the global size must be positive integers (one, or "
                                       f"a sequence of 1 to 3); got {global_size!r}")
        if len(gs) > 3:  # OpenCL's limit; refused here, before anything is published
            raise BadLaunch(self.name, f"global size {gs} has {len(gs)} dimensions; OpenCL "
                                       f"kernels take 1 to 3: flatten the index space")
        lim = self._limits
        dev = self.device
        for d, g in enumerate(gs):  # a size_t of the device (NVIDIA: an int)
            if g > lim.max_size:
                raise self._refuse(f"global size {gs} has {g} work-items in dimension {d}; "
                                   f"{dev} runs at most {lim.max_size} there "
                                   f"({lim.size_why}): split the launch",
                                   limit=(lim.max_size,) * len(gs), requested=gs)
        total = math.prod(gs)
        if total > lim.max_items:  # get_global_linear_id() would not fit a size_t either
            raise self._refuse(f"global size {gs} makes {total} work-items; {dev} runs at "
                               f"most {lim.max_items} in one launch (its {lim.bits}-bit "
                               f"size_t): split the launch", limit=lim.max_items,
                               requested=total)
        reqd = self._reqd
        picked = False
        if local_size is None:
            if reqd is None:
                if total <= lim.max_groups:  # the driver's choice makes no more groups
                    return gs, None
                # the driver's choice could make more work-groups than it can count (a
                # local size of 1 makes one per work-item): pass one that makes fewest
                local_size, picked = self._largest_local_size(gs), True
            else:
                need = max(d + 1 for d, r in enumerate(reqd) if r != 1)
                if need > len(gs):
                    raise self._refuse(f"it requires work-groups of {reqd} "
                                       f"(reqd_work_group_size) but the global size {gs} has "
                                       f"{len(gs)} dimension(s); launch over {need} "
                                       f"dimensions", limit=reqd, requested=(*gs, 1, 1)[:3])
                local_size = reqd[:len(gs)]  # the only size the driver takes
        ls_ = _ints(local_size)
        if ls_ is None or len(ls_) != len(gs) or any(lv <= 0 for lv in ls_):
            raise BadLaunch(self.name, f"the local size must be positive integers, one per "
                                       f"dimension of the global size {gs}; got {local_size!r}")
        ls = ls_
        if not self._non_uniform and any(g % lv for g, lv in zip(gs, ls)):
            raise BadLaunch(self.name, f"global size {gs} is not a multiple of local size "
                                       f"{ls}; round the global size up")
        for d, (lv, most) in enumerate(zip(ls, self._max_items)):
            if lv > most:
                raise self._refuse(f"local size {ls} has {lv} work-items in dimension {d}; "
                                   f"{dev} allows at most {most} there "
                                   f"(CL_DEVICE_MAX_WORK_ITEM_SIZES {self._max_items}): pass "
                                   f"a smaller local_size", limit=self._max_items[:len(ls)],
                                   requested=ls)
        group = math.prod(ls)
        if group > self._max_group:
            raise self._refuse(f"local size {ls} makes work-groups of {group} work-items; this "
                               f"kernel on {dev} takes at most {self._max_group} "
                               f"(CL_KERNEL_WORK_GROUP_SIZE, device maximum "
                               f"{int(dev._cl_device.max_work_group_size)}): pass a smaller "
                               f"local_size, or local_size=None to let the driver choose",
                               limit=self._max_group, requested=group)
        if reqd is not None and ls + (1,) * (3 - len(ls)) != reqd:
            raise self._refuse(f"local size {ls} differs from the work-group size {reqd} the "
                               f"kernel requires (reqd_work_group_size); pass "
                               f"local_size={reqd[:len(ls)]} or local_size=None",
                               limit=reqd[:len(ls)], requested=ls)
        groups = math.prod(-(-g // lv) for g, lv in zip(gs, ls))
        if groups > lim.max_groups:
            how = (f"even with the largest local size that divides it, {ls}" if picked
                   else f"with local size {ls}")
            fix = ("split the launch, or make the global size a multiple of a larger local "
                   "size" if picked else "pass a larger local_size, or split the launch")
            raise self._refuse(f"global size {gs} makes {groups} work-groups {how}; {dev} "
                               f"runs at most {lim.max_groups} in one launch ({lim.why}): "
                               f"{fix}", limit=lim.max_groups, requested=groups)
        return gs, ls

    def _largest_local_size(self, gs: tuple[int, ...]) -> tuple[int, ...]:
        """A local size for ``gs`` that makes few work-groups: per dimension, from the
        first, the largest divisor of the global size within the device's limit there
        and what the kernel's work-group limit leaves (a search of at most that many
        steps, for launches of more work-items than the driver counts work-groups)."""
        left = self._max_group
        ls = []
        for g, most in zip(gs, self._max_items):
            lv = max(1, min(g, most, left))
            while g % lv:
                lv -= 1
            ls.append(lv)
            left //= lv
        return tuple(ls)



# -- the protocol ---------------------------------------------------------------------------

def _arrays_in(args: Sequence[Any]) -> list[int]:
    """The positions of the array arguments in ``args`` (see :func:`launch`)."""
    return [j for j, v in enumerate(args) if type(v) is ArrayArg or type(v) is tuple]


def record(dev: Device, token: Any, uses: list[Any]) -> None:
    """Step 3: the command ``token`` on ``dev`` was enqueued over ``uses``: each storage
    records it as a reader of its bytes, then as the writer of those it writes (under the
    locks)."""
    if len(uses) == 1:  # (the usual case)
        s, lo, hi, mode = uses[0]
        s.record_launch(dev, token, lo, hi, mode != "r")
        return
    for s, lo, hi, mode in uses:
        if mode == "r":
            s.record_launch(dev, token, lo, hi, False)
    for s, lo, hi, mode in uses:
        if mode != "r":
            s.record_launch(dev, token, lo, hi, True)


def begin(dev: Device, use: Any, part: Any, what: str) -> tuple[Any, Any]:
    """A ``cl_buffer`` block's entry (under its storage's lock): :func:`launch` up to the
    enqueue (the block's code) over ``use`` of ``part`` (``(array, offset, nbytes)``); the
    handle (held until the block ends: ``OpenCLBuffer.raw_done``) and the buffer."""
    (handle,), ((_, buf, _, _),) = launch(dev, None, None, "cl_buffer", (), None, [part],
                                          [use], [use[0]], None, None, (0,), what)
    return handle, buf


def launch(dev: Device, rt: Any, kernel: tuple[Any, threading.Lock] | None, name: str,
           gs: tuple[int, ...], ls: Any, args: Sequence[Any], uses: list[Any],
           storages: list[Any], held: list[Any] | None = None, keep: list[Any] | None = None,
           buffers: Sequence[int] | None = None, what: str = "a launch of kernel",
           rec: type[Launch] | None = Launch, device_op: bool = False) -> Any:
    """Launch ``kernel`` (``(cl.Kernel, the lock its set_args and enqueue take)``) on
    ``dev`` (runtime ``rt``), sizes ``gs`` and ``ls``, with ``args`` (arrays as the module
    says, else what pyopencl packs), over ``uses`` of ``storages`` (each once).  ``held``:
    the storages whose locks are taken (default: all; the others no other thread can reach
    yet); ``buffers``: the arrays' positions in ``args`` (default: found), unset after the
    enqueue; ``what`` (with ``name`` and ``dev``): the launch in an ``InUse`` refusal.  The
    record, a ``rec``, keeps ``keep`` (default: ``storages``) alive in ``dev``'s registry
    (:func:`pending`) until known finished, and is returned; with ``rec=None`` one is made
    only where ``keep`` holds a storage.  Counted in ``ha.stats()`` (``device_op``: as an
    operation of the device path too).  ``kernel=None`` (:func:`begin`): step 1 alone,
    returning the handles of ``args`` and ``(position, buffer, offset, nbytes)`` per part."""
    lock_over = storages if held is None else held
    with lock_over[0].lock if len(lock_over) == 1 else locked(lock_over):
        # -- step 1 (see the module); InUse's message built only where a block is open
        for s, lo, hi, mode in uses:
            coh = s.coh
            if coh is not None:
                if coh.raw_blocks:
                    s.refuse_in_use(dev, lo, hi, what if kernel is None else
                                    f"{what} {name!r} on {dev}", writes=mode != "r")
                if coh.deferred:  # pending expressions this command must come after
                    flush_deferred(s, mode != "r")
        # the buffers, made on first use: under the locks, no free_buffer drops one before
        # the enqueue
        if buffers is None:
            buffers = _arrays_in(args)
        cl_args = list(args)
        parts: list[Any] = []
        for j in buffers:
            v = cl_args[j]
            if type(v) is ArrayArg:
                buf = v.s.buffers.get(dev)
                cl_args[j] = (buf if buf is not None else ensure_buffer(v.x, dev)).buf
                continue
            x, off, nbytes = v  # (array, offset, nbytes): its part of the buffer
            buf = x._s.buffers.get(dev)
            if buf is None:
                buf = ensure_buffer(x, dev)
            # (raw_held: only while a cl_buffer block holds a sub-buffer)
            if buf.raw_held and (hold := buf.held_overlap(off, nbytes)):
                raise BadLaunch(name, f"the array's bytes {off}-{off + nbytes} overlap bytes "
                                      f"{hold[0]}-{hold[1]}, which another open cl_buffer "
                                      f"block is using; end that block first, or use the "
                                      f"same view" if kernel is None else
                                      f"an argument's part of its array (bytes {off}-"
                                      f"{off + nbytes}) overlaps bytes {hold[0]}-{hold[1]}, "
                                      f"which an open hostptr.cl_buffer block is using; "
                                      f"launch after the block, or on the same view")
            parts.append((j, buf, off, nbytes))
        # reads first, with the write flag where the same bytes are written (in place); only
        # the bytes each use covers move; write-only publishes nothing (overwritten whole)
        if len(uses) == 1:  # (the usual case)
            s, lo, hi, mode = uses[0]
            if mode != "w":
                s.prepare_device_read(dev, lo, hi, mode == "rw")
            else:
                s.prepare_device_write(dev, lo, hi)
        else:
            for s, lo, hi, mode in uses:
                if mode != "w":
                    s.prepare_device_read(dev, lo, hi, mode == "rw")
            for s, lo, hi, mode in uses:
                if mode == "w":
                    s.prepare_device_write(dev, lo, hi)
        # the handles, under the locks: a launch can't retire a block's sub-buffer between
        for j, buf, off, nbytes in parts:
            cl_args[j] = buf.handle(off, nbytes) if kernel else buf.handle(off, nbytes, raw=True)
        if kernel is None:  # a cl_buffer block: its code is the enqueue
            return cl_args, parts
        # -- step 2
        k, klock = kernel
        with klock:
            try:
                k.set_args(*cl_args)
                ev = rt.last_event = cl.enqueue_nd_range_kernel(rt.queue, k, gs, ls)
            except cl.Error as e:  # typed; nothing was recorded
                raise BadLaunch(name, f"the driver refused the launch: {e}") from None
            finally:
                # The enqueued command holds its own arguments.  The kernel object must
                # not go on naming these memory objects: it would keep them (and the host
                # memory under them) alive until the next launch, and once released a
                # stale argument crashed NVIDIA's driver.  A NULL buffer argument is valid
                # OpenCL for __global/__constant pointers.
                for j in buffers:
                    k.set_arg(j, None)
        # the sub-buffers remember their newest command: retiring one waits for it
        for _, buf, off, nbytes in parts:
            buf.used(off, nbytes, ev)
        # -- step 3
        run = _Run(ev, name, dev, lock_over)
        if len(uses) == 1:  # record(), inlined (a call less on every launch)
            s, lo, hi, mode = uses[0]
            s.record_launch(dev, run, lo, hi, mode != "r")
        else:
            record(dev, run, uses)
    COUNTERS.launched(device_op)
    # -- step 4
    if rec is None:  # (a record only to keep something alive)
        if not keep:
            return None
        rec = Launch
    out = rec(run, storages if keep is None else keep)
    reg = rt.pending
    (reg if reg is not None else pending(dev)).add(out)
    return out


# -- deferred launches (pending expressions) --------------------------------------------------
#
# A pending expression of the device path (hostarray._compute.fusion) is a launch whose steps
# 1 and 3 run when it is made (under its inputs' locks: InUse, buffers, publishes, the record
# as reader of its inputs and writer of its result), and whose step 2 runs when something
# needs it: its token's wait() (every host write, raw view, free_buffer, other device's
# write waits for the launches using its bytes), an acquire from its device
# (Storage._acquire), another command on its queue over its bytes (launch(), above), or
# the device path itself (a consumer it does not fuse into, an expression grown too large).

PENDING, FLUSHED, CANCELLED, FAILED = 0, 1, 2, 3
_QUEUED = int(cl.command_execution_status.QUEUED)


class Deferred(_Run):
    """The token of a deferred launch (see above): in the storages' ``inflight`` from the
    start, enqueued by :meth:`flush`.

    ``make()`` (given by the device path) returns what the enqueue needs: ``((kernel,
    its lock), global size, local size, arguments, positions of the buffer arguments)``;
    it is called once, at the flush.  ``out`` is a weak reference to the storage it
    writes: once that storage is gone nobody can see the result, and the launch never
    runs (``CANCELLED``).  ``keep``: the storages its record keeps alive once enqueued."""

    __slots__ = ("state", "make", "out", "keep", "code", "payload", "_flushing")

    def __init__(self, kernel: str, device: Device, storages: list[Any], out: Any,
                 keep: list[Any]) -> None:
        _Run.__init__(self, None, kernel, device, storages)
        self.state = PENDING
        self.make: Any = None
        self.out = weakref.ref(out, self._gone)
        self.keep: list[Any] | None = keep
        self.code = 0
        self.payload: Any = None  # what the device path knows of it (its program)
        self._flushing = threading.RLock()  # (re-entrant: see fusion.in_place)

    def cancel(self) -> None:
        """The storage it writes is going (its finalizer, before the pool may hand the
        memory out again): it never runs; one flushing meanwhile is waited for (it is
        enqueued first, so the memory's next use comes after it on the in-order queue)."""
        with self._flushing:
            self._gone(None)

    def _gone(self, _: Any) -> None:
        # (a weak reference's callback: may run inside any allocation, on any thread; never
        # blocks: a flush holds the storage itself, so none is under way for a dead one)
        if self.state == PENDING:
            self.state = CANCELLED
            self.make = self.keep = None

    def writes(self, s: Any) -> bool:
        """Whether this launch writes storage ``s``."""
        return self.out() is s

    def flush(self) -> None:
        """Enqueue the launch now if it is still pending (else nothing)."""
        if self.state != PENDING:
            return
        with self._flushing:
            if self.state != PENDING:
                return
            out = self.out()
            if out is None:
                self._gone(None)
                return
            dev = self.device
            rt = dev._runtime or dev.runtime
            try:
                (k, klock), gs, ls, args, buffers = self.make()
                with klock:
                    try:
                        k.set_args(*args)
                        ev = cl.enqueue_nd_range_kernel(rt.queue, k, gs, ls)
                    finally:
                        for j in buffers:  # (see launch(): the kernel must not keep them)
                            k.set_arg(j, None)
            except Exception as e:  # reported as the launch's failure, at its next wait
                code = getattr(e, "code", None)
                self.code = code if isinstance(code, int) and code < 0 else -1
                self.state = FAILED
                self.make = self.keep = None
                return
            rt.last_event = self.event = ev
            keep, self.make, self.keep = self.keep, None, None
            self.state = FLUSHED
            COUNTERS.launched()
            if keep:  # (no prune here: a flush may run under any storage's lock)
                reg = rt.pending
                (reg if reg is not None else pending(dev)).launches.append(Launch(self, keep))
            del out

    def wait(self) -> None:
        """(The token protocol.)  Enqueue, then wait."""
        self.flush()
        if self.state == FLUSHED:
            _Run.wait(self)

    @property
    def command_execution_status(self) -> int:
        st = self.state
        if st == FLUSHED:
            return _Run.command_execution_status.fget(self)  # type: ignore[attr-defined]
        if st == PENDING:
            return _QUEUED
        return 0 if st == CANCELLED else self.code

    def finished(self) -> bool:
        """Whether nothing is left for this launch to do (run, or cancelled)."""
        st = self.state
        if st == CANCELLED:
            return True
        if st != FLUSHED:
            return False
        try:
            return int(self.event.command_execution_status) <= _COMPLETE
        except cl.Error:
            return False


def flush_deferred(s: Any, writes: bool) -> None:
    """Before a command over bytes of storage ``s`` (under its lock): enqueue the deferred
    launches that write ``s`` (and, where the command ``writes``, those that read it too),
    and forget those with nothing left to do."""
    coh = s.coh
    done = []
    tokens = tuple(coh.deferred)
    for t in tokens:
        if t.state == PENDING and (writes or t.writes(s)):
            t.flush()
        st = t.state
        if st == CANCELLED or (st == FLUSHED and len(tokens) >= 4 and t.finished()):
            done.append(t)
    if done:
        coh.forget_deferred(done)


def defer(dev: Device, token: Deferred, reads: Sequence[ArrayArg], out: Any, nbytes: int,
          check: Any = None) -> bool:
    """Steps 1 and 3 of :func:`launch` for the deferred launch ``token`` (its ``make`` set),
    which reads ``reads`` and writes bytes ``[0, nbytes)`` of the new storage ``out`` (a
    pooled one nobody else reaches: no lock; ``None``: the token is recorded there
    already).  The buffers of ``reads`` are made (its ``make`` finds them there).
    ``check()``, under the locks, may refuse (``False``, nothing done): what the launch
    reads is no longer what its caller saw."""
    storages = list({id(v.s): v.s for v in reads}.values())
    with storages[0].lock if len(storages) == 1 else locked(storages):
        if check is not None and not check():
            return False
        for v in reads:
            s = v.s
            coh = s.coh
            if coh is not None:
                if coh.raw_blocks:
                    s.refuse_in_use(dev, v.lo, v.hi, "the device operation", writes=False)
                if coh.deferred:
                    flush_deferred(s, False)
        for v in reads:
            if dev not in v.s.buffers:
                ensure_buffer(v.x, dev)
        for v in reads:
            v.s.prepare_device_read(dev, v.lo, v.hi, False)
        for s in storages:
            s.coh.deferred_launch(token)
        if out is not None:
            out.coh.deferred_launch(token)
        for v in reads:
            v.s.record_launch(dev, token, v.lo, v.hi, False)
        if out is not None:
            out.record_launch(dev, token, 0, nbytes, True)
    return True
