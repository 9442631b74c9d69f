"""Regressions from an adversarial review of region-granular coherence (per byte range).

Each test runs real kernels on views of one array and compares every observed value with a
plain numpy model of the same steps, and ``ha.stats()`` where the counters are the point.  Run
it on the default link and again with ``HOSTARRAY_LINK=copied`` (bytes really move there: a
missed publish or acquire is a wrong value, and the two links must agree).
"""

from __future__ import annotations

import gc
import pickle
import sys
import threading
import warnings
from typing import Any

import numpy as np
import pytest

import hostarray as ha
from hostarray import hostptr

pytestmark = pytest.mark.device

SRC = r"""
__kernel void add(__global float *x, const float v) { x[get_global_id(0)] += v; }
__kernel void addi(__global int *x, const int v) { x[get_global_id(0)] += v; }
__kernel void fill(__global float *x, const float v) { x[get_global_id(0)] = v; }
"""


@pytest.fixture(scope="module")
def prg(cl_device: ha.Device) -> ha.Program:
    return ha.Program(SRC, device=cl_device)


@pytest.fixture()
def unit(cl_device: ha.Device) -> int:
    """float32 elements per sub-buffer alignment unit (views start on multiples of it)."""
    return cl_device.alignment // 4


def device_newest(prg: ha.Program, dev: ha.Device, n: int) -> tuple[ha.HostPtrArray, np.ndarray]:
    """An array whose newest bytes are all on the device (a kernel wrote them, nobody
    looked), and its numpy model."""
    x = ha.asarray(np.arange(n, dtype=np.float32), device=dev)
    m = np.arange(n, dtype=np.float32)
    prg.add(n, x, 1.0)
    m += 1
    return x, m


# -- a host write into a view that raises part-way ----------------------------------------------

def _str_cast(a: Any, u: int) -> None:
    a[u:u + 4] = np.array(["1", "2", "x", "4"])  # numpy parses "1", "2", then raises


def _copyto_str(a: Any, u: int) -> None:
    np.copyto(a[u:u + 4], np.array(["1", "2", "x", "4"]), casting="unsafe")


def _overflow_cast(a: Any, u: int) -> None:
    with np.errstate(over="raise"):  # numpy casts every element, then raises
        a[u:u + 4] = np.array([1.0, 2.0, 1e300, 4.0])


def _ufunc_divide(a: Any, u: int) -> None:
    with np.errstate(divide="raise"):  # the ufunc writes out=, then raises
        np.divide(np.ones(4, np.float32), np.array([1, 0, 1, 1], np.float32), out=a[u:u + 4])


def _ufunc_warning_error(a: Any, u: int) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # numpy's RuntimeWarning, after the write
        np.log(np.array([1, -1, 1, 1], np.float32), out=a[u:u + 4])


def _scalar_overflow(a: Any, u: int) -> None:
    with np.errstate(over="raise"):  # the scalar is converted first: nothing is written
        a[u:u + 4] = 1e300


@pytest.mark.parametrize("write", [_str_cast, _copyto_str, _overflow_cast, _ufunc_divide,
                                   _ufunc_warning_error, _scalar_overflow],
                         ids=["str_cast", "copyto_str", "overflow_cast", "ufunc_divide",
                              "ufunc_warning_error", "scalar_overflow"])
def test_view_write_that_raises_part_way_keeps_what_numpy_wrote(prg, cl_device, unit,
                                                                 write) -> None:
    """A write into a contiguous view skips the acquire of its stale device bytes (a whole
    overwrite).  numpy may raise after writing some or all elements (a string that does
    not parse, a floating-point error made an exception): on a copied link the device's
    old bytes then won and numpy's writes were lost, while the shared link kept them."""
    u = unit
    x, m = device_newest(prg, cl_device, 4 * u)
    with pytest.raises(Exception) as got:
        write(x, u)
    with pytest.raises(got.type):
        write(m, u)
    np.testing.assert_array_equal(np.array(x, copy=True), m)
    prg.add(4 * u, x, 1.0)  # the device sees the same bytes
    np.testing.assert_array_equal(np.array(x, copy=True), m + 1)


def test_int_view_write_with_invalid_cast_raised_keeps_numpy_writes(prg, cl_device,
                                                                     unit) -> None:
    y = ha.asarray(np.arange(4 * unit, dtype=np.int32), device=cl_device)
    n = np.arange(4 * unit, dtype=np.int32)
    prg.addi(4 * unit, y, 1)
    n += 1
    v = np.array([1.0, np.nan, 3.0, 4.0])
    for a in (y, n):
        with pytest.raises(FloatingPointError), np.errstate(invalid="raise"):
            a[unit:unit + 4] = v
    np.testing.assert_array_equal(np.array(y, copy=True), n)


def test_whole_view_overwrite_still_skips_the_acquire(prg, cl_device, unit) -> None:
    """The fix must keep the optimisation where nothing can raise late."""
    x, m = device_newest(prg, cl_device, 4 * unit)
    ha.reset_stats()
    x[unit:2 * unit] = 5.0
    x[2 * unit:3 * unit] = np.full(unit, 6.0, np.float32)
    np.add(np.ones(unit, np.float32), 1, out=x[3 * unit:])
    assert ha.stats().acquires == 0
    m[unit:2 * unit], m[2 * unit:3 * unit], m[3 * unit:] = 5, 6, 2
    np.testing.assert_array_equal(np.array(x, copy=True), m)


def test_code_numpy_runs_during_a_view_write_reads_what_numpy_wrote(prg, cl_device, unit,
                                                                    monkeypatch) -> None:
    """numpy reports a floating-point warning after writing ``out=``; a replaced
    ``warnings.showwarning`` (logging.captureWarnings, an application's hook) that reads
    the array being written acquired the view's stale device bytes over what numpy had
    just written (copied link: the old 34.0 where numpy wrote nan, for the reader and
    for good)."""
    u = unit
    x, m = device_newest(prg, cl_device, 4 * u)
    seen: list[float] = []

    def show(*args: Any, **kwargs: Any) -> None:
        seen.append(float(x[u + 1]))

    with warnings.catch_warnings():
        warnings.simplefilter("always")
        monkeypatch.setattr(warnings, "showwarning", show)
        np.log(np.array([1, -1, 1, 1], np.float32), out=x[u:u + 4])
    with np.errstate(invalid="ignore"):
        np.log(np.array([1, -1, 1, 1], np.float32), out=m[u:u + 4])
    assert len(seen) == 1 and np.isnan(seen[0])
    np.testing.assert_array_equal(np.array(x, copy=True), m)


# -- raw views escape only their own range --------------------------------------------------------

def test_raw_view_of_one_part_costs_nothing_to_launches_on_another(prg, cl_device,
                                                                   unit) -> None:
    """A raw view of x[:u] made every launch on x[2u:3u] acquire its range after (and wait
    for the kernel), as if the whole array had escaped."""
    u = unit
    x, m = device_newest(prg, cl_device, 4 * u)
    prg.add(u, x[2 * u:3 * u], 1.0)
    m[2 * u:3 * u] += 1
    raw = np.asarray(x[:u])
    ha.reset_stats()
    for _ in range(3):
        prg.add(u, x[2 * u:3 * u], 1.0)
        m[2 * u:3 * u] += 1
    s = ha.stats()
    assert (s.publishes, s.acquires, s.waits) == (0, 0, 0)
    raw[0] = -1.0  # the raw view still works both ways
    m[0] = -1.0
    prg.add(4 * u, x, 1.0)
    m += 1
    np.testing.assert_array_equal(raw, m[:u])
    del raw
    np.testing.assert_array_equal(np.array(x, copy=True), m)


def test_raw_view_sees_a_launch_on_an_overlapping_part(prg, cl_device, unit) -> None:
    """...while a launch that touches the raw view's bytes still publishes them before and
    acquires them after (only the overlap)."""
    u = unit
    x, m = device_newest(prg, cl_device, 4 * u)
    raw = np.asarray(x[u - 2:u + 2])  # the last two elements of unit 0, the first two of 1
    raw[:] = 7.0
    m[u - 2:u + 2] = 7.0
    ha.reset_stats()
    prg.add(u, x[u:2 * u], 1.0)  # overlaps raw[2:]
    m[u:2 * u] += 1
    np.testing.assert_array_equal(raw, m[u - 2:u + 2])  # no host access needed to see it
    s = ha.stats()
    assert (s.publishes, s.acquires) == (1, 1)
    if cl_device.link == "copied":  # only the overlap moved, each way
        assert (s.bytes_published, s.bytes_acquired) == (8, 8)
    raw[3] = 3.0
    m[u + 1] = 3.0
    prg.add(u, x[u:2 * u], 1.0)
    m[u:2 * u] += 1
    np.testing.assert_array_equal(raw, m[u - 2:u + 2])
    del raw
    np.testing.assert_array_equal(np.array(x, copy=True), m)


# -- pickling a view with out-of-band buffers ----------------------------------------------------

def test_pickle_out_of_band_buffer_of_a_view_is_not_a_hidden_raw_view(prg, cl_device,
                                                                       unit) -> None:
    """Protocol 5 hands numpy's ``PickleBuffer`` to ``buffer_callback``: it was a raw
    pointer into x's memory that no escape recorded, and unpickling made a second storage
    over the same bytes.  A kernel writing x afterwards was seen by the unpickled array on
    the shared link and not on the copied one; now it is a copy of the view when pickled,
    on every link, as an in-band pickle is."""
    u = unit
    x, m = device_newest(prg, cl_device, 4 * u)
    buffers: list[pickle.PickleBuffer] = []
    data = pickle.dumps(x[u:2 * u], protocol=5, buffer_callback=buffers.append)
    at_dump = m[u:2 * u].copy()
    prg.add(4 * u, x, 1.0)
    m += 1
    y = pickle.loads(data, buffers=buffers)
    assert y.device == cl_device
    assert not np.shares_memory(np.asarray(y), np.asarray(x))
    np.testing.assert_array_equal(np.array(y, copy=True), at_dump)
    np.testing.assert_array_equal(np.array(x, copy=True), m)
    # the buffers the callback kept are y's memory: writes through them reach y's kernels
    held = np.frombuffer(buffers[0], dtype=np.float32)
    held[0] = -5.0
    prg.add(u, y, 1.0)
    assert float(y[0]) == -4.0
    assert held[0] == -4.0
    del held, buffers
    gc.collect()
    prg.add(u, y, 1.0)
    assert float(y[0]) == -3.0


# -- a raw cl_buffer block and a launch on an overlapping view ------------------------------------

def test_launch_overlapping_an_open_cl_buffer_block_is_refused(prg, cl_device, unit) -> None:
    """The launch retired (released) the sub-buffer the open block still used: the block's
    next command then went through a released memory object (on PoCL's copied link it
    landed in the launch's new sub-buffer: x[u:3u] got the fill meant for x[:2u]).  Now
    the launch is refused before anything moves, and the block keeps its buffer."""
    import pyopencl as cl

    u = unit
    x = ha.zeros(4 * u, dtype=ha.float32, device=cl_device)
    m = np.zeros(4 * u, np.float32)
    with hostptr.cl_buffer(x[:2 * u], cl_device, "rw") as buf:
        before = ha.stats()
        with pytest.raises(ha.errors.BadLaunch):
            prg.add(2 * u, x[u:3 * u], 1.0)
        assert ha.stats() == before
        prg.add(u, x[2 * u:3 * u], 1.0)  # a part the block's sub-buffer does not reach
        m[2 * u:3 * u] += 1
        cl.enqueue_fill_buffer(hostptr.queue(cl_device), buf, np.float32(4.0), 0, 8 * u)
        m[:2 * u] = 4.0
    np.testing.assert_array_equal(np.array(x, copy=True), m)
    prg.add(2 * u, x[u:3 * u], 1.0)  # once the block is over, the launch runs
    m[u:3 * u] += 1
    np.testing.assert_array_equal(np.array(x, copy=True), m)


def test_cl_buffer_blocks_on_overlapping_views(cl_device, unit) -> None:
    """The same for a second cl_buffer block; blocks on the same units share one."""
    import pyopencl as cl

    u = unit
    x = ha.zeros(4 * u, dtype=ha.float32, device=cl_device)
    q = hostptr.queue(cl_device)
    with hostptr.cl_buffer(x[:2 * u], cl_device, "w") as a:
        with pytest.raises(ha.errors.BadLaunch):
            with hostptr.cl_buffer(x[u:3 * u], cl_device, "w"):
                pass
        with hostptr.cl_buffer(x[:2 * u - 3], cl_device, "r") as b:
            assert b.int_ptr == a.int_ptr
        cl.enqueue_fill_buffer(q, a, np.float32(2.0), 0, 8 * u)
    with hostptr.cl_buffer(x[u:3 * u], cl_device, "rw") as c:
        cl.enqueue_fill_buffer(q, c, np.float32(3.0), 0, 8 * u)
    np.testing.assert_array_equal(np.array(x, copy=True),
                                  np.repeat(np.float32([2, 3, 3, 0]), u))


def test_failed_write_only_cl_buffer_block_invalidates_only_its_bytes(prg, cl_device,
                                                                      unit) -> None:
    """A "w" block on x[:u] that raised dropped the device's copy of the whole array: the
    next launch on x[3u:] published bytes the device already held."""
    u = unit
    x, m = device_newest(prg, cl_device, 4 * u)
    np.array(x, copy=True)  # host and device hold the same bytes everywhere
    x[:u] = 5.0  # the device's copy of x[:u] is stale: the block's buffer holds nothing
    m[:u] = 5.0
    with pytest.raises(RuntimeError), hostptr.cl_buffer(x[:u], cl_device, "w"):
        raise RuntimeError("raw code failed")
    ha.reset_stats()
    prg.add(u, x[3 * u:], 1.0)
    m[3 * u:] += 1
    assert ha.stats().publishes == 0
    prg.add(4 * u, x, 1.0)  # x[:u] is published again: the host's 5.0 counts
    m += 1
    np.testing.assert_array_equal(np.array(x, copy=True), m)


@pytest.mark.parametrize("access", ["w", "rw"])
@pytest.mark.parametrize("relaunch", [False, True], ids=["freed", "freed_and_relaunched"])
def test_free_buffer_inside_a_cl_buffer_block_loses_nothing(prg, cl_device, unit, access,
                                                            relaunch) -> None:
    """Freeing the buffer while a cl_buffer block used it left the block's exit recording
    its writes on a device that had no buffer any more: the next host read failed with
    ``AssertionError: coherence: no side holds the newest data`` (for good)."""
    import pyopencl as cl

    u = unit
    x, m = device_newest(prg, cl_device, 4 * u)
    with hostptr.cl_buffer(x[u:2 * u], cl_device, access) as buf:
        assert hostptr.free_buffer(x, cl_device)
        if relaunch:  # a new buffer, and a launch on another part, during the block
            prg.add(u, x[3 * u:], 1.0)
            m[3 * u:] += 1
        cl.enqueue_fill_buffer(hostptr.queue(cl_device), buf, np.float32(9.0), 0, 4 * u)
        m[u:2 * u] = 9.0
    np.testing.assert_array_equal(np.array(x, copy=True), m)
    prg.add(4 * u, x, 1.0)
    m += 1
    np.testing.assert_array_equal(np.array(x, copy=True), m)


def test_free_buffer_racing_cl_buffer_blocks_from_another_thread(prg, cl_device,
                                                                  unit) -> None:
    """The same race from another thread (free_buffer and a launch on another part, while
    one thread's blocks fill x[:u] and read it back): the reads raised AssertionError on
    the shared link and returned garbage on the copied one."""
    import pyopencl as cl

    u = unit
    x = ha.zeros(4 * u, dtype=ha.float32, device=cl_device)
    rounds = 200
    errors: list[BaseException] = []
    seen: list[tuple[int, float]] = []

    def blocks() -> None:
        try:
            for r in range(rounds):
                with hostptr.cl_buffer(x[:u], cl_device, "w") as buf:
                    cl.enqueue_fill_buffer(hostptr.queue(cl_device), buf, np.float32(r), 0,
                                           4 * u)
                seen.append((r, float(x[3])))
        except BaseException as e:
            errors.append(e)

    def frees() -> None:
        try:
            for _ in range(rounds):
                hostptr.free_buffer(x, cl_device)
                prg.add(u, x[2 * u:3 * u], 1.0)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=blocks), threading.Thread(target=frees)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert not any(t.is_alive() for t in threads), "deadlock"
    if errors:
        raise errors[0]
    assert seen == [(r, float(r)) for r in range(rounds)]
    m = np.zeros(4 * u, np.float32)
    m[:u] = rounds - 1
    m[2 * u:3 * u] = rounds
    np.testing.assert_array_equal(np.array(x, copy=True), m)


# -- explicit publish and acquire of a view -------------------------------------------------------

def test_explicit_publish_and_acquire_of_a_view_move_only_its_bytes(prg, cl_device,
                                                                    unit) -> None:
    """``acquire_device_writes(x[:u])`` acquired every stale byte of x, and
    ``publish_host_writes(x[:u])`` published all of x (on a copied link, the whole array
    each way for one unit)."""
    u = unit
    x, m = device_newest(prg, cl_device, 16 * u)
    ha.reset_stats()
    hostptr.acquire_device_writes(x[:u], cl_device)
    s = ha.stats()
    assert s.acquires == 1
    if cl_device.link == "copied":
        assert s.bytes_acquired == 4 * u
    np.testing.assert_array_equal(np.asarray(x[:u]), m[:u])  # nothing more to acquire
    assert ha.stats().acquires == 1
    x[:u] = 3.0
    m[:u] = 3.0
    ha.reset_stats()
    hostptr.publish_host_writes(x[u // 2:u + 2], cl_device)  # reaches device-newest bytes
    s = ha.stats()
    assert (s.publishes, s.acquires) == (1, 1)  # x[u:u + 2] acquired first: newest wins
    if cl_device.link == "copied":
        assert (s.bytes_published, s.bytes_acquired) == (4 * (u // 2 + 2), 8)
    ha.reset_stats()
    prg.add(16 * u, x, 1.0)  # only x[:u // 2] is still to publish
    m += 1
    assert ha.stats().publishes == 1
    if cl_device.link == "copied":
        assert ha.stats().bytes_published == 4 * (u // 2)
    np.testing.assert_array_equal(np.array(x, copy=True), m)


# -- a raw view that dies in the middle of a launch -----------------------------------------------

def test_raw_views_see_the_launch_when_another_dies_mid_launch(prg, cl_device, unit) -> None:
    """A raw view in a reference cycle dies when the collector runs, at any allocation:
    also inside a launch on the same array, whose thread already holds the storage's
    (re-entrant) lock.  Its end then changed the coherence state under the launch: it
    removed an entry of the list of escapes the launch was looping over, so a live raw
    view's range was skipped and, on a copied link, not acquired (the live view missed
    the kernel's result).  Here the last reference to such a view is dropped at each
    Python call the launch makes in turn (a profile hook), as the collector could."""
    n = 16 * unit
    x = ha.asarray(np.arange(n, dtype=np.float32), device=cl_device)
    m = np.arange(n, dtype=np.float32)

    def launch_dropping(dying: list[Any], at: int) -> int:
        calls = 0

        def hook(frame: Any, event: str, arg: Any) -> None:
            nonlocal calls
            if event == "call":
                calls += 1
                if calls == at:
                    dying.clear()  # the raw views' finalizers run here, inside the launch

        sys.setprofile(hook)
        try:
            prg.add(n, x, 1.0)
        finally:
            sys.setprofile(None)
        return calls

    total = 0
    at = 0
    while at <= total:  # every call of the launch (counted with the raw views alive)
        at += 1
        dying: list[Any] = []
        live: list[tuple[int, np.ndarray]] = []
        for j in range(6):  # dying and live raw views, alternating in the escapes
            a = (8 * j + 37 * at) % (n - 8)
            if j % 2:
                live.append((a, np.asarray(x[a:a + 8])))
                live[-1][1][:] = at
                m[a:a + 8] = at
            else:
                dying.append(np.asarray(x[a:a + 8]))
        total = max(total, launch_dropping(dying, at))
        m += 1
        for a, raw in live:
            np.testing.assert_array_equal(raw, m[a:a + 8], err_msg=f"call {at}, x[{a}:]")
        del live
    np.testing.assert_array_equal(np.array(x, copy=True), m)
