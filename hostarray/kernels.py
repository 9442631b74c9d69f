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
import threading
from collections import deque
from collections.abc import Sequence
from typing import Any

import numpy as np
import pyopencl as cl

from ._array import HostPtrArray
from ._devices import Device
from ._devices import device as _parse_device
from ._devices import devices as _devices
from ._errors import BadLaunch, DeviceUnavailable, LaunchFailed
from ._stats import COUNTERS
from ._storage import AFTER_DEVICE_SYNC, locked
from .backends.opencl import build_program
from .hostptr import _check_shareable as check_shareable
from .hostptr import ensure_buffer

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


class Launch:
    """A kernel launch in flight.  Nothing blocks until the host looks at the data.

    Attributes
    ----------
    event : pyopencl.Event
        The launch's OpenCL event.
    """

    __slots__ = ("event", "kernel", "_keep")

    def __init__(self, event: Any, kernel: str, keep: list[Any]) -> None:
        self.event = event
        self.kernel = kernel
        self._keep = keep  # the storages: host memory outlives the launch

    def wait(self) -> None:
        """Block until the launch has finished.

        Raises :class:`~hostarray.hostptr.LaunchFailed` if the device reports it failed."""
        try:
            self.event.wait()
        except cl.Error:
            status = int(self.event.command_execution_status)
            if status >= 0:
                raise
            raise LaunchFailed(self.event.command_queue.device.name.strip(), status,
                               f"kernel {self.kernel!r}") from None
        finally:
            self._keep = []

    @property
    def done(self) -> bool:
        """Whether the launch has finished (or failed: a negative status)."""
        return self.event.command_execution_status <= cl.command_execution_status.COMPLETE

    def __repr__(self) -> str:
        return f"<Launch {self.kernel} {'done' if self.done else 'in flight'}>"


class _Pending:
    """Launches not yet known finished, per device: they keep their storages alive."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.launches: deque[Launch] = deque()

    def add(self, launch: Launch) -> None:
        with self.lock:
            self._prune()
            self.launches.append(launch)

    def _prune(self) -> None:
        q = self.launches
        while q and (not q[0]._keep or q[0].done):
            q.popleft()._keep = []

    def prune(self) -> None:
        with self.lock:
            self._prune()


_PENDING: dict[Device, _Pending] = {}


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
        for _, kernels in rt.programs.values():
            for k in kernels.values():
                k._last_args = []
    for pending in _PENDING.values():
        pending.launches.clear()


def _after_device_sync(key: Any) -> None:
    # The host just synchronised with device ``key`` (an in-order queue: every
    # launch issued there before is finished): let go of the memory they kept.
    pending = _PENDING.get(key)
    if pending is not None:
        pending.prune()


AFTER_DEVICE_SYNC.append(_after_device_sync)


class Kernel:
    """One kernel of a :class:`Program`; call it to launch.

    ``kernel(global_size, *args, local_size=None)``: ``global_size`` is an
    int or a tuple; array arguments are HostPtrArrays (optionally wrapped in
    :func:`read`/:func:`write`/:func:`readwrite`); scalars are converted to
    the kernel's declared type.
    """

    def __init__(self, program: Program, name: str) -> None:
        self.program = program
        self.name = name
        self.device = program.device
        self._cl = cl.Kernel(program._cl, name)
        self._lock = threading.Lock()  # set_arg + enqueue must not interleave
        self._last_args: list[Any] = []  # see __call__
        n = self._cl.num_args
        self.args: list[tuple[str, str, str | None]] = []  # (name, kind, access/scalar type)
        for i in range(n):
            addr = self._cl.get_arg_info(i, cl.kernel_arg_info.ADDRESS_QUALIFIER)
            tq = self._cl.get_arg_info(i, cl.kernel_arg_info.TYPE_QUALIFIER)
            tname = self._cl.get_arg_info(i, cl.kernel_arg_info.TYPE_NAME).strip().rstrip("*")
            aname = self._cl.get_arg_info(i, cl.kernel_arg_info.NAME)
            if addr in (cl.kernel_arg_address_qualifier.GLOBAL,
                        cl.kernel_arg_address_qualifier.CONSTANT):
                const = bool(tq & cl.kernel_arg_type_qualifier.CONST) or \
                    addr == cl.kernel_arg_address_qualifier.CONSTANT
                self.args.append((aname, "buffer", READ if const else READWRITE))
            elif addr == cl.kernel_arg_address_qualifier.LOCAL:
                self.args.append((aname, "local", None))
            else:
                self.args.append((aname, "scalar", tname.strip()))

    def __repr__(self) -> str:
        sig = ", ".join(f"{k}:{n}" for n, k, _ in self.args)
        return f"<Kernel {self.name}({sig}) on {self.device}>"

    def _sizes(self, global_size: Any, local_size: Any) -> tuple[tuple[int, ...], Any]:
        gs = (global_size,) if isinstance(global_size, (int, np.integer)) else tuple(global_size)
        if not gs or any(int(g) <= 0 for g in gs):
            raise BadLaunch(self.name, f"global size {global_size!r} must be positive ints")
        if len(gs) > 3:  # OpenCL's limit; refused here, before anything is published
            raise BadLaunch(self.name, f"global size {gs} has {len(gs)} dimensions; OpenCL "
                                       f"kernels take 1 to 3: flatten the index space")
        if local_size is None:
            return tuple(int(g) for g in gs), None
        ls = (local_size,) if isinstance(local_size, (int, np.integer)) else tuple(local_size)
        if len(ls) != len(gs) or any(int(lv) <= 0 or int(g) % int(lv) for g, lv in zip(gs, ls)):
            raise BadLaunch(self.name, f"global size {gs} is not a multiple of local size "
                                       f"{ls}; round the global size up")
        return tuple(int(g) for g in gs), tuple(int(lv) for lv in ls)

    def __call__(self, global_size: int | Sequence[int], *args: Any,
                 local_size: int | Sequence[int] | None = None) -> Launch:
        dev = self.device
        if len(args) != len(self.args):
            raise BadLaunch(self.name, f"it takes {len(self.args)} arguments "
                                       f"({', '.join(a[0] for a in self.args)}), got {len(args)}")
        gs, ls = self._sizes(global_size, local_size)
        values: list[Any] = []
        uses: dict[int, list[Any]] = {}  # id(storage) -> [storage, reads, writes, spans]
        for (aname, kind, info), arg in zip(self.args, args):
            if kind == "buffer":
                mode = info
                if isinstance(arg, Access):
                    mode, arg = arg.mode, arg.array
                if not isinstance(arg, HostPtrArray):
                    raise BadLaunch(self.name, f"argument {aname!r} is a pointer: pass a "
                                               f"HostPtrArray, not {type(arg).__name__}")
                if arg._device != dev and arg._device.framework == "opencl":
                    raise BadLaunch(self.name, f"argument {aname!r} is on {arg._device}, the "
                                               f"kernel on {dev}; use x.to_device({str(dev)!r})")
                a, s = arg._a, arg._s
                if mode != READ and not a.flags.writeable:
                    raise BadLaunch(self.name, f"argument {aname!r} is read-only but the "
                                               f"kernel may write it; pass ha.read(x) or a copy")
                if not a.flags.c_contiguous:
                    raise BadLaunch(self.name, f"argument {aname!r} is not contiguous; pass "
                                               f"ha.asarray(x, copy=True)")
                off = (a.__array_interface__["data"][0] - s.address) if a.size else 0
                if off % dev.alignment:  # a sub-buffer must start on the device's alignment
                    raise BadLaunch(self.name, f"argument {aname!r} is a view starting at byte "
                                               f"{off} of its array, not a multiple of the "
                                               f"device's {dev.alignment}-byte alignment; start "
                                               f"the view at a multiple of "
                                               f"{dev.alignment // a.itemsize or 1} elements or "
                                               f"pass ha.asarray(x, copy=True)")
                if dev not in s.buffers:  # refuse now, before any buffer is created
                    check_shareable(s, dev, id(arg))
                values.append((arg, off, a.nbytes))  # its buffer once every arg is checked
                u = uses.setdefault(id(s), [s, False, False, []])
                span = (off, off + a.nbytes, mode != READ)
                for lo, hi, other_writes in u[3]:
                    # a buffer and an overlapping sub-buffer of it in one launch: OpenCL
                    # leaves that undefined when either is written (and NVIDIA crashes)
                    if (lo, hi) != span[:2] and lo < span[1] and span[0] < hi and \
                            (other_writes or span[2]):
                        raise BadLaunch(self.name, f"argument {aname!r} overlaps another "
                                                   f"argument's part of the same array and one "
                                                   f"of them is written; pass the whole array "
                                                   f"once with an offset argument, or a copy")
                u[3].append(span)
                # write-only skips the publish only when the kernel overwrites the whole
                # storage: elsewhere the device copy must hold the host's bytes
                u[1] |= mode != WRITE or a.nbytes != s.nbytes
                u[2] |= mode != READ
            elif kind == "local":
                if not isinstance(arg, cl.LocalMemory):
                    raise BadLaunch(self.name, f"argument {aname!r} is __local: pass "
                                               f"pyopencl.LocalMemory(nbytes)")
                values.append(arg)
            else:
                if isinstance(arg, (HostPtrArray, Access, np.ndarray)):
                    raise BadLaunch(self.name, f"argument {aname!r} is a {info} scalar, not "
                                               f"an array")
                t = _SCALAR_TYPES.get(info)
                if t is None:
                    raise BadLaunch(self.name, f"argument {aname!r} has type {info}, which "
                                               f"hostarray can't pass; use a scalar or pointer")
                try:
                    values.append(t(arg))
                except (TypeError, ValueError, OverflowError) as e:
                    raise BadLaunch(self.name, f"argument {aname!r} needs a {info}: {e}") from None
        values = [(ensure_buffer(v[0], dev), v[1], v[2]) if isinstance(v, tuple) else v
                  for v in values]
        storages = [u[:3] for u in uses.values()]
        with locked(u[0] for u in storages):  # one global lock order: no deadlock
            for s, reads, _ in storages:
                if reads:
                    s.prepare_device_read(dev)
                else:
                    s.prepare_device_write(dev)
            cl_args = [v[0].handle(v[1], v[2]) if isinstance(v, tuple) else v for v in values]
            with self._lock:
                try:
                    self._cl.set_args(*cl_args)
                    ev = cl.enqueue_nd_range_kernel(dev.runtime.queue, self._cl, gs, ls)
                    # The kernel object still names these memory objects after the launch;
                    # keep them alive until the next launch replaces them (NVIDIA's driver
                    # was seen to crash when a kernel's stale argument had been released).
                    self._last_args = cl_args
                except cl.Error as e:
                    raise BadLaunch(self.name, f"the driver refused the launch: {e}") from None
            for s, _, writes in storages:
                s.record_launch(dev, ev, writes)
        COUNTERS.add(launches=1)
        launch = Launch(ev, self.name, [u[0] for u in storages])
        _PENDING.setdefault(dev, _Pending()).add(launch)
        return launch


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

    Raises
    ------
    BuildFailed
        The source does not compile; ``e.log`` has the compiler's errors.

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
        if device is None:
            dev = _parse_device(None)
            if dev.framework != "opencl":
                dev = next((d for d in _devices() if d.framework == "opencl"), None)
                if dev is None:
                    raise DeviceUnavailable("opencl", "no working OpenCL device was found; "
                                                      "install one (e.g. pocl-opencl-icd)")
        else:
            dev = _parse_device(device)
        if dev.framework != "opencl":
            raise DeviceUnavailable(dev, "kernels need an OpenCL device")
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
