# Over 700 lines: the kernel API and its reference (Kernel.__call__, Program) belong together.
"""OpenCL kernels on HostPtrArrays: build, cache, launch with automatic sync.

``ha.Program(source, device=dev).NAME(global_size, *args)`` publishes what
the device must see, enqueues, and records the launch so that the host
acquires lazily, when it next looks.  Each pointer argument's access comes
from the kernel's own signature (``const`` means read, otherwise
read-write) unless wrapped in :func:`read`, :func:`write` or
:func:`readwrite`.  The arguments and sizes are checked here; the launch
itself is :func:`hostarray._launch.launch`, the protocol generated kernels
and ``hostptr.cl_buffer`` blocks go through too.
"""

from __future__ import annotations

import operator
import re
import shlex
import threading
import weakref
from collections.abc import Sequence
from typing import Any, SupportsIndex

import numpy as np
import pyopencl as cl

from . import _launch
from ._array import HostPtrArray
from ._buildlog import (
    compiler_stderr_dropped,
    source_errors,
    source_warnings,
    without_temporary_paths,
)
from ._devices import Device
from ._devices import device as _parse_device
from ._devices import devices as _devices
from ._docstrings import complete
from ._launch import _LIMITS as _LIMITS
from ._launch import LaunchLimits as LaunchLimits
from ._launch import _ints, pending
from ._launch import _non_uniform_groups as _non_uniform_groups
from ._launch import launch_limits as launch_limits
from ._sharing import check_storage, view_offset
from ._sharing import ensure_buffer as ensure_buffer  # the one decision (tests check it)
from .backends.opencl import (
    C_TYPES,
    DTYPES,
    SCALAR_DTYPES,
    element_size,
    scalar_of,
    sub_range,
    typed_kernel,
)
from .errors import BadLaunch, BuildFailed, DeviceUnavailable, Refusal, Refused

__all__ = ["Program", "Kernel", "Launch", "read", "write", "readwrite"]

READ, WRITE, READWRITE = "read", "write", "readwrite"
# a call without a global size (refused as BadLaunch, not Python's TypeError)
_NO_SIZE: Any = type("_NoSize", (), {"__repr__": lambda self: "<no global size>"})()
_MODE = {READ: "r", WRITE: "w", READWRITE: "rw"}  # an access as the launch protocol's mode
_WHAT = "a launch of kernel"  # (in an InUse refusal: "a launch of kernel 'k' on opencl:0:0")


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


def _scalar(value: Any, dtype: np.dtype) -> Any:
    """``value`` as a scalar of ``dtype``, or ``TypeError``/``OverflowError``: never
    numpy's silent wrap-around (``np.int32(np.int64(2**40))`` is 0)."""
    if isinstance(value, (bool, np.bool_)) or value is None or \
            isinstance(value, (str, bytes, complex, np.complexfloating)):
        if isinstance(value, (bool, np.bool_)) and dtype.kind in "iub":
            return dtype.type(bool(value))
        raise TypeError(f"{value!r} is not {_a(dtype.name)} value")
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


class Launch(_launch.Launch):
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

    __slots__ = ()
    __repr__ = _launch.Launch.__repr__  # ``<Launch NAME done>``: the class's own (docs/api.md)


class Kernel(_launch.WorkSizes):
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

    Attributes
    ----------
    name : str
        The kernel's name in the source.
    program : Program
        The program it belongs to.
    device : Device
        The device it launches on (its program's).
    args : list of tuple
        ``(name, kind, detail)`` per argument as declared: kind ``"buffer"`` (detail
        ``"read"`` for a ``const`` pointer, else ``"readwrite"``), ``"scalar"`` (detail:
        its C type) or ``"local"``.

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
        self.device = dev = program.device
        cl_dev = dev._cl_device
        # scalars declared by their type names (see backends.opencl.typed_kernel)
        self._cl, info = typed_kernel(program._cl, name, int(cl_dev.address_bits), strict=True)
        spec = info or []
        self._lock = threading.Lock()  # set_arg + enqueue must not interleave
        self._kernel = (self._cl, self._lock)
        # (name, kind, access/scalar type)
        self.args: list[tuple[str, str, str | None]] = [a[:3] for a in spec]
        # what __call__ walks: (index, name, kind, access/scalar type, declared type,
        # dtypes taken)
        self._spec = [(i, *a) for i, a in enumerate(spec)]
        # per pointer argument: (declared type, element dtypes it takes, or None: any)
        self._pointee = {i: a[3:] for i, a in enumerate(spec) if a[1] == "buffer"}
        # buffer arguments are unset after each enqueue (see _launch.launch)
        self._buffer_args = tuple(i for i, a in enumerate(spec) if a[1] == "buffer")
        self._nargs = len(spec)
        # per argument position: the last array view passed there and its checked offset in
        # its storage's buffer, ``(weakref to the view, weakref to its storage, offset)``
        # (weak: the kernel must not keep host memory alive)
        self._views: list[tuple[Any, Any, int] | None] = [None] * self._nargs
        # the last launch's array arguments, checked (see _repeat): a launch passing the very
        # same arrays again skips their checks
        self._memo: tuple[Any, ...] | None = None
        self._rt = dev.runtime  # created once per device, never replaced
        pending(dev)  # (the device's registry of launches, made once)
        self._init_sizes(cl_dev, program.options)

    def __repr__(self) -> str:
        sig = ", ".join(f"{k}:{n}" for n, k, _ in self.args)
        return f"<Kernel {self.name}({sig}) on {self.device}>"

    def _type_mismatch(self, aname: str, declared: str, dtype: np.dtype) -> BadLaunch:
        base = scalar_of(declared.rstrip("*"))
        size = element_size(base, int(self.device._cl_device.address_bits))
        held = dtype.name if dtype.isnative else f"{dtype.str} (non-native byte order)"
        fix = []
        if base in DTYPES:
            fix.append(f"pass ha.astype({aname}, ha.{DTYPES[base].name})")
        if dtype.isnative and dtype in C_TYPES:
            fix.append(f"declare it {C_TYPES[dtype]}*")
        return self._refuse(f"argument {aname!r} is {declared} but the array holds {held}: "
                            f"the kernel would read and write its bytes as {size}-byte {base} "
                            f"elements; {' or '.join(fix) or 'pass an array of that type'}",
                            argument=aname, declared=declared, dtype=dtype)

    def __call__(self, global_size: SupportsIndex | Sequence[SupportsIndex] = _NO_SIZE,
                 *args: Any, local_size: SupportsIndex | Sequence[SupportsIndex] | None = None,
                 **keywords: Any) -> Launch:
        """Launch the kernel over ``global_size`` work-items: ``k(global_size, *args,
        local_size=None)``.

        hostarray's form differs from pyopencl's ``k(queue, global_size, local_size,
        *args)``: there is no queue (a kernel launches in its device's one in-order queue)
        and the local size is a keyword.  Before the launch, the host's writes to every
        array argument that the kernel may read are published (only the byte ranges the
        device lacks); after it, the arrays it may write are the device's until the host
        looks at them, which acquires them then (a host read waits for the launch by
        itself).  It returns at once.

        Parameters
        ----------
        global_size : int or sequence of int
            The number of work-items: one positive integer, or a sequence of 1 to 3 of
            them, one per dimension (``x.shape``; Python or numpy integers; a float is
            refused, not truncated).
        *args
            One per kernel argument, in the declaration's order:

            * a pointer (``__global``/``__constant``): a HostPtrArray on the kernel's
              device (or on the host: it is then used where it is, attached to the
              device), whose element type the declaration takes; a view passes its own
              elements.  ``const`` in the declaration means the kernel only reads it.
              Wrap it to say more: ``ha.read(x)`` (published, not acquired after: the
              host copy stays current), ``ha.write(x)`` (not published: the kernel
              overwrites every element; refused for a ``const`` pointer),
              ``ha.readwrite(x)``.
            * a scalar: a Python or numpy number, converted to the declared type.  An
              integer type (``int``, ``uint``, ``long`` ...) takes an integer (or a
              float without a fraction) exactly, or refuses it (no wrap-around, no
              truncation of a fraction).  A floating-point type (``float``, ``double``)
              takes any real number rounded to the nearest value of that type (``0.1``
              to float's nearest, ``16777217`` to ``16777216.0``), and refuses a finite
              value beyond its range (``1e300`` for ``float``); ``inf`` and ``nan``
              pass.  A boolean passes as 0 or 1 to an integer type and is refused by a
              floating-point one; complex numbers, strings and ``None`` are refused.
            * a ``__local`` pointer: ``pyopencl.LocalMemory(nbytes)``.
        **keywords
            None are taken: a kernel's arguments are positional, in the declaration's
            order (a keyword argument is refused with the kernel's signature).
        local_size : int or sequence of int, optional
            The work-group size, one positive integer per dimension of ``global_size``;
            ``None`` lets the driver choose (or uses the kernel's
            ``reqd_work_group_size``).  A keyword: a positional local size (pyopencl's
            habit) is refused with the call to write.

        Returns
        -------
        Launch
            The launch in flight (``launch.wait()``, ``launch.done``); keeping it is
            optional.

        Raises
        ------
        BadLaunch
            Wrong number or kind of arguments, no global size, arguments passed as
            keywords (also pyopencl's call form: the message gives hostarray's, with the
            kernel's signature), an array of another element type than declared, an
            array on another device, a scalar that does not fit its type, sizes that
            are not positive integers or above the device's or kernel's limits
            (``e.limit``, ``e.requested``), ``__local`` memory above the device's.
            Nothing is published and nothing changes.
        NotHostBacked
            An array argument that is not one contiguous range of its memory (a
            strided or reversed view).
        Refused
            The device can't use an argument's memory (``e.reason`` says why).
        InUse
            An argument's bytes are held by an open :func:`hostarray.hostptr.cl_buffer`
            block of another device.
        LaunchFailed
            Not from this call: the device reports a failed launch at the first host
            access to an array it used, or at ``launch.wait()``.

        Examples
        --------
        >>> import numpy as np, hostarray as ha
        >>> gpu = ha.devices()[-1]
        >>> if gpu.framework == "opencl":
        ...     prg = ha.Program("__kernel void scale(__global float *y, const float a, "
        ...                      "__global const float *x) "
        ...                      "{ size_t i = get_global_id(0); y[i] = a * x[i]; }",
        ...                      device=gpu)
        ...     x = ha.asarray(np.arange(8, dtype=np.float32), device=gpu)
        ...     y = ha.empty(8, dtype=ha.float32, device=gpu)
        ...     launch = prg.scale(y.shape, ha.write(y), 2.0, x)   # returns at once
        ...     assert np.asarray(y).tolist() == [2.0 * i for i in range(8)]
        """
        rt = self._rt
        if rt.graveyard:
            rt.sweep()
        if keywords or global_size is _NO_SIZE:  # (Python's bare TypeError otherwise)
            raise self._wrong_call(global_size, args, keywords)
        if len(args) != self._nargs:
            raise self._wrong_call(global_size, args)
        try:
            gs, ls = self._sizes(global_size, local_size)
        except BadLaunch:
            if _is_queue(global_size):
                raise self._wrong_call(global_size, args) from None
            raise
        checked = self._repeat(args)
        if checked is None:
            checked = self._checked(self.device, args)
        values, uses, storages = checked
        launch: Launch = _launch.launch(self.device, rt, self._kernel, self.name, gs, ls,
                                        values, uses, storages, None, None,
                                        self._buffer_args, _WHAT, Launch)
        return launch

    def _wrong_call(self, global_size: Any, args: tuple[Any, ...],
                    keywords: dict[str, Any] | None = None) -> BadLaunch:
        """The refusal of a call with the wrong number of arguments, keyword arguments, no
        global size, or in pyopencl's form ``kernel(queue, global_size, local_size,
        *args)``: then it says hostarray's."""
        names = ", ".join(a[0] for a in self.args)
        count = (f"it takes {self._nargs} argument{'s' if self._nargs != 1 else ''} "
                 f"({names}) after the global size, got {len(args)}")
        call = f"{self.name}(global_size, {names + ', ' if names else ''}local_size=None)"
        if global_size is _NO_SIZE:
            return BadLaunch(self.name, f"it was called without a global size (the number "
                                        f"of work-items, e.g. x.shape); call {call}")
        if keywords:
            given = ", ".join(f"{k}=" for k in keywords)
            return BadLaunch(self.name, f"its arguments are passed by position, in the "
                                        f"declaration's order, not as keywords ({given}); "
                                        f"call {call}")
        if _is_queue(global_size):
            return BadLaunch(self.name, f"it was called as pyopencl's kernels are, with a "
                                        f"queue first; hostarray's kernels take no queue (each "
                                        f"launches on its program's device, in that device's "
                                        f"queue) and the local size as a keyword: call {call}")
        if len(args) == self._nargs + 1 and (args[0] is None or _ints(args[0]) is not None):
            if args[0] is None or isinstance(args[0], (tuple, list)):
                return BadLaunch(self.name, f"{count}: the {args[0]!r} after the global size "
                                            f"looks like pyopencl's local size; here it is a "
                                            f"keyword: call {call}")
            # a plain int may be the first argument as well: say both readings
            return BadLaunch(self.name, f"{count}: one too many; if the {args[0]!r} after the "
                                        f"global size is pyopencl's local size, it is a "
                                        f"keyword here: call {call}")
        return BadLaunch(self.name, count)

    def _checked(self, dev: Device, args: tuple[Any, ...]
                 ) -> tuple[list[Any], list[Any], list[Any]]:
        """Every argument checked (the typed refusals), as ``(values, uses, storages)`` for
        :func:`hostarray._launch.launch`: ``(array, offset, nbytes)`` per pointer, a use
        ``(storage, lo, hi, mode)`` per pointer, each storage once; remembered for
        :meth:`_repeat`."""
        values: list[Any] = []
        uses: list[Any] = []
        spans: dict[int, list[Any]] = {}  # id(storage) -> its uses so far
        storages: list[Any] = []
        local_bytes = 0
        views = self._views
        for (i, aname, kind, info, declared, takes), arg in zip(self._spec, args):
            if kind == "buffer":
                mode: Any = info
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
                m = _MODE[mode]
                values.append((arg, off, nbytes))  # its buffer once every arg is checked
                uses.append((s, off, off + nbytes, m))
                u = spans.get(id(s))
                if u is None:
                    spans[id(s)] = [(off, off + nbytes, m)]
                    storages.append(s)
                    continue
                writes = m != "r"
                for lo, hi, other in u:
                    if (lo, hi) == (off, off + nbytes) or hi <= off or off + nbytes <= lo:
                        continue
                    # a buffer and an overlapping sub-buffer of it in one launch: OpenCL
                    # leaves that undefined when either is written (and NVIDIA crashes)
                    if other != "r" or writes:
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
                            f"the same array (bytes {off}-{off + nbytes} and {lo}-{hi}): they "
                            f"would need two overlapping sub-buffers, which hostarray never "
                            f"keeps at once; pass the whole array once with an offset "
                            f"argument, or a copy of one part", argument=aname)
                u.append((off, off + nbytes, m))
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
        self._remember(args, values, uses, storages)
        return values, uses, storages

    def _scalar_arg(self, aname: str, info: Any, arg: Any) -> Any:
        """``arg`` as the kernel's scalar argument ``aname`` of C type ``info``, or the
        typed refusal."""
        t = SCALAR_DTYPES.get(info)
        if t is None:  # a struct, a vector type, ... passed by value
            raise BadLaunch(self.name, f"argument {aname!r} is passed by value as {info}, a "
                                       f"type hostarray can't pass (only scalars of the "
                                       f"OpenCL C number types); declare it a __global "
                                       f"pointer to {info} and pass an array",
                                       argument=aname, declared=info)
        if isinstance(arg, (HostPtrArray, Access, np.ndarray)):
            raise BadLaunch(self.name, f"argument {aname!r} is {_a(info)} scalar, not an array",
                            argument=aname)
        try:
            return _scalar(arg, t)
        except (TypeError, ValueError, OverflowError) as e:
            raise self._refuse(f"argument {aname!r} needs {_a(info)}: {e}",
                               argument=aname, declared=info) from None

    def _repeat(self, args: tuple[Any, ...]) -> tuple[list[Any], list[Any], list[Any]] | None:
        """``(values, uses, storages)`` as :meth:`_checked` would give them, where every
        pointer argument is the very array the last checked launch passed there (a plain
        HostPtrArray, still with a buffer on the device) and there is no ``__local``
        argument; else ``None``.  What those checks read can't have changed: an array's
        device and type stay as created, and its view (memory, flags) unless
        :func:`hostarray.hostptr.install` replaced it, which the view's identity tells;
        scalars are converted again."""
        memo = self._memo
        if memo is None:
            return None
        dev = self.device
        values: list[Any] = []
        uses: list[Any] = []
        storages: list[Any] = []
        for arg, ref in zip(args, memo):
            if len(ref) == 2:  # a scalar: (name, type)
                values.append(self._scalar_arg(ref[0], ref[1], arg))
                continue
            # the same array over the same view (hostptr.install gives an array new memory)
            # (a dead array's weak reference gives None: so might the argument)
            array, view, off, nbytes, hi, m, first = ref
            same = array()
            if same is None or arg is not same or arg._a is not view() or \
                    dev not in (s := arg._s).buffers:
                return None
            values.append((arg, off, nbytes))
            uses.append((s, off, hi, m))
            if first:  # the first argument over its storage
                storages.append(s)
        return values, uses, storages

    def _remember(self, args: tuple[Any, ...], values: list[Any], uses: list[Any],
                  storages: list[Any]) -> None:
        """Keep what :meth:`_repeat` needs of this checked launch (weakly: the kernel must
        not keep host memory alive): per pointer argument ``(weakref to the array, weakref
        to its view, offset, nbytes, end, mode, whether it is the first over its storage)``,
        per scalar ``(name, type)``."""
        memo: list[Any] = []
        firsts = {id(s) for s in storages}
        it = iter(uses)
        for (_, aname, kind, info, _, _), arg, v in zip(self._spec, args, values):
            if kind == "local" or (kind == "buffer" and type(arg) is not HostPtrArray):
                self._memo = None
                return
            if kind == "buffer":
                s, _, _, m = next(it)
                first = id(s) in firsts
                firsts.discard(id(s))
                memo.append((weakref.ref(arg), weakref.ref(arg._a), v[1], v[2], v[1] + v[2], m,
                             first))
            else:
                memo.append((aname, info))
        self._memo = tuple(memo)


def _is_queue(obj: Any) -> bool:
    """Whether ``obj`` is a pyopencl command queue (the first argument of pyopencl's call
    form of a kernel)."""
    return isinstance(obj, cl.CommandQueue)


def _build_options(options: Any) -> tuple[str, ...]:
    """``Program``'s ``options`` as a tuple of strings: a string split as a shell would
    (:func:`shlex.split`, as pyopencl splits one; iterating it would give one "option" per
    character), a sequence of strings as it is, ``None`` as none.

    Examples
    --------
    >>> from hostarray.kernels import _build_options
    >>> _build_options("-DV=4 -DNAME='a b'")
    ('-DV=4', '-DNAME=a b')
    >>> _build_options(["-DV=4"])
    ('-DV=4',)
    """
    if options is None:
        return ()
    if isinstance(options, str):
        try:
            opts = tuple(shlex.split(options))
        except ValueError as e:  # an unclosed quote
            raise ValueError(f"build options {options!r} do not split as a shell would "
                             f"({e}); pass a list of strings") from None
    elif isinstance(options, (bytes, bytearray)) or not isinstance(options, Sequence):
        raise TypeError(f"build options must be a string or a sequence of strings, not "
                        f"{type(options).__name__}")
    else:
        for o in options:
            if not isinstance(o, str):
                raise TypeError(f"build options must be strings: {o!r} in {list(options)!r} "
                                f"is {_a(type(o).__name__)}")
        opts = tuple(options)
    if opts and opts[-1] in _TAKES_ARGUMENT:
        # the driver would take the next option on its command line as the argument (the
        # include path pyopencl adds after the user's options) and refuse that instead
        last = opts[-1]
        raise ValueError(f"build option {last!r} at the end of {list(opts)!r} has no "
                         f"argument: it needs {_TAKES_ARGUMENT[last]} ({last} X or {last}X, "
                         f"or two items of a list: [{last!r}, 'X'])")
    return opts


# the OpenCL build options that take their argument as the next option
_TAKES_ARGUMENT = {"-I": "a directory to search for #include files",
                   "-D": "a macro definition (NAME or NAME=VALUE)"}


def _a(word: str) -> str:
    """``word`` after its indefinite article: "an int", "a uint", "a float".

    Examples
    --------
    >>> from hostarray.kernels import _a
    >>> _a("int"), _a("uint"), _a("unsigned int"), _a("float"), _a("HostPtrArray")
    ('an int', 'a uint', 'an unsigned int', 'a float', 'a HostPtrArray')
    """
    # uint, uchar, ushort, ulong start with a "you" sound; other vowels take "an"
    vowel = word[:1].lower() in "aeiou" and not re.match(r"u(?:int|char|short|long)", word)
    return f"{'an' if vowel else 'a'} {word}"


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
    options : str or sequence of str, optional
        Extra build options (``-cl-kernel-arg-info`` is always added).  A string is split
        as a shell would (:func:`shlex.split`, as pyopencl does): ``"-DN=4 -DT=float"``
        and ``["-DN=4", "-DT=float"]`` are the same options.

    Attributes
    ----------
    device : Device
        The OpenCL device the program was built for; its kernels launch there.
    source : str
        The OpenCL C source, as given.
    options : tuple of str
        The extra build options, one per item (a string given split).
    build_log : str
        The driver's build log (``""`` where the compiler said nothing).
    warnings : tuple of str
        The compiler's warnings, in the excerpt form of a build failure.  A build that
        succeeds with warnings never raises or warns (not under ``-W error`` either:
        pyopencl's ``CompilerWarning`` is not emitted); read them here.

    Raises
    ------
    BuildFailed
        The source does not compile; ``e.log`` has the compiler's errors, each with
        its line of ``source`` and a caret under the column (``error at line 3, column
        12: ...``; nothing is printed to stderr).  Or the driver refused the build
        options (``e.options`` names them, the message says "bad build options").
    TypeError
        ``source`` is not a string (bytes are decoded as UTF-8), or ``options`` is
        neither a string nor a sequence of strings.
    ValueError
        ``options`` is a string that does not split as a shell would (an unclosed
        quote), or ends with ``-I`` or ``-D`` without its argument; or ``source`` is bytes
        that are not UTF-8.
    Refused
        ``device`` is the host (``e.reason.kind == "device_type"``): a Program needs an
        OpenCL device.
    DeviceUnavailable
        No ``device`` given and no working OpenCL device is found; or pyopencl does not
        import (the message names the import error and the fix).

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
                 options: str | Sequence[str] | None = ()) -> None:
        if isinstance(source, (bytes, bytearray)):
            try:
                source = bytes(source).decode("utf-8")
            except UnicodeDecodeError as e:
                raise ValueError(f"source given as bytes must be UTF-8 text ({e}); pass the "
                                 f"program's text as a str, e.g. "
                                 f"ha.Program(open('k.cl').read())") from None
        if not isinstance(source, str):  # (pyopencl failed deep inside on 5 or None)
            raise TypeError(f"source must be OpenCL C source as a str, not "
                            f"{type(source).__name__}; pass the program's text, e.g. "
                            f"ha.Program(open('k.cl').read())")
        opts_given = _build_options(options)  # refused before any device is looked up
        dev: Device | None
        if device is None:
            dev = _parse_device(None)
            if dev.framework != "opencl":
                dev = next((d for d in _devices() if d.framework == "opencl"), None)
                if dev is None:
                    from ._devices import why_no_opencl

                    raise DeviceUnavailable("opencl", "no working OpenCL device was found: "
                                                      + why_no_opencl())
        else:
            dev = _parse_device(device)
        if dev.framework != "opencl":  # the host
            raise Refused(dev, Refusal("device_type", device_type=dev.type,
                                       text=f"{dev} is the host; a Program needs an OpenCL "
                                            f"device, e.g. 'opencl'"))
        self.device = dev
        self.source = source
        self.options = opts_given
        opts = ("-cl-kernel-arg-info", *opts_given)
        rt = dev.runtime
        hit = getattr(rt, "programs", {}).get((source, opts))
        if hit is None:  # a build: the compiler may fail, and print behind the exception
            try:
                with compiler_stderr_dropped():
                    hit = rt.program(source, opts, opts_given)
            except BuildFailed as e:
                if e.options is not None:
                    raise
                # the errors against the user's own lines, not the driver's temporary file
                raise BuildFailed(e.device, source_errors(e.full_log, source, opts_given)
                                  or without_temporary_paths(e.log), e.full_log) from None
        self._cl, self._kernels = hit
        self._kernel_lock = threading.Lock()

    def __getattr__(self, name: str) -> Kernel:
        if name.startswith("_"):
            raise AttributeError(name)
        k = self._kernels.get(name)
        if k is None:
            with self._kernel_lock:
                k = self._kernels.get(name)
                if k is None:
                    names = self.kernel_names
                    if name not in names:
                        has = (f"it has {names}" if names else "it has no kernels (a kernel "
                               "is a function declared __kernel void)")
                        raise AttributeError(f"the program has no kernel {name!r}; {has}")
                    k = self._kernels[name] = Kernel(self, name)
        return k

    @property
    def build_log(self) -> str:
        """The driver's build log for this program: ``""`` where the compiler said nothing.

        A build that succeeds with warnings emits no Python warning (pyopencl's
        ``CompilerWarning`` is not raised, with ``-W error`` either): they are here and in
        :attr:`warnings`.

        Examples
        --------
        >>> import hostarray as ha
        >>> if any(d.framework == "opencl" for d in ha.devices()):
        ...     prg = ha.Program("__kernel void k(__global float *x) { x[0] = 1; }")
        ...     print(isinstance(prg.build_log, str))
        ... else:
        ...     print(True)
        True
        """
        try:
            log = self._cl.get_build_info(self.device.runtime.cl_device,
                                          cl.program_build_info.LOG)
        except cl.Error:
            return ""
        return str(log or "").strip()

    @property
    def warnings(self) -> tuple[str, ...]:
        """The compiler's warnings for this program, each as ``warning at line L, column C:
        message`` with that line of the source and a caret under the column (the form of a
        :class:`~hostarray.errors.BuildFailed` message); ``()`` where there are none.
        They come from the driver's build log (:attr:`build_log`); Debian's PoCL 3.1 keeps
        the log of a context's first program that had one and gives it for later builds
        too, so there a later program may show an earlier one's warnings.

        Examples
        --------
        >>> import hostarray as ha
        >>> if any(d.framework == "opencl" for d in ha.devices()):
        ...     prg = ha.Program('__kernel void k(__global float *x) {\\n'
        ...                      '#warning "check this"\\n  x[0] = 1;\\n}')
        ...     print(prg.warnings[0].split(":")[0])
        ... else:
        ...     print('warning at line 2, column 2')
        warning at line 2, column 2
        """
        return source_warnings(self.build_log, self.source, self.options)

    @property
    def kernel_names(self) -> list[str]:
        """Names of the program's kernels."""
        return [n for n in self._cl.kernel_names.split(";") if n]


# the kernel API loads on first use, after the namespace completed its docstrings
for _marker in (read, write, readwrite):
    complete(_marker, _marker.__name__)
del _marker
