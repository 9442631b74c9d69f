"""Adopting memory the user already has (issue 10), on the real device and on both links.

* ordinary numpy arrays are shared, not copied: the host-pointer requirement is a probed
  per-device fact, never less than the element size — not ``CL_DEVICE_MEM_BASE_ADDR_ALIGN``;
* one home decides "may this device use this memory", with one error type per fault;
* memory that already belongs to a storage gives a view of that storage (one state);
* ``hostptr.install`` refuses host memory that overlaps ``x``'s without being exactly it;
* memory adopted while the user keeps it (or its owner: a bytearray, ``array.array``,
  ctypes array, mmap) sees each launch's writes when it returns, and the user's writes
  reach the next launch.
"""

from __future__ import annotations

import array
import contextlib
import ctypes
import gc
import json
import mmap
import struct
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import hostarray as ha
from hostarray import hostptr
from hostarray._sharing import host_requirement
from hostarray._storage import address_of

pytestmark = pytest.mark.device

SRC = r"""
__kernel void fill(__global float *x, const float v) { x[get_global_id(0)] = v; }
__kernel void add(__global float *x, const float v) { x[get_global_id(0)] += v; }
__kernel void cp(__global const float *x, __global float *y) {
    int i = get_global_id(0); y[i] = x[i]; }
__kernel void slowadd(__global float *x, const float v, const int spin) {
    int i = get_global_id(0); float acc = 1.0f;
    for (int k = 0; k < spin; ++k) acc = acc * 1.0000001f;
    x[i] += v + (acc > 1e30f ? 1.0f : 0.0f); }
"""
N = 1024


@pytest.fixture(scope="module")
def prg(cl_device):
    return ha.Program(SRC, device=cl_device)


def _stats() -> tuple[int, int]:
    s = ha.stats()
    return s.publishes, s.acquires


def _off_by(skew: int, n: int = N, dtype=np.float32) -> np.ndarray:
    """numpy's own memory (not hostarray's), starting ``skew`` bytes past a 128-byte
    boundary: element-aligned for ``skew`` a multiple of the element size, never on
    ``CL_DEVICE_MEM_BASE_ADDR_ALIGN`` of any device seen."""
    item = np.dtype(dtype).itemsize
    raw = np.zeros(n * item + 256, np.uint8)
    start = (-address_of(raw) % 128) + skew
    return raw[start:start + n * item].view(dtype)


# -- class 13: ordinary numpy arrays are shared ------------------------------------------------

def test_device_reports_a_probed_host_alignment(cl_device) -> None:
    h = cl_device.host_alignment
    assert h >= 1 and h & (h - 1) == 0  # a power of two
    assert h <= cl_device.alignment  # never more than the documented sub-buffer alignment
    if cl_device.link == "copied":
        assert h == 1  # no host pointer reaches the driver: only the element size matters
    assert host_requirement(cl_device, 8) == max(h, 8)
    assert host_requirement(cl_device, 1) == h
    assert ha.device("cpu").host_alignment == 1


def test_devices_command_shows_the_host_alignment(cl_device) -> None:
    r = subprocess.run([sys.executable, "-m", "hostarray", "devices", "--json"],
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr
    rows = {d["device"]: d for d in json.loads(r.stdout)["devices"]}
    assert rows[str(cl_device)]["host_alignment"] == cl_device.host_alignment
    assert rows[str(cl_device)]["alignment"] == cl_device.alignment
    assert rows["cpu"]["host_alignment"] is None
    table = subprocess.run([sys.executable, "-m", "hostarray", "devices"], capture_output=True,
                           text=True, timeout=300).stdout
    assert table.splitlines()[0].split()[4:7] == ["alignment", "host", "align"]
    row = next(ln for ln in table.splitlines() if ln.startswith(str(cl_device))).split()
    assert row[4:8] == [str(cl_device.alignment), "B", str(cl_device.host_alignment), "B"]


MAKERS = {
    "arange": lambda: np.arange(N, dtype=np.float32),
    "linspace": lambda: np.linspace(0.0, 1.0, N, dtype=np.float32),
    "empty": lambda: np.empty(N, dtype=np.float32),
    "arange float64 [1:]": lambda: np.arange(N + 1, dtype=np.float64)[1:],
    "int32 4 bytes off 128": lambda: _off_by(4, dtype=np.int32),
    "float32 64 bytes off 128": lambda: _off_by(64),
    "uint8 1 byte off 128": lambda: _off_by(1, dtype=np.uint8),
    "complex128 16 bytes off 128": lambda: _off_by(16, dtype=np.complex128),
}


@pytest.mark.parametrize("make", MAKERS.values(), ids=MAKERS.keys())
def test_ordinary_numpy_arrays_are_shared_not_copied(cl_device, make) -> None:
    a = make()
    shareable = address_of(a) % host_requirement(cl_device, a.itemsize) == 0
    if cl_device.host_alignment == 1:  # PoCL (and the copied link): any element-aligned address
        assert shareable
    if not shareable:
        pytest.skip(f"{cl_device} needs {cl_device.host_alignment}-byte aligned host memory")
    x = ha.asarray(a, device=cl_device)
    assert np.shares_memory(np.asarray(x), a)
    y = ha.asarray(a, device=cl_device, copy=False)  # no copy needed: no error
    assert np.shares_memory(np.asarray(y), a)
    link = hostptr.attach(x, cl_device) if not x._s.buffers else hostptr.host_link(x, cl_device)
    assert link.address == address_of(a)  # the buffer is over the numpy memory itself


def test_numpy_arrays_off_the_sub_buffer_alignment_are_shared(cl_device) -> None:
    for skew in (4, 16, 64):
        a = _off_by(skew)
        assert address_of(a) % cl_device.alignment  # the old requirement refused these
        x = hostptr.of_numpy(cl_device, a)
        assert hostptr.host_link(x, cl_device).address == address_of(a)


def test_original_array_sees_kernel_writes(cl_device, prg) -> None:
    a = _off_by(4)
    a[:] = 1.0
    x = ha.asarray(a, device=cl_device)
    prg.add(N, x, 2.0)
    assert float(x[0]) == 3.0  # the host reads
    np.testing.assert_array_equal(a, np.full(N, 3.0, np.float32))


def test_user_writes_to_the_original_reach_the_next_kernel(cl_device, prg) -> None:
    a = np.arange(N, dtype=np.float32)
    x = ha.asarray(a, device=cl_device)
    prg.add(N, x, 1.0)
    np.testing.assert_array_equal(a, np.arange(N) + 1)  # escaped: acquired after the launch
    a[:] = 10.0  # behind hostarray's back
    prg.add(N, x, 1.0)  # escaped: published before the launch
    np.testing.assert_array_equal(np.asarray(x), np.full(N, 11.0, np.float32))
    np.testing.assert_array_equal(a, np.full(N, 11.0, np.float32))


def test_laziness_returns_when_the_user_drops_the_array(cl_device, prg) -> None:
    a = _off_by(4)
    x = ha.asarray(a, device=cl_device)
    assert np.shares_memory(x._a, a)
    prg.add(N, x, 1.0)
    ha.reset_stats()
    prg.add(N, x, 1.0)
    prg.add(N, x, 1.0)
    assert _stats() == (2, 2)  # the user may write a: publish before, acquire after each
    del a
    gc.collect()
    ha.reset_stats()
    prg.add(N, x, 1.0)  # what the user wrote before dropping a is published, once
    prg.add(N, x, 1.0)
    assert _stats() == (1, 0)  # nobody else holds the memory: lazy again
    assert float(x[5]) == 5.0
    assert _stats() == (1, 1)


def test_a_copy_is_lazy_while_the_user_holds_the_original(cl_device, prg) -> None:
    a = _off_by(4)
    shared = ha.asarray(a, device=cl_device)
    x = ha.asarray(a, device=cl_device, copy=True)
    assert not np.shares_memory(x._a, a) and np.shares_memory(shared._a, a)
    ha.reset_stats()
    prg.add(N, x, 1.0)
    prg.add(N, x, 1.0)
    assert _stats() == (1, 0)
    prg.add(N, shared, 1.0)
    prg.add(N, shared, 1.0)
    assert _stats() == (3, 2)  # the shared one: publish before, acquire after, each launch
    assert (a == 2).all()


def test_below_the_element_size_is_refused_or_copied(cl_device, prg) -> None:
    buf = np.zeros(4 * N + 8, np.uint8)
    off = (1 - address_of(buf)) % 4
    a = np.frombuffer(buf, np.float32, count=N, offset=off)  # 1 byte past a float32 boundary
    assert address_of(a) % 4 == 1
    a[:] = 7.0
    with pytest.raises(hostptr.Refused) as e:
        hostptr.of_numpy(cl_device, a)
    r = e.value.reason
    assert r.kind == "alignment" and r.address == address_of(a)
    assert r.required == max(cl_device.host_alignment, 4)
    x = ha.asarray(a, device=cl_device)  # copy=None: copied into aligned storage
    assert not np.shares_memory(x._a, a)
    with pytest.raises(ValueError, match="alignment.*copy=None"):
        ha.asarray(a, device=cl_device, copy=False)
    with pytest.raises(BufferError, match="alignment"):
        ha.from_dlpack(a, device=cl_device, copy=False)
    prg.add(N, x, 1.0)
    assert float(x[0]) == 8.0 and a[0] == 7.0
    h = ha.asarray(a)  # on the host it is adopted as it is; attaching it is refused
    with pytest.raises(hostptr.Refused):
        hostptr.attach(h, cl_device)
    assert h.to_device(cl_device)._s is not h._s  # and to_device copies


# -- class 14: one decision, one type per fault -------------------------------------------------

def test_zero_size_arrays_are_decided_once(cl_device, prg) -> None:
    a = np.zeros(0, np.float32)
    x = ha.asarray(a, device=cl_device, copy=False)  # nothing to copy: kept as it is
    h = ha.asarray(a)
    assert h.to_device(cl_device)._s is h._s  # the same decision in to_device...
    assert ha.from_dlpack(h, device=cl_device, copy=False)._s is h._s  # ...and from_dlpack
    for attach in (lambda: hostptr.attach(x, cl_device), lambda: hostptr.of_numpy(cl_device, a),
                   lambda: prg.fill(1, x, 1.0)):
        with pytest.raises(hostptr.Refused) as e:
            attach()
        assert e.value.reason.kind == "size" and e.value.reason.size == 0
    assert x._s.buffers == {} and ha.stats().launches == 0


@pytest.mark.parametrize("view, error", [
    (lambda x: x[::2], hostptr.NotHostBacked),
    (lambda x: x[::-1], hostptr.NotHostBacked),
    (lambda x: x[1:65], hostptr.Refused),
])
def test_a_fault_has_one_type_in_launches_and_cl_buffer(cl_device, prg, view, error) -> None:
    x = ha.zeros(N, dtype=ha.float32, device=cl_device)
    with pytest.raises(error) as e1:
        prg.fill(64, view(x), 1.0)
    with pytest.raises(error) as e2:
        with hostptr.cl_buffer(view(x), cl_device, "rw"):
            pass
    if error is hostptr.Refused:
        assert e1.value.reason.kind == e2.value.reason.kind == "alignment"
    if error is hostptr.NotHostBacked:
        with pytest.raises(error):
            hostptr.of_numpy(cl_device, view(np.zeros(N, np.float32)))
    assert ha.stats().launches == 0 and x._s.buffers == {}


def test_kernels_use_the_one_decision_not_private_hostptr_names() -> None:
    import hostarray._sharing as sharing
    import hostarray.kernels as kernels

    assert kernels.ensure_buffer is sharing.ensure_buffer is hostptr.ensure_buffer
    assert not hasattr(hostptr, "_check_shareable")


# -- class 3: one memory range, one coherence state ---------------------------------------------

def test_adopting_an_export_gives_the_same_state(cl_device, prg) -> None:
    x = ha.zeros(N, dtype=ha.float32, device=cl_device)
    y = ha.asarray(np.asarray(x), device=cl_device)
    assert y._s is x._s
    prg.fill(N, y, 5.0)
    np.testing.assert_array_equal(np.asarray(x[:4]), [5.0] * 4)


def test_adopting_a_view_of_an_export_is_a_view_of_the_storage(cl_device, prg) -> None:
    x = ha.zeros(N, dtype=ha.float32, device=cl_device)
    y = ha.asarray(np.asarray(x)[256:512], device=cl_device)
    assert y._s is x._s and y.shape == (256,)
    prg.fill(256, y, 5.0)
    want = np.zeros(N, np.float32)
    want[256:512] = 5.0
    np.testing.assert_array_equal(np.asarray(x), want)


def test_the_adopted_view_does_not_keep_the_export_alive(cl_device, prg) -> None:
    x = ha.zeros(N, dtype=ha.float32, device=cl_device)
    y = ha.asarray(np.asarray(x), device=cl_device)  # the export dies at once
    gc.collect()
    assert not x._s.escaped
    prg.fill(N, y, 1.0)
    ha.reset_stats()
    prg.add(N, y, 1.0)
    prg.add(N, x, 1.0)
    assert _stats() == (0, 0)  # lazy: one state, not escaped
    assert float(y[0]) == 3.0 and float(x[0]) == 3.0


def test_adopting_one_numpy_array_twice_gives_one_state(cl_device, prg) -> None:
    a = np.zeros(N, np.float32)
    y1 = ha.asarray(a, device=cl_device)
    y2 = ha.asarray(a, device=cl_device)
    h = ha.asarray(a)  # on the host too: to_device later gives the same storage
    assert y1._s is y2._s is h._s
    prg.fill(N, y2, 5.0)
    np.testing.assert_array_equal(np.asarray(y1[:4]), [5.0] * 4)
    z = hostptr.of_numpy(cl_device, a)
    assert z._s is y1._s


def test_adopting_twice_after_the_user_dropped_it_stays_lazy_and_coherent(cl_device,
                                                                          prg) -> None:
    a = np.zeros(N, np.float32)
    y1 = ha.asarray(a, device=cl_device)
    y2 = ha.asarray(np.asarray(y1), device=cl_device)  # y1's export: the same storage
    del a
    gc.collect()
    prg.fill(N, y2, 5.0)
    ha.reset_stats()
    prg.add(N, y1, 1.0)
    assert _stats() == (0, 0)
    np.testing.assert_array_equal(np.asarray(y2[:4]), [6.0] * 4)


def test_from_dlpack_of_an_export_gives_the_same_state(cl_device, prg) -> None:
    x = ha.zeros(N, dtype=ha.float32, device=cl_device)
    y = ha.from_dlpack(np.asarray(x), device=cl_device)  # an export (its holder is the base)
    assert y._s is x._s
    consumed = np.from_dlpack(x)  # a DLPack re-export: the holder is no longer its base
    z = ha.from_dlpack(consumed, device=cl_device, copy=False)
    assert z._s is x._s
    del consumed
    prg.fill(N, z, 5.0)
    np.testing.assert_array_equal(np.asarray(x[:4]), [5.0] * 4)
    np.testing.assert_array_equal(np.asarray(y[:4]), [5.0] * 4)


def test_read_only_exports_stay_read_only(cl_device, prg) -> None:
    x = ha.zeros(N, dtype=ha.float32, device=cl_device)
    e = np.asarray(x)
    e.flags.writeable = False
    y = ha.asarray(e, device=cl_device)
    assert y._s is x._s and not y._a.flags.writeable
    with pytest.raises(ValueError, match="read-only"):
        y[0] = 1.0
    with pytest.raises(hostptr.BadLaunch, match="read-only"):
        prg.fill(N, y, 1.0)
    x[0] = 2.0  # x itself stays writeable
    assert float(y[0]) == 2.0


def test_partly_overlapping_user_memory_stays_coherent(cl_device, prg) -> None:
    a = np.zeros(2 * N, np.float32)
    y1 = ha.asarray(a[:N], device=cl_device)
    y2 = ha.asarray(a[N // 2:N // 2 + N], device=cl_device)  # half inside y1's storage
    assert y1._s is not y2._s  # not contained: a storage of its own, escaped like y1's
    prg.fill(N, y2, 5.0)
    np.testing.assert_array_equal(np.asarray(y1[N // 2:]), np.full(N // 2, 5.0, np.float32))
    prg.fill(N, y1, 1.0)
    np.testing.assert_array_equal(np.asarray(y2[:N // 2]), np.ones(N // 2, np.float32))
    np.testing.assert_array_equal(np.asarray(y2[N // 2:]), np.full(N // 2, 5.0, np.float32))


# -- class 4: install over memory that overlaps x's ---------------------------------------------

def _snapshot(x: ha.HostPtrArray) -> tuple:
    return np.array(x, copy=True).tobytes(), dict(x._s.buffers), x._s, address_of(x._a)


def test_install_refuses_memory_overlapping_x_without_being_it(cl_device) -> None:
    big = np.arange(4 * N, dtype=np.float32)
    x = ha.asarray(big[:256])
    before = _snapshot(x)
    with pytest.raises(ValueError, match="overlaps x's memory.*np.asarray\\(x\\)"):
        hostptr.install(x, cl_device, big[32:288])
    assert _snapshot(x) == before
    with pytest.raises(hostptr.NotHostBacked, match="reversed"):
        hostptr.install(x, cl_device, big[:256][::-1])
    with pytest.raises(hostptr.NotHostBacked):
        hostptr.install(x, cl_device, np.asarray(x)[::-1])
    assert _snapshot(x) == before
    link = hostptr.install(x, cl_device, big[:256])  # exactly x's memory: attaches
    assert link.address == address_of(big) and link.nbytes == 256 * 4
    np.testing.assert_array_equal(np.asarray(x)[:3], [0.0, 1.0, 2.0])


def test_install_of_separate_memory_takes_it_over(cl_device, prg) -> None:
    x = ha.zeros(N, dtype=ha.float32)
    fresh = np.full(N, 4.0, np.float32)  # the user's memory, still held
    hostptr.install(x, cl_device, fresh)
    assert hostptr.host_link(x, cl_device).address == address_of(fresh)
    x = x.to_device(cl_device)
    prg.add(N, x, 1.0)
    np.testing.assert_array_equal(fresh, np.full(N, 5.0, np.float32))  # escaped: acquired


def test_install_of_another_attached_arrays_memory_is_refused(cl_device) -> None:
    other = ha.zeros(N, dtype=ha.float32)
    hostptr.attach(other, cl_device)
    x = ha.zeros(N, dtype=ha.float32)
    before = _snapshot(x)
    with pytest.raises(hostptr.BufferExists) as e:
        hostptr.install(x, cl_device, np.asarray(other))
    assert _snapshot(x) == before
    # the message says whose buffer is in the way (not x's: x has none) and what to do
    assert "another array" in str(e.value) and "free_buffer(other" in str(e.value)
    assert e.value.array_id == id(x) and e.value.why
    y = ha.zeros(N, dtype=ha.float32)
    free = ha.zeros(N, dtype=ha.float32)
    hostptr.install(y, cl_device, np.asarray(free))  # another array's memory: its state
    assert y._s is free._s


@pytest.mark.parametrize("obj", [None, "ab", [None, 1]])
def test_copy_false_of_what_no_copy_could_hold_says_that(obj) -> None:
    # it said "can't be shared without a copy; pass copy=None", and copy=None then raised this
    with pytest.raises(TypeError, match="bool and numeric data only"):
        ha.asarray(obj, copy=False)
    with pytest.raises(TypeError, match="bool and numeric data only"):
        ha.asarray(obj)


# -- issue 20 (3): memory the user still reaches through another object is escaped -------------

def _reached_through(kind: str, tmp_path) -> tuple[np.ndarray, Any, Any]:
    """``(memory to adopt, what the user keeps, the user's float32 view of it)``: the user
    drops every other name of the memory."""
    nbytes = 4 * N
    if kind == "memoryview of a dropped bytearray":
        keep = memoryview(bytearray(nbytes))
        return np.frombuffer(keep, np.float32), keep, np.frombuffer(keep, np.float32)
    if kind == "a slice of a memoryview":
        keep = memoryview(bytearray(nbytes))[:]
        return np.frombuffer(keep[:], np.float32), keep, np.frombuffer(keep, np.float32)
    if kind == "a cast memoryview":
        keep = memoryview(bytearray(nbytes)).cast("f")
        return np.frombuffer(keep, np.float32), keep, np.asarray(keep)
    if kind == "ndarray under a from_buffer ctypes array":
        keep = np.zeros(N, np.float32)
        c = (ctypes.c_float * N).from_buffer(keep)
        return np.ctypeslib.as_array(c), keep, keep
    if kind == "from_buffer ctypes array":
        c = (ctypes.c_float * N).from_buffer(np.zeros(N, np.float32))
        return np.ctypeslib.as_array(c), c, np.ctypeslib.as_array(c)
    if kind == "own-memory ctypes array":
        c = (ctypes.c_float * N)()
        return np.ctypeslib.as_array(c), c, np.ctypeslib.as_array(c)
    if kind == "ctypes structure of a ctypes field":
        class S(ctypes.Structure):
            _fields_ = [("pad", ctypes.c_float), ("a", ctypes.c_float * N)]
        st = S()
        return np.ctypeslib.as_array(st.a), st, np.ctypeslib.as_array(st.a)
    if kind == "bytearray":
        keep = bytearray(nbytes)
        return np.frombuffer(keep, np.float32), keep, np.frombuffer(keep, np.float32)
    if kind == "another mapping of the file":
        path = tmp_path / "m.bin"
        path.write_bytes(bytes(nbytes))
        with open(path, "r+b") as f:
            mapped = mmap.mmap(f.fileno(), nbytes)  # dropped below: only the other stays
            keep = mmap.mmap(f.fileno(), nbytes)
        return np.frombuffer(mapped, np.float32), keep, np.frombuffer(keep, np.float32)
    if kind == "DLPack capsule":
        keep = np.zeros(N, np.float32)
        return np.from_dlpack(keep), keep, keep
    raise AssertionError(kind)


REACHED = ["memoryview of a dropped bytearray", "a slice of a memoryview", "a cast memoryview",
           "ndarray under a from_buffer ctypes array", "from_buffer ctypes array",
           "own-memory ctypes array", "ctypes structure of a ctypes field", "bytearray",
           "another mapping of the file", "DLPack capsule"]


@pytest.fixture(params=["auto", "copied"])
def linked(request, cl_device):
    """``cl_device`` with the buffers made inside on its own link, then on the copied one
    (where a missed publish or acquire is a wrong value)."""
    from hostarray.bench import forced_link

    with forced_link(cl_device, None if request.param == "auto" else "copied"):
        yield cl_device
    ha.clear_pool()


@pytest.mark.parametrize("kind", REACHED)
def test_memory_the_user_reaches_through_another_object_is_escaped(linked, prg, kind,
                                                                   tmp_path) -> None:
    # Issue 20 (3): the user's memoryview shares numpy's managed buffer (the bytearray's
    # count does not show it), a from_buffer ctypes array's memory is another object's, an
    # mmap is written by other mappings: each was taken for memory nobody holds (lazy), so
    # the user read the old 0.0 and their 50.0 never reached the kernel (copied link).
    a, keep, user = _reached_through(kind, tmp_path)
    x = ha.asarray(a, device=linked)
    # (another mapping of the file has other addresses over the same pages)
    assert np.shares_memory(x._a, user) or kind == "another mapping of the file"
    del a
    gc.collect()
    prg.add(N, x, 1.0)
    assert user[0] == 1.0 and user[N - 1] == 1.0  # escaped: acquired after the launch
    user[0] = 50.0  # behind hostarray's back
    prg.add(N, x, 1.0)  # escaped: published before the launch
    assert float(x[0]) == 51.0 and user[0] == 51.0 and user[1] == 2.0
    del keep, user


def _unreached(kind: str) -> np.ndarray:
    """Memory nobody but the returned array reaches."""
    if kind == "numpy array":
        return np.zeros(N, np.float32)
    if kind == "bytearray":
        return np.frombuffer(bytearray(4 * N), np.float32)
    if kind == "dropped memoryview":
        return np.frombuffer(memoryview(bytearray(4 * N)), np.float32)
    if kind == "own-memory ctypes array":
        return np.ctypeslib.as_array((ctypes.c_float * N)())
    if kind == "from_buffer ctypes array of a dropped array":
        return np.ctypeslib.as_array((ctypes.c_float * N).from_buffer(np.zeros(N, np.float32)))
    if kind == "field of a dropped ctypes structure":
        class S(ctypes.Structure):
            _fields_ = [("pad", ctypes.c_float), ("a", ctypes.c_float * N)]
        return np.ctypeslib.as_array(S().a)
    raise AssertionError(kind)


@pytest.mark.parametrize("kind", ["numpy array", "bytearray", "dropped memoryview",
                                  "own-memory ctypes array",
                                  "from_buffer ctypes array of a dropped array",
                                  "field of a dropped ctypes structure"])
def test_memory_nobody_else_reaches_stays_lazy(linked, prg, kind) -> None:
    x = ha.asarray(_unreached(kind), device=linked)
    gc.collect()
    prg.add(N, x, 1.0)
    ha.reset_stats()
    prg.add(N, x, 1.0)
    prg.add(N, x, 1.0)
    assert _stats() == (0, 0)  # nobody else holds the memory: lazy
    assert float(x[5]) == 3.0


@pytest.mark.parametrize("kind", ["weakref.ref", "WeakValueDictionary"])
def test_memory_the_user_reaches_through_a_weak_reference_is_escaped(linked, prg,
                                                                     kind) -> None:
    # a weak reference hands a strong one back at any time: the adopted array was taken
    # for memory nobody holds (lazy), so w()[0] read 0.0 after a kernel and a write through
    # it was lost (copied link; a race on the shared one)
    import weakref

    a = np.zeros(N, np.float32)
    if kind == "weakref.ref":
        ref = weakref.ref(a)

        def user() -> np.ndarray:
            return ref()
    else:
        table: weakref.WeakValueDictionary = weakref.WeakValueDictionary(a=a)

        def user() -> np.ndarray:
            return table["a"]
    x = ha.asarray(a, device=linked)
    del a
    gc.collect()
    prg.add(N, x, 1.0)
    assert user()[0] == 1.0 and user()[N - 1] == 1.0  # escaped: acquired after the launch
    user()[0] = 50.0  # behind hostarray's back
    prg.add(N, x, 1.0)  # escaped: published before the launch
    assert float(x[0]) == 51.0 and user()[1] == 2.0


# -- adopted memory stays coherent while the user holds its owner ----------------------------------

def host_copy(x: Any) -> np.ndarray:
    return np.array(x, copy=True)


def device_sees(prg, x) -> np.ndarray:
    """What a kernel reads from ``x`` (copied into a fresh array by the ``cp`` kernel)."""
    y = ha.zeros(x.shape, dtype=ha.float32, device=prg.device)
    prg.cp(x.size, x, y)
    return host_copy(y)


ADOPT = {
    "ha.asarray": lambda a, dev: ha.asarray(a, device=dev),
    "ha.from_dlpack": lambda a, dev: ha.from_dlpack(a, device=dev),
    "asarray(memoryview)": lambda a, dev: ha.asarray(memoryview(a), device=dev, copy=False),
    "hostptr.of_numpy": lambda a, dev: hostptr.of_numpy(dev, a),
}


@pytest.mark.parametrize("adopt", list(ADOPT.values()), ids=list(ADOPT))
def test_adopted_memory_held_by_the_user_sees_launches_and_host_writes(
        prg, cl_device, adopt) -> None:
    """Bug 3 (t36): memory adopted with ``ha.from_dlpack(a, device=dev)`` or
    ``ha.asarray(memoryview(a), copy=False)`` while the user keeps ``a``: a launch's writes are
    in ``a`` when it returns, and the user's later writes to ``a`` reach the next launch."""
    a = np.zeros(16, np.float32)
    x = adopt(a, cl_device)
    assert np.shares_memory(np.asarray(x), a)
    gc.collect()
    prg.add(16, x, 1.0)
    assert a.tolist() == [1.0] * 16  # numpy model: the kernel wrote a
    a[:] = 10.0  # the user keeps writing a
    prg.add(16, x, 1.0)
    assert a.tolist() == [11.0] * 16
    np.testing.assert_array_equal(host_copy(x), np.full(16, 11.0, np.float32))
    a[3] = -5.0  # and a host write through a alone is what a kernel sees
    expected = np.full(16, 11.0, np.float32)
    expected[3] = -5.0
    np.testing.assert_array_equal(device_sees(prg, x), expected)


@pytest.mark.parametrize("adopt", list(ADOPT.values()), ids=list(ADOPT))
def test_adopted_memory_held_by_the_user_is_final_when_a_slow_launch_returns(
        prg, cl_device, adopt) -> None:
    """Bug 3 (t37): the launch on escaped memory returns only when the kernel is done (on a
    shared link too), so a numpy write right after it is not overwritten by the kernel."""
    a = np.zeros(64, np.float32)
    x = adopt(a, cl_device)
    gc.collect()
    prg.slowadd(64, x, 1.0, np.int32(1_000_000))
    assert a[0] == 1.0  # the launch's writes are in a when it returns
    a[:] = 10.0
    np.testing.assert_array_equal(host_copy(x), np.full(64, 10.0, np.float32))
    assert a.tolist() == [10.0] * 64


def _owners() -> dict[str, tuple[Callable[[], Any], Callable[[Any], None]]]:
    """(make the owner of 16 float32 zeros, write 5.0 everywhere through the owner)."""
    five = struct.pack("16f", *[5.0] * 16)

    def fill_items(o: Any) -> None:
        for i in range(16):
            o[i] = 5.0

    return {
        "bytearray": (lambda: bytearray(64), lambda o: o.__setitem__(slice(0, 64), five)),
        "bytearray+new-frombuffer": (
            lambda: bytearray(64),
            lambda o: np.frombuffer(o, np.float32).__setitem__(Ellipsis, 5.0)),
        "array.array": (lambda: array.array("f", [0.0] * 16), fill_items),
        "ctypes": (lambda: (ctypes.c_float * 16)(), fill_items),
        "mmap": (lambda: mmap.mmap(-1, 64), lambda o: o.__setitem__(slice(0, 64), five)),
        "numpy": (lambda: np.zeros(16, np.float32), lambda o: o.__setitem__(Ellipsis, 5.0)),
    }


@pytest.mark.parametrize("owner", list(_owners()), ids=list(_owners()))
def test_frombuffer_of_an_owner_object_stays_coherent(prg, cl_device, owner) -> None:
    """Bug 3 (t6): ``ha.asarray(np.frombuffer(owner))`` for a bytearray, array.array, ctypes
    array, mmap or numpy owner; the numpy array is dropped, the owner kept and written.
    numpy model: the owner's memory is the array (each launch adds 1 to what is there)."""
    make, write = _owners()[owner]
    o = make()
    x = ha.asarray(np.frombuffer(o, np.float32), device=cl_device)
    assert np.shares_memory(np.asarray(x), np.frombuffer(o, np.float32))
    gc.collect()
    prg.add(16, x, 1.0)
    assert float(x[0]) == 1.0  # the host looked (acquire)
    assert np.frombuffer(o, np.float32).tolist() == [1.0] * 16
    write(o)  # the user writes the memory through its owner
    prg.add(16, x, 1.0)
    np.testing.assert_array_equal(host_copy(x), np.full(16, 6.0, np.float32))
    np.testing.assert_array_equal(np.frombuffer(o, np.float32), np.full(16, 6.0, np.float32))
    write(o)  # again, with no host look in between: the kernel sees it
    np.testing.assert_array_equal(device_sees(prg, x), np.full(16, 5.0, np.float32))
    if isinstance(o, mmap.mmap):
        del x
        gc.collect()
        with contextlib.suppress(BufferError):  # a view may still be alive somewhere
            o.close()
