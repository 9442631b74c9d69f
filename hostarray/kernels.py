"""OpenCL kernels on HostPtrArrays: build, cache, launch with automatic sync.

``ha.Program(source, device=dev).NAME(global_size, *args)`` publishes what
the device must see, enqueues, and records the launch so that the host
acquires lazily, when it next looks.  Each pointer argument's access comes
from the kernel's own signature (``const`` means read, otherwise
read-write) unless wrapped in :func:`read`, :func:`write` or
:func:`readwrite`.
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
from typing import Any, SupportsIndex

import numpy as np
import pyopencl as cl

from ._array import HostPtrArray
from ._devices import Device
from ._devices import device as _parse_device
from ._devices import devices as _devices
from ._sharing import check_storage, ensure_buffer, view_offset
from ._stats import COUNTERS
from ._storage import AFTER_DEVICE_SYNC, locked
from .backends.opencl import build_program, sub_range
from .errors import BadLaunch, DeviceUnavailable, LaunchFailed, Refusal, Refused

__all__ = ["Program", "Kernel", "Launch", "read", "write", "readwrite"]

READ, WRITE, READWRITE = "read", "write", "readwrite"


class Access:
    """An array argument with an explicit access mode (see :func:`read`)."""

    __slots__ = ("array", "mode")

    def __init__(self, array: HostPtrArray, mode: str) -> None:
        if not isinstance(array, HostPtrArray):
            raise TypeError(f"ha.{mode}() takes a HostPtrArray, not {type(array).__name__}")
        self.array = array
        self.mode = mode


def read(x: HostPtrArray) -> Access:
    """Mark a kernel argument read-only: published before, host stays current.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.read(ha.zeros(3)).mode
    'read'
    """
    return Access(x, READ)


def write(x: HostPtrArray) -> Access:
    """Mark a kernel argument write-only: nothing is published before the launch.

    The kernel must write every element the host will read afterwards.

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.write(ha.zeros(3)).mode
    'write'
    """
    return Access(x, WRITE)


def readwrite(x: HostPtrArray) -> Access:
    """Mark a kernel argument read-write (the default for non-``const`` pointers).

    Examples
    --------
    >>> import hostarray as ha
    >>> ha.readwrite(ha.zeros(3)).mode
    'readwrite'
    """
    return Access(x, READWRITE)


_SCALAR_TYPES = {
    "char": np.int8, "uchar": np.uint8, "unsigned char": np.uint8,
    "short": np.int16, "ushort": np.uint16, "unsigned short": np.uint16,
    "int": np.int32, "uint": np.uint32, "unsigned int": np.uint32,
    "long": np.int64, "ulong": np.uint64, "unsigned long": np.uint64,
    "float": np.float32, "double": np.float64, "half": np.float16,
    "bool": np.int32, "size_t": np.uint64,
}


# OpenCL C scalar types a pointer argument may point to: (family, bytes per element)
_C_SCALARS = {
    "char": ("int", 1), "uchar": ("int", 1), "short": ("int", 2), "ushort": ("int", 2),
    "int": ("int", 4), "uint": ("int", 4), "long": ("int", 8), "ulong": ("int", 8),
    "half": ("float", 2), "float": ("float", 4), "double": ("float", 8),
}
_ADDRESS_SIZED = ("size_t", "ptrdiff_t", "intptr_t", "uintptr_t")
_VECTOR = re.compile(r"^([a-z]+?)(2|3|4|8|16)$")
_QUALIFIERS = re.compile(r"\b(?:const|volatile|restrict|__global|global|__constant|constant)\b")
_NUMERIC = [np.dtype(c) for c in "?bBhHiIlLqQefdFD"]
# what to tell the user: the numpy dtype for a C type, and the C type for a dtype
_DTYPE_FOR_C = {"char": "int8", "uchar": "uint8", "short": "int16", "ushort": "uint16",
                "int": "int32", "uint": "uint32", "long": "int64", "ulong": "uint64",
                "half": "float16", "float": "float32", "double": "float64"}
_C_FOR_DTYPE = {"bool": "uchar", "int8": "char", "uint8": "uchar", "int16": "short",
                "uint16": "ushort", "int32": "int", "uint32": "uint", "int64": "long",
                "uint64": "ulong", "float16": "half", "float32": "float", "float64": "double",
                "complex64": "float2", "complex128": "double2"}


def _scalar_of(pointee: str) -> str:
    """The OpenCL C scalar type name of a pointer's element type, as declared
    (``"uint"`` for ``unsigned int``, ``"float"`` for ``float4``); other names as they are."""
    t = " ".join(_QUALIFIERS.sub(" ", pointee).split())
    if t.startswith("unsigned "):
        t = "u" + t[9:]
    elif t.startswith("signed "):
        t = t[7:]
    t = {"unsigned": "uint", "long long": "long", "ulong long": "ulong"}.get(t, t)
    m = _VECTOR.match(t)
    if m and m.group(1) in _C_SCALARS:
        return m.group(1)
    return t


def _element_dtypes(pointee: str, address_bits: int) -> frozenset[np.dtype] | None:
    """numpy dtypes (native byte order) an array may have to be passed as a pointer to
    ``pointee`` (the argument's type name without ``*``), or ``None`` when any may
    (a struct, a typedef hostarray can't see through, ``void``).

    The element size must match; integers of either signedness are taken for one
    another and ``bool`` for ``char``/``uchar``; a complex dtype passes for its
    component type (``complex64`` for ``float``, ``float2``...).

    Examples
    --------
    >>> from hostarray.kernels import _element_dtypes
    >>> sorted(d.name for d in _element_dtypes("float4", 64))
    ['complex64', 'float32']
    >>> sorted(d.name for d in _element_dtypes("unsigned char", 64))
    ['bool', 'int8', 'uint8']
    >>> _element_dtypes("struct pair", 64) is None
    True
    """
    base = _scalar_of(pointee)
    if base in _ADDRESS_SIZED:
        family, size = "int", address_bits // 8
    elif base in _C_SCALARS:
        family, size = _C_SCALARS[base]
    else:
        return None
    if family == "int":
        ok = [d for d in _NUMERIC if d.kind in "iu" and d.itemsize == size]
        if size == 1:
            ok.append(np.dtype(bool))
    else:
        ok = [d for d in _NUMERIC if (d.kind == "f" and d.itemsize == size)
              or (d.kind == "c" and d.itemsize == 2 * size)]
    return frozenset(ok)


class _Run:
    """What the storages of a launch track for it (their in-flight token).

    Holds the event, the kernel's name and the device, not the arrays: a
    storage refers to its tokens, so a token that referred back to storages
    would make a reference cycle.  ``wait()`` and ``command_execution_status``
    are the token protocol :class:`~hostarray._storage.Storage` relies on;
    :meth:`claim_report` makes a failure reported once, by whichever of
    :meth:`Launch.wait` or a host access meets it first."""

    __slots__ = ("event", "kernel", "device", "reported")

    def __init__(self, event: Any, kernel: str, device: Device) -> None:
        self.event = event
        self.kernel = kernel
        self.device = device
        self.reported = False

    def wait(self) -> None:
        self.event.wait()

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


def _scalar(value: Any, dtype: np.dtype) -> Any:
    """``value`` as a scalar of ``dtype``, or ``TypeError``/``OverflowError``: never
    numpy's silent wrap-around (``np.int32(np.int64(2**40))`` is 0)."""
    if isinstance(value, (bool, np.bool_)) or value is None or \
            isinstance(value, (str, bytes, complex, np.complexfloating)):
        if isinstance(value, (bool, np.bool_)) and dtype.kind in "iub":
            return dtype.type(bool(value))
        raise TypeError(f"{value!r} is not a {dtype.name} value")
    if dtype.kind in "iu":
        if isinstance(value, (float, np.floating)):
            if not float(value).is_integer():
                raise TypeError(f"{value!r} is not an integer; round it first")
            value = int(value)
        n = operator.index(value)
        info = np.iinfo(dtype)
        if not info.min <= n <= info.max:
            raise OverflowError(f"{n} is out of range [{info.min}, {info.max}]")
        return dtype.type(n)
    f = float(value)  # ints, floats, numpy scalars (TypeError for anything else)
    if np.isfinite(f) and abs(f) > float(np.finfo(dtype).max):
        raise OverflowError(f"{value!r} is out of range for {dtype.name}")
    return dtype.type(f)


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


class Launch:
    """A kernel launch in flight.  Nothing blocks until the host looks at the data.

    Attributes
    ----------
    event : pyopencl.Event
        The launch's OpenCL event.
    kernel : str
        The kernel's name.
    device : Device
        Where it runs.

    Examples
    --------
    >>> import hostarray as ha
    >>> gpu = ha.devices()[-1]
    >>> if gpu.framework == "opencl":
    ...     prg = ha.Program("__kernel void one(__global float *x) { x[get_global_id(0)] = 1; }",
    ...                      device=gpu)
    ...     x = ha.zeros(8, dtype=ha.float32)
    ...     launch = prg.one(x.shape, x)       # returns at once
    ...     launch.wait()                      # only to time it: a host read waits by itself
    ...     assert launch.done and launch.kernel == "one" and float(x[0]) == 1.0
    """

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
            if run.command_execution_status > cl.command_execution_status.COMPLETE:
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
            _after_device_sync(run.device)

    @property
    def done(self) -> bool:
        """Whether the launch has finished (or failed: a negative status)."""
        return self._run.command_execution_status <= cl.command_execution_status.COMPLETE

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

    def add(self, launch: Launch) -> None:
        with self.lock:
            self.added += 1
            if self.added >= self.PRUNE_EVERY:
                self.added = 0
                self._prune()
            self.launches.append(launch)

    def _prune(self) -> None:
        q = self.launches
        while q:
            head = q[0]
            if head._keep:
                # Launch.done, inlined (on every launch): finished, or failed (a negative
                # status, or an error asking for it)
                try:
                    if int(head._run.event.command_execution_status) > _COMPLETE:
                        return
                except cl.Error:
                    pass
            q.popleft()._keep = []

    def prune(self) -> None:
        with self.lock:
            self._prune()


_PENDING: dict[Device, _Pending] = {}
_COMPLETE = int(cl.command_execution_status.COMPLETE)


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
    for pending in _PENDING.values():
        pending.launches.clear()


def _after_device_sync(key: Any) -> None:
    # The host just synchronised with device ``key`` (an in-order queue: every
    # launch issued there before is finished): let go of the memory they kept.
    pending = _PENDING.get(key)
    if pending is not None:
        pending.prune()
    rt = getattr(key, "_runtime", None)
    if rt is not None:
        rt.sweep()  # buffers that died while launches ran


AFTER_DEVICE_SYNC.append(_after_device_sync)


class Kernel:
    """One kernel of a :class:`Program`; call it to launch.

    ``kernel(global_size, *args, local_size=None)``: ``global_size`` is an
    int or a tuple; array arguments are HostPtrArrays (optionally wrapped in
    :func:`read`/:func:`write`/:func:`readwrite`); scalars are converted to
    the kernel's declared type.

    Before anything is published or enqueued, a launch is checked against
    the kernel's declared pointer element types, the device's local memory
    and the kernel's and the device's work-group limits (read once, here);
    a refused launch raises :class:`~hostarray.hostptr.BadLaunch` and
    changes nothing.

    Examples
    --------
    >>> import hostarray as ha
    >>> gpu = ha.devices()[-1]
    >>> if gpu.framework == "opencl":
    ...     prg = ha.Program("__kernel void axpy(const float a, __global const float *x, "
    ...                      "__global float *y) { size_t i = get_global_id(0); "
    ...                      "y[i] += a * x[i]; }", device=gpu)
    ...     x, y = ha.ones(16, dtype=ha.float32), ha.zeros(16, dtype=ha.float32)
    ...     _ = prg.axpy(x.shape, 2.0, x, y)   # prg.axpy is a Kernel
    ...     assert float(ha.sum(y)) == 32.0
    """

    def __init__(self, program: Program, name: str) -> None:
        self.program = program
        self.name = name
        self.device = program.device
        self._cl = cl.Kernel(program._cl, name)
        self._lock = threading.Lock()  # set_arg + enqueue must not interleave
        n = self._cl.num_args
        self.args: list[tuple[str, str, str | None]] = []  # (name, kind, access/scalar type)
        # per pointer argument: (declared type, element dtypes it takes, or None: any)
        self._pointee: dict[int, tuple[str, frozenset[np.dtype] | None]] = {}
        cl_dev = self.device._cl_device
        arg_info: Any = self._cl.get_arg_info  # pyopencl's stubs: object
        for i in range(n):
            addr = arg_info(i, cl.kernel_arg_info.ADDRESS_QUALIFIER)
            tq = arg_info(i, cl.kernel_arg_info.TYPE_QUALIFIER)
            full = arg_info(i, cl.kernel_arg_info.TYPE_NAME).strip()
            tname = full.rstrip("*")
            aname = arg_info(i, cl.kernel_arg_info.NAME)
            if addr in (cl.kernel_arg_address_qualifier.GLOBAL,
                        cl.kernel_arg_address_qualifier.CONSTANT):
                const = bool(tq & cl.kernel_arg_type_qualifier.CONST) or \
                    addr == cl.kernel_arg_address_qualifier.CONSTANT
                self.args.append((aname, "buffer", READ if const else READWRITE))
                self._pointee[i] = (" ".join(full.split()),
                                    _element_dtypes(tname, int(cl_dev.address_bits)))
            elif addr == cl.kernel_arg_address_qualifier.LOCAL:
                self.args.append((aname, "local", None))
            else:
                self.args.append((aname, "scalar", tname.strip()))
        # buffer arguments are unset after each enqueue (see __call__)
        self._buffer_args = tuple(self._pointee)
        # what __call__ walks: (index, name, kind, access/scalar type, declared type,
        # dtypes taken)
        self._spec = [(i, *a, *self._pointee.get(i, ("", None)))
                      for i, a in enumerate(self.args)]
        self._nargs = n
        # per argument position: the last array view passed there and its checked offset in
        # its storage's buffer, ``(weakref to the view, weakref to its storage, offset)``
        # (weak: the kernel must not keep host memory alive)
        self._views: list[tuple[Any, Any, int] | None] = [None] * n
        # the last launch's array arguments, checked (see _repeat): a launch passing the very
        # same arrays again skips their checks
        self._memo: tuple[Any, ...] | None = None
        self._rt = self.device.runtime  # created once per device, never replaced
        self._pending = _PENDING.setdefault(self.device, _Pending())
        self._top = 2 ** int(cl_dev.address_bits)  # global sizes must fit a size_t
        # scalars declared: pyopencl packs them directly (about 6 us less per scalar and
        # launch than its untyped path, which tries one conversion after another)
        self._cl.set_scalar_arg_dtypes([_SCALAR_TYPES.get(info)  # type: ignore[arg-type]
                                        if kind == "scalar" else None
                                        for _, kind, info in self.args])
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

    def __repr__(self) -> str:
        sig = ", ".join(f"{k}:{n}" for n, k, _ in self.args)
        return f"<Kernel {self.name}({sig}) on {self.device}>"

    def _refuse(self, why: str, **data: Any) -> BadLaunch:
        """A :class:`BadLaunch` carrying ``data`` (``argument``, ``limit``...)."""
        return BadLaunch(self.name, why, **data)

    def _type_mismatch(self, aname: str, declared: str, dtype: np.dtype) -> BadLaunch:
        base = _scalar_of(declared.rstrip("*"))
        size = _C_SCALARS[base][1] if base in _C_SCALARS else \
            int(self.device._cl_device.address_bits) // 8
        held = dtype.name if dtype.isnative else f"{dtype.str} (non-native byte order)"
        fix = []
        if base in _DTYPE_FOR_C:
            fix.append(f"pass ha.astype(x, ha.{_DTYPE_FOR_C[base]})")
        if dtype.isnative and dtype.name in _C_FOR_DTYPE:
            fix.append(f"declare it {_C_FOR_DTYPE[dtype.name]}*")
        return self._refuse(f"argument {aname!r} is {declared} but the array holds {held}: "
                            f"the kernel would read and write its bytes as {size}-byte {base} "
                            f"elements; {' or '.join(fix) or 'pass an array of that type'}",
                            argument=aname, declared=declared, dtype=dtype)

    def _sizes(self, global_size: Any, local_size: Any) -> tuple[tuple[int, ...], Any]:
        if local_size is None and self._reqd is None:
            # the common case, accepted at once: a positive int (x.size) or 1 to 3 of them
            # (x.shape) that fit the device's size_t; anything else takes the checks below
            top = self._top
            t = type(global_size)
            if t is int:
                if 0 < global_size < top:
                    return (global_size,), None
            elif t is tuple and 0 < len(global_size) <= 3:
                for g in global_size:
                    if type(g) is not int or not 0 < g < top:
                        break
                else:
                    return global_size, None
        gs = _ints(global_size)  # ints, not int(): a float size is refused, not truncated
        if not gs or any(g <= 0 for g in gs):
            raise BadLaunch(self.name, f"global size {global_size!r} must be positive ints")
        if len(gs) > 3:  # OpenCL's limit; refused here, before anything is published
            raise BadLaunch(self.name, f"global size {gs} has {len(gs)} dimensions; OpenCL "
                                       f"kernels take 1 to 3: flatten the index space")
        top = self._top
        if any(g >= top for g in gs):  # a size_t of the device; refused before publishing
            raise self._refuse(f"global size {gs} does not fit the device's "
                               f"{top.bit_length() - 1}-bit size_t", limit=top - 1,
                               requested=gs)
        reqd = self._reqd
        if local_size is None:
            if reqd is None:
                return gs, None
            need = max(d + 1 for d, r in enumerate(reqd) if r != 1)
            if need > len(gs):
                raise self._refuse(f"it requires work-groups of {reqd} "
                                   f"(reqd_work_group_size) but the global size {gs} has "
                                   f"{len(gs)} dimension(s); launch over {need} dimensions",
                                   limit=reqd, requested=gs)
            local_size = reqd[:len(gs)]  # the only size the driver takes
        ls_ = _ints(local_size)
        if ls_ is None:
            raise BadLaunch(self.name, f"local size {local_size!r} must be positive ints, one "
                                       f"per dimension of the global size {gs}")
        ls = ls_
        if len(ls) != len(gs) or any(lv <= 0 or g % lv for g, lv in zip(gs, ls)):
            raise BadLaunch(self.name, f"global size {gs} is not a multiple of local size "
                                       f"{ls}; round the global size up")
        dev = self.device
        for d, (lv, most) in enumerate(zip(ls, self._max_items)):
            if lv > most:
                raise self._refuse(f"local size {ls} has {lv} work-items in dimension {d}; "
                                   f"{dev} allows at most {most} there "
                                   f"(CL_DEVICE_MAX_WORK_ITEM_SIZES {self._max_items}): pass "
                                   f"a smaller local_size", limit=most, requested=lv)
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
                               limit=reqd, requested=ls)
        return gs, ls

    def __call__(self, global_size: SupportsIndex | Sequence[SupportsIndex], *args: Any,
                 local_size: SupportsIndex | Sequence[SupportsIndex] | None = None) -> Launch:
        dev = self.device
        rt = self._rt
        if rt.graveyard:
            rt.sweep()
        if len(args) != self._nargs:
            raise BadLaunch(self.name, f"it takes {len(self.args)} arguments "
                                       f"({', '.join(a[0] for a in self.args)}), got {len(args)}")
        gs, ls = self._sizes(global_size, local_size)
        again = self._repeat(args)
        if again is not None:
            values, storages = again
        else:
            values, storages = self._checked(dev, args)
        # one storage: its lock alone; others: in one global order (no deadlock)
        with storages[0][0].lock if len(storages) == 1 else locked(u[0] for u in storages):
            run = self._enqueue(dev, rt, gs, ls, values, storages)
        COUNTERS.launched()
        launch = Launch(run, [storages[0][0]] if len(storages) == 1 else
                        [u[0] for u in storages])
        self._pending.add(launch)
        return launch

    def _checked(self, dev: Device, args: tuple[Any, ...]
                 ) -> tuple[list[Any], list[list[Any]]]:
        """Every argument checked (the typed refusals), as ``values`` (``(array, offset,
        nbytes)`` per pointer) and the storages with the spans each launch argument uses;
        remembered for :meth:`_repeat`."""
        values: list[Any] = []
        uses: dict[int, list[Any]] = {}  # id(storage) -> [storage, spans (lo, hi, mode)]
        local_bytes = 0
        views = self._views
        for (i, aname, kind, info, declared, takes), arg in zip(self._spec, args):
            if kind == "buffer":
                mode = info
                if isinstance(arg, Access):
                    if mode == READ and arg.mode == WRITE:
                        # write-only skips the publish: the kernel would read stale bytes,
                        # and the host would take them back as the array's new contents
                        raise self._refuse(
                            f"argument {aname!r} is declared const: the kernel reads it and "
                            f"can't write it, so ha.write() (no publish before the launch) "
                            f"would hand it stale bytes; pass the array itself or ha.read(x)",
                            argument=aname)
                    mode, arg = arg.mode, arg.array
                if not isinstance(arg, HostPtrArray):
                    raise BadLaunch(self.name, f"argument {aname!r} is a pointer: pass a "
                                               f"HostPtrArray, not {type(arg).__name__}",
                                               argument=aname)
                where = arg._device
                if where is not dev and where != dev and where.framework == "opencl":
                    raise BadLaunch(self.name, f"argument {aname!r} is on {arg._device}, the "
                                               f"kernel on {dev}; use x.to_device({str(dev)!r})",
                                               argument=aname)
                a, s = arg._a, arg._s
                if takes is not None and a.dtype not in takes:
                    raise self._type_mismatch(aname, declared, a.dtype)
                if mode != READ and not a.flags.writeable:
                    raise BadLaunch(self.name, f"argument {aname!r} is read-only but the "
                                               f"kernel may write it; pass ha.read(x) or a copy",
                                               argument=aname)
                # one contiguous range at a sub-buffer origin (NotHostBacked / Refused),
                # over memory the device may use: refused now, before any buffer is created.
                # The offset depends only on the view and its storage (an ndarray's address,
                # shape and strides stay as created): the same pair passed here again reuses it
                seen = views[i]
                if seen is not None and seen[0]() is a and seen[1]() is s:
                    off = seen[2]
                else:
                    off = view_offset(arg, dev, f"argument {aname!r} of kernel {self.name!r}")
                    views[i] = (weakref.ref(a), weakref.ref(s), off)
                if dev not in s.buffers:
                    check_storage(s, dev, id(arg))
                nbytes = a.nbytes
                values.append((arg, off, nbytes))  # its buffer once every arg is checked
                u = uses.get(id(s))
                if u is None:
                    uses[id(s)] = [s, [(off, off + nbytes, mode)]]
                    continue
                span = (off, off + nbytes, mode != READ)
                for lo, hi, other_mode in u[1]:
                    if (lo, hi) == span[:2] or hi <= span[0] or span[1] <= lo:
                        continue
                    other_writes = other_mode != READ
                    # a buffer and an overlapping sub-buffer of it in one launch: OpenCL
                    # leaves that undefined when either is written (and NVIDIA crashes)
                    if other_writes or span[2]:
                        raise BadLaunch(self.name, f"argument {aname!r} overlaps another "
                                                   f"argument's part of the same array and one "
                                                   f"of them is written; pass the whole array "
                                                   f"once with an offset argument, or a copy",
                                                   argument=aname)
                    # both only read: the whole array with a part is defined, and so are
                    # parts that share one sub-buffer; two different overlapping sub-buffers
                    # can't be live at once (OpenCLBuffer.handle retires one for the other)
                    if 0 < hi - lo < s.nbytes and 0 < nbytes < s.nbytes and \
                            sub_range(lo, hi - lo, dev.alignment, s.nbytes) != \
                            sub_range(off, nbytes, dev.alignment, s.nbytes):
                        raise self._refuse(
                            f"argument {aname!r} and another argument are overlapping parts of "
                            f"the same array (bytes {span[0]}-{span[1]} and {lo}-{hi}): they "
                            f"would need two overlapping sub-buffers, which hostarray never "
                            f"keeps at once; pass the whole array once with an offset "
                            f"argument, or a copy of one part", argument=aname)
                u[1].append((off, off + nbytes, mode))
            elif kind == "local":
                if not isinstance(arg, cl.LocalMemory):
                    raise BadLaunch(self.name, f"argument {aname!r} is __local: pass "
                                               f"pyopencl.LocalMemory(nbytes)", argument=aname)
                if arg.size <= 0:  # the driver refuses it (CL_INVALID_ARG_SIZE)
                    raise self._refuse(f"argument {aname!r} is __local with {arg.size} bytes; "
                                       f"pass pyopencl.LocalMemory(nbytes) with nbytes >= 1",
                                       argument=aname, requested=arg.size, limit=1)
                local_bytes += arg.size
                values.append(arg)
            else:
                values.append(self._scalar_arg(aname, info, arg))
        if local_bytes + self._static_local > self._local_limit:
            # checked here: a driver may abort the process instead of refusing (PoCL does)
            asked = " plus ".join(
                ([f"its __local arguments ask for {local_bytes} bytes"] if local_bytes else [])
                + ([f"it declares {self._static_local} bytes of __local arrays itself"]
                   if self._static_local else []))
            raise self._refuse(f"{asked}; {dev} has {self._local_limit} bytes of local memory "
                               f"per work-group (CL_DEVICE_LOCAL_MEM_SIZE): pass smaller "
                               f"pyopencl.LocalMemory sizes or shrink the kernel's __local "
                               f"arrays", limit=self._local_limit,
                               requested=local_bytes + self._static_local)
        self._remember(args, values, uses)
        return values, list(uses.values())

    def _scalar_arg(self, aname: str, info: Any, arg: Any) -> Any:
        """``arg`` as the kernel's scalar argument ``aname`` of C type ``info``, or the
        typed refusal."""
        if isinstance(arg, (HostPtrArray, Access, np.ndarray)):
            raise BadLaunch(self.name, f"argument {aname!r} is a {info} scalar, not an array",
                            argument=aname)
        t = _SCALAR_TYPES.get(info)
        if t is None:
            raise BadLaunch(self.name, f"argument {aname!r} has type {info}, which "
                                       f"hostarray can't pass; use a scalar or pointer",
                                       argument=aname)
        try:
            return _scalar(arg, np.dtype(t))
        except (TypeError, ValueError, OverflowError) as e:
            raise self._refuse(f"argument {aname!r} needs a {info}: {e}",
                               argument=aname, declared=info) from None

    def _repeat(self, args: tuple[Any, ...]) -> tuple[list[Any], list[list[Any]]] | None:
        """``(values, storages)`` as the checks of ``__call__`` would give them, where every
        pointer argument is the very array the last checked launch passed there (a plain
        HostPtrArray, still with a buffer on the device) and there is no ``__local``
        argument; else ``None``.  What those checks read can't have changed: an array's
        device and type stay as created, and its view (memory, flags) unless
        :func:`hostarray.hostptr.install` replaced it, which the view's identity tells;
        scalars are converted again."""
        memo = self._memo
        if memo is None:
            return None
        refs, spans, kinds = memo
        dev = self.device
        values: list[Any] = []
        for arg, ref, kind in zip(args, refs, kinds):
            if ref is None:
                values.append(self._scalar_arg(kind[0], kind[1], arg))
                continue
            # the same array over the same view (hostptr.install gives an array new memory)
            # (a dead array's weak reference gives None: so might the argument)
            same = ref[0]()
            if same is None or arg is not same or arg._a is not ref[1]() or \
                    dev not in arg._s.buffers:
                return None
            values.append((arg, ref[2], ref[3]))
        return values, [[args[j]._s, s] for j, s in spans]

    def _remember(self, args: tuple[Any, ...], values: list[Any],
                  uses: dict[int, list[Any]]) -> None:
        """Keep what :meth:`_repeat` needs of this checked launch (weakly: the kernel must
        not keep host memory alive)."""
        refs: list[Any] = []
        kinds: list[Any] = []
        first: dict[int, int] = {}  # id(storage) -> the position of its first argument
        for j, ((_, aname, kind, info, _, _), arg, v) in enumerate(zip(self._spec, args,
                                                                       values)):
            if kind == "local" or (kind == "buffer" and type(arg) is not HostPtrArray):
                self._memo = None
                return
            if kind == "buffer":
                refs.append((weakref.ref(arg), weakref.ref(arg._a), v[1], v[2]))
                kinds.append(None)
                first.setdefault(id(arg._s), j)
            else:
                refs.append(None)
                kinds.append((aname, info))
        self._memo = (refs, [(first[k], u[1]) for k, u in uses.items()], kinds)

    def _enqueue(self, dev: Device, rt: Any, gs: tuple[int, ...], ls: Any, values: list[Any],
                 storages: list[list[Any]]) -> _Run:
        """The checked launch, under the locks of its storages: publish what the device
        lacks, enqueue, record.  ``values`` holds ``(array, offset, nbytes)`` per pointer
        argument, the value itself for the others."""
        # buffers looked up (created on first use) under the locks: another thread's
        # free_buffer can't drop one between here and the enqueue
        args: list[Any] = []
        for v in values:
            if type(v) is tuple:
                x = v[0]
                buf = x._s.buffers.get(dev)
                if buf is None:
                    buf = ensure_buffer(x, dev)
                args.append((buf, v[1], v[2]))
            else:
                args.append(v)
        # a sub-buffer an open hostptr.cl_buffer block holds can't be retired for this
        # launch's overlapping one: refused before anything moves
        for v in args:
            if type(v) is tuple and (held := v[0].held_overlap(v[1], v[2])):
                raise BadLaunch(self.name, f"an argument's part of its array (bytes "
                                           f"{v[1]}-{v[1] + v[2]}) overlaps bytes "
                                           f"{held[0]}-{held[1]}, which an open "
                                           f"hostptr.cl_buffer block is using; launch "
                                           f"after the block, or on the same view")
        # an access that conflicts with an open cl_buffer block (a write, where the block
        # is on another device; Coherence.raw_block_in_the_way): refused before anything
        # moves (InUse)
        for s, spans in storages:
            if s.coh is not None and s.coh.raw_blocks:
                what = f"a launch of kernel {self.name!r} on {dev}"
                for lo, hi, mode in spans:
                    s.refuse_in_use(dev, lo, hi, what, writes=mode != READ)
        # only the bytes each argument covers move; write-only (ha.write) publishes
        # nothing: the kernel overwrites its whole range
        for s, spans in storages:
            for lo, hi, mode in spans:
                if mode != WRITE:
                    s.prepare_device_read(dev, lo, hi, mode != READ)
                else:
                    s.prepare_device_write(dev, lo, hi)
        cl_args = [v[0].handle(v[1], v[2]) if type(v) is tuple else v for v in args]
        k = self._cl
        with self._lock:
            try:
                k.set_args(*cl_args)
                ev = rt.last_event = cl.enqueue_nd_range_kernel(rt.queue, k, gs, ls)
            except cl.Error as e:
                raise BadLaunch(self.name, f"the driver refused the launch: {e}") from None
            finally:
                # The enqueued command holds its own arguments.  The kernel object
                # must not go on naming these memory objects: it would keep them
                # (and the host memory under them) alive until the next launch, and
                # once released a stale argument crashed NVIDIA's driver.  A NULL
                # buffer argument is valid OpenCL for __global/__constant pointers.
                for j in self._buffer_args:
                    k.set_arg(j, None)
        # the sub-buffers remember their newest command: retiring one waits for it
        for v in args:
            if type(v) is tuple:
                v[0].used(v[1], v[2], ev)
        run = _Run(ev, self.name, dev)
        for s, spans in storages:
            for lo, hi, mode in spans:
                if mode == READ:
                    s.record_launch(dev, run, lo, hi, False)
            for lo, hi, mode in spans:
                if mode != READ:
                    s.record_launch(dev, run, lo, hi, True)
        return run


class Program:
    """An OpenCL program built for one device; its kernels are attributes.

    Programs are cached per (source, device, options): building the same
    source twice costs nothing.

    Parameters
    ----------
    source : str
        OpenCL C source.
    device : Device or str, optional
        Where to build; defaults to the default device if it is an OpenCL
        device, otherwise the first working OpenCL device.
    options : sequence of str, optional
        Extra build options (``-cl-kernel-arg-info`` is always added).

    Attributes
    ----------
    device : Device
        The OpenCL device the program was built for; its kernels launch there.
    source : str
        The OpenCL C source, as given.

    Raises
    ------
    BuildFailed
        The source does not compile; ``e.log`` has the compiler's errors.
    Refused
        ``device`` is the host (``e.reason.kind == "device_type"``), as for
        :func:`hostarray.hostptr.attach`.
    DeviceUnavailable
        No ``device`` given and no working OpenCL device is found.

    Examples
    --------
    >>> import numpy as np, hostarray as ha
    >>> x = ha.asarray([1.0, 2.0, 3.0], dtype=ha.float32)
    >>> if any(d.framework == "opencl" for d in ha.devices()):
    ...     prg = ha.Program("__kernel void twice(__global float *x) "
    ...                      "{ x[get_global_id(0)] *= 2; }")
    ...     x = x.to_device(prg.device)
    ...     _ = prg.twice(x.shape, x)
    ...     print(np.asarray(x))
    [2. 4. 6.]
    """

    def __init__(self, source: str, device: Device | str | None = None,
                 options: Sequence[str] = ()) -> None:
        dev: Device | None
        if device is None:
            dev = _parse_device(None)
            if dev.framework != "opencl":
                dev = next((d for d in _devices() if d.framework == "opencl"), None)
                if dev is None:
                    raise DeviceUnavailable("opencl", "no working OpenCL device was found; "
                                                      "install one (e.g. pocl-opencl-icd)")
        else:
            dev = _parse_device(device)
        if dev.framework != "opencl":  # the host: the one error attach gives for it too
            raise Refused(dev, Refusal("device_type", device_type=dev.type))
        self.device = dev
        self.source = source
        opts = ("-cl-kernel-arg-info", *options)
        rt = dev.runtime
        key = (source, opts)
        with rt.lock:
            cached = rt.programs.get(key)
            if cached is None:
                cached = rt.programs[key] = [build_program(rt.context, source, list(opts),
                                                           str(dev)), {}]
        self._cl, self._kernels = cached
        self._kernel_lock = threading.Lock()

    def __getattr__(self, name: str) -> Kernel:
        if name.startswith("_"):
            raise AttributeError(name)
        k = self._kernels.get(name)
        if k is None:
            with self._kernel_lock:
                k = self._kernels.get(name)
                if k is None:
                    names = self._cl.kernel_names.split(";")
                    if name not in names:
                        raise AttributeError(f"the program has no kernel {name!r}; it has "
                                             f"{names}")
                    k = self._kernels[name] = Kernel(self, name)
        return k

    @property
    def kernel_names(self) -> list[str]:
        """Names of the program's kernels."""
        return [n for n in self._cl.kernel_names.split(";") if n]
