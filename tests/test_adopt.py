"""Adopting memory the user already has (issue 10), on the real device and on both links.

* ordinary numpy arrays are shared, not copied: the host-pointer requirement is a probed
  per-device fact, never less than the element size — not ``CL_DEVICE_MEM_BASE_ADDR_ALIGN``;
* one home decides "may this device use this memory", with one error type per fault;
* memory that already belongs to a storage gives a view of that storage (one state);
* ``hostptr.install`` refuses host memory that overlaps ``x``'s without being exactly it.
"""

from __future__ import annotations

import gc
import json
import subprocess
import sys

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
