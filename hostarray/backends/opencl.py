# Over 700 lines: discovery, the buffer and its sub-buffers, and the probes share one runtime.
"""The OpenCL backend: discovery, buffers over host memory, map/unmap/copy, programs.

Everything hostarray does with pyopencl happens here, in :mod:`hostarray._launch` (the
launch protocol) or in :mod:`hostarray.kernels`.  Here too: the one program cache (per
device runtime, :meth:`DeviceRuntime.program`), the one table between numpy dtypes and
OpenCL C types (:data:`C_TYPES`), and what a kernel's arguments are, read from
``clGetKernelArgInfo`` (:func:`kernel_arguments`).
"""

from __future__ import annotations

import bisect
import re
import threading
import time
import warnings
from typing import Any

import numpy as np
import pyopencl as cl

from .. import _settings
from .._settings import LINK_KINDS
from .._stats import COUNTERS
from .._storage import PAGE_SIZE, address_of, aligned_empty
from ..errors import BuildFailed, Refusal, Refused
from . import _binaries

# pyopencl's own read and write of a buffer, under enqueue_copy's dispatch on argument types
# (which costs 3.6 us of Python per call on the development machine, more than the read of a
# small result itself); enqueue_copy where a pyopencl version lacks them
_read_buffer: Any = getattr(getattr(cl, "_cl", None), "_enqueue_read_buffer", None)
_write_buffer: Any = getattr(getattr(cl, "_cl", None), "_enqueue_write_buffer", None)
if _read_buffer is None or _write_buffer is None:
    def _read_buffer(q: Any, buf: Any, host: Any, offset: int, wait_for: Any,
                     blocking: bool) -> Any:
        return cl.enqueue_copy(q, host, buf, src_offset=offset, is_blocking=blocking)

    def _write_buffer(q: Any, buf: Any, host: Any, offset: int, wait_for: Any,
                      blocking: bool) -> Any:
        return cl.enqueue_copy(q, buf, host, dst_offset=offset, is_blocking=blocking)

__all__ = ["discover", "DeviceRuntime", "LINK_KINDS", "OUT_OF_MEMORY_CODES", "build_program",
           "forced_link", "sub_range", "C_TYPES", "DTYPES", "SCALAR_DTYPES", "element_dtypes",
           "scalar_of", "kernel_arguments", "typed_kernel"]


def forced_link() -> str | None:
    """The link kind ``HOSTARRAY_LINK`` forces (``None`` for unset or ``auto``), read by
    :func:`hostarray._settings.link`.

    Raises
    ------
    ValueError
        ``HOSTARRAY_LINK`` names no link kind.
    """
    return _settings.link()

_U8: Any = np.uint8  # element type of mapped views (pyopencl's stubs want a dtype object)
_PROBE_SOURCE = ("__kernel void hostarray_probe(__global int *x) "
                 "{ x[get_global_id(0)] = 0x5eed + (int)get_global_id(0); }")
# The host-pointer probe works on bytes, so that a pointer 1 byte off is no misaligned access
# for the kernel itself: only the driver's use of the host pointer is tested.
_BYTES_PROBE_SOURCE = ("__kernel void hostarray_probe_bytes(__global uchar *x) "
                       "{ size_t i = get_global_id(0); x[i] = (uchar)(x[i] ^ 0x5a); }")
# Offsets from a page boundary tried by the host-pointer probe, smallest first.
HOST_PROBE_OFFSETS = (1, 4, 16, 64)
_HOST_PROBE_BYTES = 1024
_GUARD = 64  # bytes around the probed range that must stay untouched


_IN_USE = object()  # a sub-buffer's last use: handed out, the command not known yet

# The OpenCL status codes that mean "no memory for this buffer" (on the device, or on the
# host for the driver's own bookkeeping): CL_MEM_OBJECT_ALLOCATION_FAILURE,
# CL_OUT_OF_RESOURCES, CL_OUT_OF_HOST_MEMORY.  The device-compute pool empties itself and
# retries once on these (hostarray._compute.pool).
OUT_OF_MEMORY_CODES = frozenset((-4, -5, -6))


def sub_range(offset: int, nbytes: int, unit: int, total: int) -> tuple[int, int]:
    """The bytes ``[lo, hi)`` of the sub-buffer for a view of ``nbytes`` at ``offset`` (a
    multiple of ``unit``, the device's sub-buffer alignment) in a buffer of ``total`` bytes:
    from the view's origin, a whole number of units, clipped to the buffer's end.

    Two views overlap exactly when their ranges do (both start on a unit), and views whose
    ranges are equal share one sub-buffer.

    Examples
    --------
    >>> from hostarray.backends.opencl import sub_range
    >>> sub_range(512, 700, 512, 4000)
    (512, 1536)
    >>> sub_range(3584, 100, 512, 4000)
    (3584, 4000)
    """
    return offset, min(total, offset + -(-max(nbytes, 1) // unit) * unit)


def _running(event: Any) -> bool:
    """Whether ``event``'s command may still run (a failed one does not)."""
    try:
        return int(event.command_execution_status) > 0
    except cl.Error:
        return False


def _build_logs(raw: Any) -> list[str]:
    """The compiler's log of a failed build of program ``raw``, one ``Build on <device>``
    entry per device (as pyopencl's own build error quotes them)."""
    logs = []
    devices: list[Any] = list(raw.get_info(cl.program_info.DEVICES))
    for dev in devices:
        try:
            logs.append(f"Build on {dev}:\n\n"
                        f"{raw.get_build_info(dev, cl.program_build_info.LOG)}")
        except cl.Error:
            pass
    return logs


def quiet_build(ctx: cl.Context, source: str) -> cl.Program:
    """``cl.Program(ctx, source).build()`` without pyopencl's ``CompilerWarning``: NVIDIA's
    driver logs a remark for every real compile, which pyopencl prints on stderr (and
    which ``-W error`` turns into a lost build).  A failed build raises what pyopencl's
    would (``pyopencl.RuntimeError``, a ``pyopencl.Error``: callers catch that), with the
    compiler's log in its message."""
    raw = cl._cl._Program(ctx, source)
    try:
        raw._build(options=b"", devices=None)
    except cl.Error as e:  # with the compiler's log, as pyopencl's own build says it
        record = cl._cl._ErrorRecord(msg="\n\n".join(_build_logs(raw)) or str(e),
                                     code=e.code, routine=e.routine)
        raise type(e)(record) from e
    return cl.Program(raw)


def _test_build(device: cl.Device) -> str | None:
    """Build and run a trivial kernel; return why the device is broken, or None."""
    try:
        ctx = cl.Context([device])
        queue = cl.CommandQueue(ctx)
        prg = quiet_build(ctx, _PROBE_SOURCE)
        out = np.zeros(4, np.int32)
        buf = cl.Buffer(ctx, cl.mem_flags.WRITE_ONLY, out.nbytes)
        prg.hostarray_probe(queue, (4,), None, buf)
        cl.enqueue_copy(queue, out, buf, is_blocking=True)
        if list(out) != [0x5eed + i for i in range(4)]:
            return f"the probe kernel computed {list(out)}"
        return None
    except Exception as e:  # any failure means: unusable, say why
        text = str(e).strip().splitlines()
        why = f"{type(e).__name__}: {text[0] if text else ''}"[:200]
        # a failed build says why only in its log: quote the compiler's first error
        err = next((ln.strip() for ln in text[1:] if "error" in ln.lower()), "")
        return f"{why}; {err[:300]}" if err else why


def discover() -> tuple[list[tuple[int, int, cl.Device]], list[tuple[str, str, str]]]:
    """Every OpenCL device: ``(working, left_out)``.

    ``working`` holds ``(platform index, device index, cl.Device)``;
    ``left_out`` holds ``(spec, name, why)`` for devices that list
    themselves but fail to build and run a trivial kernel.
    """
    working, left_out = [], []
    try:
        platforms = cl.get_platforms()
    except cl.Error as e:  # no ICD at all: no driver is installed (spec "opencl": no device)
        return [], [("opencl", "no OpenCL platform", str(e))]
    for p, platform in enumerate(platforms):
        try:
            devs = platform.get_devices()
        except cl.Error as e:
            left_out.append((f"opencl:{p}", platform.name, str(e)))
            continue
        for d, dev in enumerate(devs):
            why = _test_build(dev)
            if why is None:
                working.append((p, d, dev))
            else:
                left_out.append((f"opencl:{p}:{d}", dev.name.strip(), why))
                warnings.warn(f"hostarray: leaving out OpenCL device opencl:{p}:{d} "
                              f"({dev.name.strip()}): it failed a test build ({why})",
                              RuntimeWarning, stacklevel=3)
    return working, left_out


# -- numpy dtypes and OpenCL C types: the one table ---------------------------------------------

# The OpenCL C type of each numpy dtype's elements (native byte order): ``bool`` is
# ``uchar`` (0 or 1), a complex number a 2-vector of its component.  Keyed by dtype, not by
# dtype.name (the name is rebuilt on every access: microseconds).
C_TYPES: dict[np.dtype, str] = {np.dtype(k): v for k, v in (
    ("bool", "uchar"), ("int8", "char"), ("uint8", "uchar"), ("int16", "short"),
    ("uint16", "ushort"), ("int32", "int"), ("uint32", "uint"), ("int64", "long"),
    ("uint64", "ulong"), ("float16", "half"), ("float32", "float"), ("float64", "double"),
    ("complex64", "float2"), ("complex128", "double2"))}
# The numpy dtype of each OpenCL C scalar type (its inverse, less bool and the vectors)
DTYPES: dict[str, np.dtype] = {c: dt for dt, c in C_TYPES.items() if dt.kind in "iuf"}
# What a kernel's scalar argument of each type name (as clGetKernelArgInfo gives it) is
# passed as
SCALAR_DTYPES: dict[str, np.dtype] = {
    **DTYPES, **{f"unsigned {c[1:]}": DTYPES[c] for c in ("uchar", "ushort", "uint", "ulong")},
    "bool": np.dtype(np.int32), "size_t": np.dtype(np.uint64)}

_ADDRESS_SIZED = ("size_t", "ptrdiff_t", "intptr_t", "uintptr_t")
_VECTOR = re.compile(r"^([a-z]+?)(2|3|4|8|16)$")
_QUALIFIERS = re.compile(r"\b(?:const|volatile|restrict|__global|global|__constant|constant)\b")
_NUMERIC = [np.dtype(c) for c in "?bBhHiIlLqQefdFD"]


def scalar_of(pointee: str) -> str:
    """The OpenCL C scalar type name of a pointer's element type, as declared
    (``"uint"`` for ``unsigned int``, ``"float"`` for ``float4``); other names as they are."""
    t = " ".join(_QUALIFIERS.sub(" ", pointee).split())
    if t.startswith("unsigned "):
        t = "u" + t[9:]
    elif t.startswith("signed "):
        t = t[7:]
    t = {"unsigned": "uint", "long long": "long", "ulong long": "ulong"}.get(t, t)
    m = _VECTOR.match(t)
    if m and m.group(1) in DTYPES:
        return m.group(1)
    return t


def element_size(base: str, address_bits: int) -> int:
    """Bytes per element of the scalar type ``base`` (see :func:`scalar_of`), or 0."""
    if base in _ADDRESS_SIZED:
        return address_bits // 8
    dt = DTYPES.get(base)
    return dt.itemsize if dt is not None else 0


def element_dtypes(pointee: str, address_bits: int) -> frozenset[np.dtype] | None:
    """numpy dtypes (native byte order) an array may have to be passed as a pointer to
    ``pointee`` (the argument's type name without ``*``), or ``None`` when any may
    (a struct, a typedef hostarray can't see through, ``void``).

    The element size must match; integers of either signedness are taken for one
    another and ``bool`` for ``char``/``uchar``; a complex dtype passes for its
    component type (``complex64`` for ``float``, ``float2``...).

    Examples
    --------
    >>> from hostarray.backends.opencl import element_dtypes
    >>> sorted(d.name for d in element_dtypes("float4", 64))
    ['complex64', 'float32']
    >>> sorted(d.name for d in element_dtypes("unsigned char", 64))
    ['bool', 'int8', 'uint8']
    >>> element_dtypes("struct pair", 64) is None
    True
    """
    base = scalar_of(pointee)
    size = element_size(base, address_bits)
    if not size:
        return None
    if base in _ADDRESS_SIZED or DTYPES[base].kind in "iu":
        ok = [d for d in _NUMERIC if d.kind in "iu" and d.itemsize == size]
        if size == 1:
            ok.append(np.dtype(bool))
    else:
        ok = [d for d in _NUMERIC if (d.kind == "f" and d.itemsize == size)
              or (d.kind == "c" and d.itemsize == 2 * size)]
    return frozenset(ok)


# One argument of a kernel, from clGetKernelArgInfo: ``(name, kind, detail, declared,
# takes)``; kind ``"buffer"`` (a __global or __constant pointer: detail ``"read"`` where it
# is const or __constant, else ``"readwrite"``; declared: its type name, ``takes``: the
# element dtypes it takes, see element_dtypes), ``"local"`` or ``"scalar"`` (detail: its
# type name).
KernelArg = tuple[str, str, str | None, str, frozenset[np.dtype] | None]


def kernel_arguments(kernel: cl.Kernel, address_bits: int) -> list[KernelArg]:
    """Every argument of ``kernel`` (its program built with ``-cl-kernel-arg-info``), as
    :data:`KernelArg`; raises ``cl.Error`` where the driver keeps no argument info."""
    info: Any = kernel.get_arg_info  # pyopencl's stubs: object
    q, a = cl.kernel_arg_info, cl.kernel_arg_address_qualifier
    out: list[KernelArg] = []
    for i in range(kernel.num_args):
        addr = info(i, q.ADDRESS_QUALIFIER)
        full = info(i, q.TYPE_NAME).strip()
        tname = full.rstrip("*")
        name = info(i, q.NAME)
        if addr in (a.GLOBAL, a.CONSTANT):
            const = bool(info(i, q.TYPE_QUALIFIER) & cl.kernel_arg_type_qualifier.CONST) or \
                addr == a.CONSTANT
            out.append((name, "buffer", "read" if const else "readwrite",
                        " ".join(full.split()), element_dtypes(tname, address_bits)))
        elif addr == a.LOCAL:
            out.append((name, "local", None, "", None))
        else:
            out.append((name, "scalar", tname.strip(), "", None))
    return out


def typed_kernel(program: cl.Program, name: str, address_bits: int, strict: bool = False
                 ) -> tuple[cl.Kernel, list[KernelArg] | None]:
    """Kernel ``name`` of ``program`` and its arguments, its scalar arguments declared by
    their type names: pyopencl packs them directly (about 6 us less per scalar and launch
    than its untyped path, which tries one conversion after another; 70 us per launch for
    seven arguments on PoCL).  Where the driver keeps no argument info: ``cl.Error`` if
    ``strict``, else the kernel untyped and ``None``."""
    kernel = cl.Kernel(program, name)
    try:
        args = kernel_arguments(kernel, address_bits)
    except cl.Error:
        if strict:
            raise
        return kernel, None
    kernel.set_scalar_arg_dtypes([SCALAR_DTYPES.get(detail)
                                  if kind == "scalar" and detail else None
                                  for _, kind, detail, _, _ in args])
    return kernel, args


_PYOPENCL_LINES = ("clBuildProgram", "Build on", "(options", "(source saved")
# how a driver's build log says it did not take an option where it answers
# CL_BUILD_PROGRAM_FAILURE instead of CL_INVALID_BUILD_OPTIONS (NVIDIA's, on the H200:
# 'Error in processing command line: Don't understand command line argument "-x"!')
_OPTION_ERROR = re.compile(r"processing command line|command line argument|"
                           r"value of -\S+ flag|invalid build option|unknown argument",
                           re.IGNORECASE)


def build_program(ctx: cl.Context, source: str, options: list[str],
                  device_label: str, shown: tuple[str, ...] | None = None,
                  loaded: list[bool] | None = None) -> cl.Program:
    """Build ``source`` with ``options`` (a list of strings, one option each); on failure
    raise :class:`BuildFailed` with the ``error:`` lines, or, where the driver refused the
    options themselves (``CL_INVALID_BUILD_OPTIONS``, or a failed build whose log is about
    the command line: NVIDIA's), with ``options`` set to ``shown`` (the options to name: by
    default all of ``options``) and the driver's words.

    The disk cache of built programs (:mod:`._binaries`) is asked first, and given the
    binary of a build from source; ``loaded`` (a list) gets ``True`` appended where the
    program came from the cache."""
    # The program object's own build, not pyopencl's Program.build: a build that succeeds
    # with a non-empty log (a ``#warning``, a driver's remark) makes that one warn
    # pyopencl.CompilerWarning, which prints on stderr and, under ``-W error``, raises
    # after the build and loses the program.  The log stays readable on the built program
    # (hostarray.Program.build_log / .warnings).  pyopencl's option handling is kept (its
    # include folder, PYOPENCL_BUILD_OPTIONS).
    options_bytes, _ = cl.Program._process_build_options(ctx, options)
    cached = _binaries.entry(ctx, source, options_bytes)
    if cached is not None:
        hit = cached.load(ctx, options_bytes)
        if hit is not None:
            if loaded is not None:
                loaded.append(True)
            return cl.Program(hit)
    raw = cl._cl._Program(ctx, source)
    try:
        raw._build(options=options_bytes, devices=None)
    except cl.Error as e:
        logs = _build_logs(raw)
        full = "\n\n".join([str(e), *logs]) + f"\n\n(options: {options_bytes.decode()})"
        lines = full.splitlines()
        said = [ln.strip() for ln in lines if ln.strip() and not ln.startswith(_PYOPENCL_LINES)]
        code = getattr(e, "code", None)
        if code == cl.status_code.INVALID_BUILD_OPTIONS or (
                code == cl.status_code.BUILD_PROGRAM_FAILURE
                and any(_OPTION_ERROR.search(ln) for ln in said)):
            raise BuildFailed(device_label, "\n".join(said), full,
                              options=tuple(options if shown is None else shown)) from None
        errors = [ln for ln in lines if "error" in ln.lower()
                  and not ln.startswith(_PYOPENCL_LINES)]
        raise BuildFailed(device_label, "\n".join(errors) or full, full) from None
    if cached is not None:
        cached.store(raw, logged=not _log_empty(raw))
    return cl.Program(raw)


def _log_empty(raw: Any) -> bool:
    """Whether the build of ``raw`` wrote nothing in its log on any device (a program loaded
    from a binary has no log: one with warnings is not cached, so they are not lost)."""
    try:
        for dev in raw.get_info(cl.program_info.DEVICES):
            if raw.get_build_info(dev, cl.program_build_info.LOG).strip():
                return False
    except cl.Error:
        return False
    return True


class DeviceRuntime:
    """Context, in-order queue and host-link kind of one OpenCL device."""

    def __init__(self, cl_device: cl.Device, label: str) -> None:
        self.cl_device = cl_device
        self.label = label
        self.context = cl.Context([cl_device])
        self.queue = cl.CommandQueue(self.context)
        self._probes: Any = None  # see _probe_queue
        self.lock = threading.Lock()
        self._link: str | None = None
        self._host_alignment: int | None = None
        self.host_probe: dict[int, bool] = {}  # offset from a page -> used in place
        # the one program cache: (source, options) -> [cl.Program, {its callers' kernels}]
        self.programs: dict[tuple[str, tuple[str, ...]], list[Any]] = {}
        # The newest command enqueued (a launch, a transfer): while it runs, buffers that die
        # are kept here and let go once the queue is idle, because NVIDIA's driver blocks
        # clReleaseMemObject until the queue drains (a dropped temporary would stall it).
        self.last_event: Any = None
        self.graveyard: list[Any] = []
        # the registry of launches not known finished (hostarray._launch.pending)
        self.pending: Any = None
        # sub-buffer origins are multiples of this many bytes; a sub-buffer covers whole
        # units, so two that share no unit never overlap (see OpenCLBuffer.handle)
        self.sub_unit = max(1, int(cl_device.mem_base_addr_align) // 8)

    def program(self, source: str, options: tuple[str, ...], shown: tuple[str, ...] | None = None,
                counted: bool = False) -> list[Any]:
        """``[cl.Program, kernels]`` for ``source`` built with ``options`` on this device:
        built once per source and options (:func:`build_program`; ``shown``: the options a
        refusal names), then cached.  ``kernels`` is a dict the caller keeps its kernel
        objects in.  ``counted``: a build counts in ``ha.stats()`` (``kernels_compiled``,
        ``compile_seconds``: hostarray's generated kernels)."""
        key = (source, options)
        hit = self.programs.get(key)
        if hit is not None:
            return hit
        with self.lock:
            hit = self.programs.get(key)
            if hit is None:
                t0 = time.perf_counter()
                loaded: list[bool] = []
                prg = build_program(self.context, source, list(options), self.label, shown,
                                    loaded)
                if counted:
                    COUNTERS.add(kernels_compiled=1, kernels_loaded=len(loaded),
                                 compile_seconds=time.perf_counter() - t0)
                hit = self.programs[key] = [prg, {}]
        return hit

    def busy(self) -> bool:
        """Whether the newest enqueued command may still run."""
        ev = self.last_event
        if ev is None:
            return False
        try:
            if ev.command_execution_status > 0:
                return True
        except cl.Error:  # a failed command: nothing runs behind it any more
            pass
        self.last_event = None
        return False

    def bury(self, *objects: Any) -> None:
        """Let go of OpenCL memory objects: now if the queue is idle, else at :meth:`sweep`."""
        if self.busy():
            self.graveyard.extend(objects)

    def sweep(self) -> None:
        """Release buried memory objects once nothing runs on the queue any more."""
        if self.graveyard and not self.busy():
            self.graveyard = []

    # -- the host link, decided once per device by an observable check --------------
    def _probe_queue(self) -> Any:
        """A queue of its own for the probes: they wait for their own commands only, never
        for the launches a program queued before the first buffer was made (a launch that
        probes must not block behind them)."""
        if self._probes is None:
            self._probes = cl.CommandQueue(self.context, self.cl_device)
        return self._probes

    @property
    def link(self) -> str:
        """``"shared"``, ``"mapped"`` or ``"copied"`` for new buffers on this device."""
        if self._link is None:
            self._link = forced_link() or self._check_link()
        return self._link

    def _check_link(self) -> str:
        """Does a kernel's write reach the host bytes without a map?  Then the
        device works on host memory itself (shared); otherwise the driver
        mirrors it (mapped)."""
        host = aligned_empty(4096).view(np.int32)
        host[:] = -1
        buf = cl.Buffer(self.context, cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR,
                        hostbuf=host)
        prg = quiet_build(self.context, _PROBE_SOURCE)
        q = self._probe_queue()
        cl.Kernel(prg, "hostarray_probe")(q, (host.size,), None, buf)
        q.finish()
        shared = bool(host[7] == 0x5eed + 7)
        buf.release()
        return "shared" if shared else "mapped"

    # -- the host-pointer alignment, decided once per device by an observable check -----
    @property
    def host_alignment(self) -> int:
        """Bytes host memory must be aligned to for a buffer that uses it in place.

        Found by a probe (:meth:`_check_host_alignment`); ``1`` on the copied link,
        where no host pointer is handed to the driver.  ``CL_DEVICE_MEM_BASE_ADDR_ALIGN``
        rules sub-buffer origins, not this."""
        if self.link == "copied":  # asked each time: a link may be forced for a while
            return 1
        if self._host_alignment is None:
            self._host_alignment = self._check_host_alignment()
        return self._host_alignment

    def _check_host_alignment(self) -> int:
        """The smallest of :data:`HOST_PROBE_OFFSETS` from which on every probed offset
        from a page is used in place (:meth:`_used_in_place`); the device's
        ``CL_DEVICE_MEM_BASE_ADDR_ALIGN`` where even the largest is not."""
        documented = max(1, self.cl_device.mem_base_addr_align // 8)
        try:
            kernel = cl.Kernel(quiet_build(self.context, _BYTES_PROBE_SOURCE),
                               "hostarray_probe_bytes")
        except cl.Error:
            return documented
        required = documented
        for off in sorted((o for o in HOST_PROBE_OFFSETS if o < documented), reverse=True):
            ok = self.host_probe[off] = self._used_in_place(kernel, off)
            if not ok:
                break
            required = off
        return required

    def _used_in_place(self, kernel: cl.Kernel, offset: int) -> bool:
        """Does a ``USE_HOST_PTR`` buffer over host memory ``offset`` bytes after a page
        boundary work on that memory itself?  The kernel must see the host's bytes, its
        writes must be in those bytes once mapped for reading, the map must return the
        host pointer itself, and no byte around the range may change."""
        n = _HOST_PROBE_BYTES
        raw = aligned_empty(offset + n + _GUARD + PAGE_SIZE)
        raw[:] = 0xA5
        host = raw[offset:offset + n]
        host[:] = np.arange(n, dtype=np.uint32) * 7 % 256
        want = host ^ 0x5A
        try:
            buf = cl.Buffer(self.context, cl.mem_flags.READ_WRITE | cl.mem_flags.USE_HOST_PTR,
                            hostbuf=host)
        except cl.Error:
            return False
        q = self._probe_queue()
        try:
            kernel(q, (n,), None, buf)
            mapped, _ = cl.enqueue_map_buffer(q, buf, cl.map_flags.READ, 0, (n,), _U8,
                                              is_blocking=True)
            try:
                same = address_of(mapped) == address_of(host)
                ok = same and bool(np.array_equal(host, want))
            finally:
                mapped.base.release(q).wait()
            q.finish()
            untouched = bool((raw[:offset] == 0xA5).all()
                             and (raw[offset + n:offset + n + _GUARD] == 0xA5).all())
            return ok and untouched
        except cl.Error:
            return False
        finally:
            buf.release()

    # -- buffers -------------------------------------------------------------------------
    def create_buffer(self, host_bytes: np.ndarray, device: Any, readonly: bool = False,
                      device_only: bool = False) -> OpenCLBuffer:
        """A buffer over ``host_bytes`` (contiguous uint8); raises :class:`Refused`.

        ``device_only``: device memory of its own, kept in sync with ``host_bytes`` by
        copies (the copied link's kind of buffer) whatever the device's link, so that
        the driver never touches ``host_bytes`` but to copy (a device-born result's host
        memory is committed only as the host reads it; a ``USE_HOST_PTR`` buffer would
        pin, and so commit, every page).  The refusal of a buffer for want of memory
        says so in its :class:`Refusal`'s ``code`` (:data:`OUT_OF_MEMORY_CODES`)."""
        link = "copied" if device_only else self.link
        # read-only host memory (e.g. np.frombuffer on bytes) gets a read-only buffer:
        # kernels can read it, and hostarray refuses launches that may write it
        readonly = readonly or not host_bytes.flags.writeable
        flags = cl.mem_flags.READ_ONLY if readonly else cl.mem_flags.READ_WRITE
        try:
            if link == "copied":
                buf = cl.Buffer(self.context, flags, host_bytes.nbytes)
            else:
                buf = cl.Buffer(self.context, flags | cl.mem_flags.USE_HOST_PTR,
                                hostbuf=host_bytes)
        except cl.Error as e:
            code = getattr(e, "code", None)
            raise Refused(device, Refusal("backend", code=code, text=str(e))) from None
        return OpenCLBuffer(self, buf, host_bytes, link)


class OpenCLBuffer:
    """A ``cl.Buffer`` over one host allocation and how to sync it."""

    __slots__ = ("runtime", "buf", "host", "link", "nbytes", "subs", "unit", "_ranges",
                 "_last_use", "raw_held", "_sub_lock", "__weakref__")

    def __init__(self, runtime: DeviceRuntime, buf: cl.Buffer, host: np.ndarray, link: str):
        self.runtime = runtime
        self.buf = buf
        self.host = host  # keeps the host memory alive while the buffer exists
        self.link = link
        self.nbytes = host.nbytes
        # The live sub-buffers by the byte range they cover, [lo, hi): whole alignment units
        # (see handle), never two that overlap; ``_ranges`` holds the same keys sorted.
        self.subs: dict[tuple[int, int], cl.Buffer] = {}
        self.unit = runtime.sub_unit
        self._ranges: list[tuple[int, int]] = []
        # per live sub-buffer: the newest command that used it (None: none yet;
        # _IN_USE: handed out, its command not known yet)
        self._last_use: dict[tuple[int, int], Any] = {}
        # sub-buffers handed to open ``hostptr.cl_buffer`` blocks (how many each): the
        # block's code may still enqueue on one, so nothing may retire it before the block ends
        self.raw_held: dict[tuple[int, int], int] = {}
        self._sub_lock = threading.Lock()

    def publish(self, lo: int = 0, hi: int | None = None) -> tuple[Any, int]:
        """Make the host's bytes ``[lo, hi)`` visible to the device; returns the transfer
        still reading host memory (or ``None``) and the bytes moved."""
        hi = self.nbytes if hi is None else hi
        q = self.runtime.queue
        if self.link == "copied":
            ev = self.runtime.last_event = _write_buffer(q, self.buf, self.host[lo:hi], lo,
                                                         None, False)
            return ev, hi - lo
        # Invalidate: the device's old contents of the range are dead, never read them back.
        # Not blocking: nothing reads or writes through the mapping (the host's bytes are
        # in place already), so the host need not wait for the queue to reach the map (a
        # launch behind a long kernel returns at once); the unmap, queued behind it, makes
        # them the device's, and is the transfer a host write waits for.
        mapped, _ = cl.enqueue_map_buffer(q, self.buf, cl.map_flags.WRITE_INVALIDATE_REGION,
                                          lo, (hi - lo,), _U8, is_blocking=False)
        ev = self.runtime.last_event = mapped.base.release(q)
        return ev, (hi - lo if self.link == "mapped" else 0)

    def acquire(self, lo: int = 0, hi: int | None = None) -> int:
        """Make the device's bytes ``[lo, hi)`` visible to the host (blocking; every
        command issued on the queue before is finished); returns the bytes moved."""
        hi = self.nbytes if hi is None else hi
        q = self.runtime.queue
        link = self.link
        if link != "shared":
            # mapped: a blocking read into the very host memory under the buffer is valid
            # on an in-order queue with no map outstanding (clEnqueueReadBuffer), one driver
            # call instead of a map and an unmap, and never slower (H200: 13.6 against 23.7
            # us for 4 bytes, 51.9 against 50.1 GB/s at 16 MiB, 54.8 against 54.7 at 256
            # MiB; benchmarks/probes/probe_small_acquire.py)
            _read_buffer(q, self.buf, self.host[lo:hi], lo, None, True)
            return hi - lo
        mapped, _ = cl.enqueue_map_buffer(q, self.buf, cl.map_flags.READ, lo, (hi - lo,),
                                          _U8, is_blocking=True)
        mapped.base.release(q).wait()
        return hi - lo if self.link == "mapped" else 0

    def held_overlap(self, offset: int, nbytes: int) -> tuple[int, int] | None:
        """The range of a sub-buffer an open ``cl_buffer`` block holds that the handle for
        ``nbytes`` at ``offset`` would retire (it overlaps without being the same), or
        ``None``.  The whole buffer retires nothing."""
        if offset == 0 and nbytes >= self.nbytes:
            return None
        lo, hi = key = sub_range(offset, nbytes, self.unit, self.nbytes)
        with self._sub_lock:
            for k in self.raw_held:
                if k != key and k[0] < hi and lo < k[1]:
                    return k
        return None

    def handle(self, offset: int, nbytes: int, raw: bool = False) -> cl.Buffer:
        """The memory object a launch passes for the view of ``nbytes`` at ``offset``.

        The whole buffer is passed as itself; any other view (a short one at offset 0 too)
        as the sub-buffer :func:`sub_range` gives it: from the view's origin, whole units of
        the device's sub-buffer alignment, clipped to the buffer's end.  Views with the same
        range share one.  A sub-buffer that overlaps the new one is retired first
        (:meth:`_retire`), so the live sub-buffers never overlap: OpenCL leaves overlapping
        sub-buffers in use undefined, and NVIDIA's driver crashed on many of them.  The
        caller reports the command that used it with :meth:`used` (a ``raw`` handle, for a
        ``cl_buffer`` block, with :meth:`raw_done`: until then nothing retires it; callers
        check :meth:`held_overlap` first)."""
        if offset == 0 and nbytes >= self.nbytes:
            return self.buf
        key = sub_range(offset, nbytes, self.unit, self.nbytes)
        with self._sub_lock:
            sub = self.subs.get(key)
            if sub is None:
                self._retire(key)
                sub = self.subs[key] = self.buf.get_sub_region(key[0], key[1] - key[0])
                bisect.insort(self._ranges, key)
            if raw:
                self.raw_held[key] = self.raw_held.get(key, 0) + 1
            # in use by a command not known yet: until used() names it, retiring this one
            # waits for the whole queue
            self._last_use[key] = _IN_USE
        return sub

    def used(self, offset: int, nbytes: int, event: Any) -> None:
        """``event`` is the newest command using the handle of the view of ``nbytes`` at
        ``offset`` (see :meth:`handle`); retiring its sub-buffer waits for that command."""
        if offset == 0 and nbytes >= self.nbytes:
            return
        key = sub_range(offset, nbytes, self.unit, self.nbytes)
        with self._sub_lock:
            if key in self._last_use:
                self._last_use[key] = event

    def raw_done(self, offset: int, nbytes: int, event: Any) -> None:
        """A ``cl_buffer`` block given the :meth:`handle` (``raw``) for ``nbytes`` at
        ``offset`` ended; ``event`` follows every command it enqueued."""
        if offset == 0 and nbytes >= self.nbytes:
            return
        key = sub_range(offset, nbytes, self.unit, self.nbytes)
        with self._sub_lock:
            n = self.raw_held.get(key, 0) - 1
            if n > 0:
                self.raw_held[key] = n
            else:
                self.raw_held.pop(key, None)
        self.used(offset, nbytes, event)

    def sub_ranges(self) -> list[tuple[int, int]]:
        """The byte ranges ``[lo, hi)`` of the live sub-buffers, sorted."""
        with self._sub_lock:
            return list(self._ranges)

    def _retire(self, key: tuple[int, int]) -> None:
        """Let go of the live sub-buffers that overlap ``key``, once no command may use them.

        Each sub-buffer remembers the newest command that used it (:meth:`used`); the queue
        is in order, so that command finished means every earlier one did too.  Waiting for
        it, rather than for the queue, keeps the cost where it belongs: nothing when the old
        sub-buffer's last launch is done, one wait otherwise, and none at all in the common
        case, where views reuse their sub-buffer or don't overlap.  A sub-buffer handed out
        for a command not named yet (a raw ``cl_buffer`` use, a launch the driver refused)
        waits for the whole queue.  The memory object is then released at once, never kept
        beside the new overlapping one (NVIDIA crashed releasing such sub-buffers later)."""
        lo, hi = key
        ranges = self._ranges
        stop = bisect.bisect_left(ranges, (hi, hi))  # ranges[:stop] start before hi
        start = stop
        while start > 0 and ranges[start - 1][1] > lo:  # disjoint: ends sorted too
            start -= 1
        if start == stop:
            return
        victims = ranges[start:stop]
        held = [k for k in victims if k in self.raw_held]
        if held:  # the callers check held_overlap first, under the storage's lock
            raise AssertionError(f"sub-buffer {held[0]} is held by an open cl_buffer block")
        del ranges[start:stop]
        last = [self._last_use.pop(k, None) for k in victims]
        dead = [self.subs.pop(k) for k in victims]
        if any(ev is _IN_USE for ev in last):
            if self.runtime.busy():
                COUNTERS.add(waits=1)
            self.runtime.queue.finish()
        else:
            pending = [ev for ev in last if ev is not None and _running(ev)]
            if pending:
                COUNTERS.add(waits=1)
                for ev in pending:
                    try:
                        ev.wait()
                    except cl.Error:  # a failed command: done; its launch reports it
                        pass
        # Released now, before the overlapping one is created: kept alive beside it (the
        # graveyard), NVIDIA's driver crashed when they were released later (measured on
        # the H200: benchmarks/probes/probe_views.py, variant newdefer).  The release may block
        # while the queue still runs (NVIDIA), a cost paid only when views overlap.
        for d in dead:
            d.release()

    def __del__(self) -> None:
        # the buffer and its sub-buffers go to the runtime: released at once when nothing
        # runs, later otherwise (see DeviceRuntime.bury)
        try:
            self.runtime.bury(self.buf, *self.subs.values())
        except Exception:  # interpreter teardown
            pass

    def release(self) -> None:
        # Drop our references rather than clReleaseMemObject now: a launch in flight may still
        # use one of these; the memory goes when the last reference does.
        with self._sub_lock:
            self.subs.clear()
            self._ranges.clear()
            self._last_use.clear()
            self.raw_held.clear()
