"""Regressions for the bugs an adversarial review found (its reproducers were scripts t6 to t48).

Every test runs real kernels and checks hostarray against a numpy model of the same steps, and
against ``ha.stats()`` where the counters are the point.  The suite runs on the default link and
again with ``HOSTARRAY_LINK=copied``, where a lost acquire or publish gives a wrong value.
Threaded tests run the racy part in threads joined with a timeout: a deadlock fails the test
instead of hanging it.  Bug numbers follow the review's list.
"""

from __future__ import annotations

import array
import contextlib
import ctypes
import gc
import mmap
import struct
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from numpy.lib.stride_tricks import as_strided, sliding_window_view

import hostarray as ha
from hostarray import hostptr

pytestmark = pytest.mark.device

ROOT = Path(__file__).resolve().parents[1]
JOIN_TIMEOUT = 20.0  # seconds: a thread still alive then is deadlocked
STRESS_S = 1.5  # seconds of each randomized race (the deterministic tests do the real work)

SRC = r"""
__kernel void two(__global float *a, __global float *b) {
    int i = get_global_id(0); a[i] += 1.0f; b[i] += 1.0f; }
__kernel void setv(__global float *x) { int i = get_global_id(0); x[i] = 100.0f + i; }
__kernel void add(__global float *x, const float v) { x[get_global_id(0)] += v; }
__kernel void cp(__global const float *x, __global float *y) {
    int i = get_global_id(0); y[i] = x[i]; }
__kernel void swap_add(__global float *a, __global float *b, const float v) {
    int i = get_global_id(0); float t = a[i]; a[i] = b[i] + v; b[i] = t + v; }
__kernel void slowadd(__global float *x, const float v, const int spin) {
    int i = get_global_id(0); float acc = 1.0f;
    for (int k = 0; k < spin; ++k) acc = acc * 1.0000001f;
    x[i] += v + (acc > 1e30f ? 1.0f : 0.0f); }
__kernel void set0(__global float *x, const float v) { if (get_global_id(0) == 0) x[0] = v; }
__kernel void sc_int(__global long *x, const int v) { x[get_global_id(0)] = v; }
__kernel void sc_uint(__global long *x, const uint v) { x[get_global_id(0)] = v; }
__kernel void sc_uchar(__global long *x, const uchar v) { x[get_global_id(0)] = v; }
__kernel void sc_char(__global long *x, const char v) { x[get_global_id(0)] = v; }
__kernel void sc_short(__global long *x, const short v) { x[get_global_id(0)] = v; }
__kernel void sc_ulong(__global long *x, const ulong v) { x[get_global_id(0)] = (long)v; }
__kernel void sc_float(__global float *x, const float v) { x[get_global_id(0)] = v; }
__kernel void acc_c(__global float *x, __global const float *c) {
    x[get_global_id(0)] += c[get_global_id(0)]; }
__kernel void acc_c2(__global float *x, const __global float * restrict c) {
    x[get_global_id(0)] += c[get_global_id(0)]; }
__kernel void acc_c3(__global const float *c, __global float *x) {
    x[get_global_id(0)] += c[get_global_id(0)]; }
__kernel void store_c(__global float *x, __global const float *c) {
    x[get_global_id(0)] = c[get_global_id(0)]; }
"""

ZERO = ha.Stats(0, 0, 0, 0, 0, 0)


@pytest.fixture(scope="module")
def prg(cl_device):
    return ha.Program(SRC, device=cl_device)


def host_copy(x: Any) -> np.ndarray:
    return np.array(x, copy=True)


def device_sees(prg, x) -> np.ndarray:
    """What a kernel reads from ``x`` (copied into a fresh array by the ``cp`` kernel)."""
    y = ha.zeros(x.shape, dtype=ha.float32, device=prg.device)
    prg.cp(x.size, x, y)
    return host_copy(y)


def run_threads(targets: list[Callable[[], None]], timeout: float = JOIN_TIMEOUT,
                switch: float | None = None) -> None:
    """Run each target in a daemon thread; fail on a hang, then re-raise the first error."""
    errors: list[BaseException] = []

    def guard(f: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                f()
            except BaseException as e:  # re-raised below, in the test's thread
                errors.append(e)
        return run

    threads = [threading.Thread(target=guard(f), daemon=True) for f in targets]
    interval = sys.getswitchinterval()
    if switch is not None:
        sys.setswitchinterval(switch)
    try:
        for t in threads:
            t.start()
        deadline = time.monotonic() + timeout
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
    finally:
        sys.setswitchinterval(interval)
    alive = [t.name for t in threads if t.is_alive()]
    assert not alive, f"deadlock: threads {alive} still running after {timeout} s"
    if errors:
        raise errors[0]


# -- bug 1: a host write whose value's __array__ reads another array, racing a launch on both ----

N1 = 64


class ReadsLate:
    """A write value whose ``__array__`` reads ``src`` (another array), first running ``before``.

    numpy calls ``__array__`` during the write; hostarray must run it before taking the written
    array's lock, or a launch on both arrays (locks in one global order) deadlocks with it."""

    def __init__(self, src: Any, before: Callable[[], None],
                 post: Callable[[np.ndarray], np.ndarray] | None = None) -> None:
        self.src, self.before, self.post = src, before, post
        self.fired = False

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        if not self.fired:
            self.fired = True
            self.before()
        a = np.array(self.src, copy=True)
        if self.post is not None:
            a = self.post(a)
        return a if dtype is None else a.astype(dtype)


# (name, write(dst, value), which part of the source the value reads, post-processing)
WRITES_FROM_CALLBACK: list[tuple[str, Callable[[Any, Any], Any], Callable[[Any], Any], Any]] = [
    ("setitem", lambda d, v: d.__setitem__(Ellipsis, v), lambda s: s, None),
    ("setitem_slice", lambda d, v: d.__setitem__(slice(None), v), lambda s: s, None),
    ("setitem_part", lambda d, v: d.__setitem__(slice(0, 8), v), lambda s: s[:8], None),
    ("copyto", lambda d, v: np.copyto(d, v), lambda s: s, None),
    ("ufunc_out", lambda d, v: np.add(v, 0.0, out=d), lambda s: s, None),
    ("ufunc_out_where", lambda d, v: np.add(d, 1.0, out=d, where=v), lambda s: s,
     lambda a: a > 40.0),
    ("reduce_out_where", lambda d, v: np.add.reduce(np.ones((2, N1), np.float32), axis=0,
                                                    out=d, where=v), lambda s: s,
     lambda a: a > 40.0),
    ("clip_out", lambda d, v: np.clip(d, v, 1e9, out=d), lambda s: s, None),
    ("put", lambda d, v: np.put(d, np.arange(4), v), lambda s: s[:4], None),
    ("ufunc_at", lambda d, v: np.add.at(d, np.arange(4), v), lambda s: s[:4], None),
    ("putmask", lambda d, v: np.putmask(d, np.arange(N1) % 3 == 0, v), lambda s: s, None),
    ("list_of_callbacks", lambda d, v: d.reshape(2, N1 // 2).__setitem__(Ellipsis, [v, v]),
     lambda s: s[:N1 // 2], None),
    ("tuple_of_callbacks", lambda d, v: d.reshape(2, N1 // 2).__setitem__(Ellipsis, (v, v)),
     lambda s: s[:N1 // 2], None),
]


@pytest.mark.parametrize("write,read,post", [w[1:] for w in WRITES_FROM_CALLBACK],
                         ids=[w[0] for w in WRITES_FROM_CALLBACK])
def test_write_value_callback_reading_another_array_does_not_deadlock_a_launch(
        prg, cl_device, write, read, post) -> None:
    """Bug 1 (t39/t40): ``x[...] = obj`` (and copyto, ufunc out=/where=, clip out=, put, values
    in a list) where ``obj.__array__`` reads ``y``, while another thread launches on (y, x).

    Deterministic: the callback starts the launch in another thread and waits for it, then
    reads the other array.  Had the write taken its array's lock before running the callback,
    the launch (which locks both arrays) could not finish, and with the locks taken in the other
    order reading the source would deadlock.  Both write directions run, so one of them has
    the deadlocking lock order whatever it is."""
    a = ha.asarray(np.arange(N1, dtype=np.float32), device=cl_device, copy=True)
    b = ha.asarray(np.arange(N1, dtype=np.float32) * 2 + 1, device=cl_device, copy=True)
    ma, mb = host_copy(a), host_copy(b)
    for dst, src, mdst, msrc in ((a, b, ma, mb), (b, a, mb, ma)):
        # the numpy model: the launch runs inside the callback, then the source is read
        write(mdst, ReadsLate(read(msrc), lambda: (np.add(ma, 1, out=ma),
                                                   np.add(mb, 1, out=mb)), post))
        launched = threading.Event()
        seen: list[bool] = []

        def launch(launched=launched) -> None:
            prg.two(N1, a, b)
            launched.set()

        def before(launched=launched, seen=seen, launch=launch) -> None:
            threading.Thread(target=launch, daemon=True).start()
            # the launch must not need the lock of the array being written
            seen.append(launched.wait(2.0))

        def host_write(dst=dst, src=src, before=before) -> None:
            write(dst, ReadsLate(read(src), before, post))

        run_threads([host_write])
        assert seen == [True], "the launch started by the value's callback was blocked"
        np.testing.assert_array_equal(host_copy(a), ma)
        np.testing.assert_array_equal(host_copy(b), mb)
    np.testing.assert_array_equal(device_sees(prg, a), ma)
    np.testing.assert_array_equal(device_sees(prg, b), mb)


class ReadsY:
    """The reviewer's value: ``__array__`` reads another array (t39)."""

    def __init__(self, y: Any) -> None:
        self.y = y

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.array(self.y, dtype=dtype, copy=True)


class ReadsYMask(ReadsY):
    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        return np.array(self.y, copy=True) >= 0


@pytest.mark.parametrize("write", [
    lambda x, y: x.__setitem__(Ellipsis, ReadsY(y)),
    lambda x, y: np.copyto(x, ReadsY(y)),
    lambda x, y: np.add(x, 1.0, out=x, where=ReadsYMask(y)),
], ids=["setitem", "copyto", "ufunc_where"])
def test_callback_write_racing_launches_on_both_arrays(prg, cl_device, write) -> None:
    """Bug 1 (t39/t40), the reviewer's race as it was found: one thread writes x from a value
    whose ``__array__`` reads y, another launches on (y, x), with a tiny switch interval.
    No deadlock, and y (written only by the launches) counts every launch."""
    n, rounds = 256, 100
    end = time.monotonic() + STRESS_S
    while time.monotonic() < end:
        y = ha.zeros(n, dtype=ha.float32, device=cl_device)
        x = ha.zeros(n, dtype=ha.float32, device=cl_device)

        def writer(x=x, y=y) -> None:
            for _ in range(rounds):
                write(x, y)

        def launcher(x=x, y=y) -> None:
            for _ in range(rounds):
                prg.two(n, y, x)

        run_threads([writer, launcher], switch=1e-6)
        np.testing.assert_array_equal(host_copy(y), np.full(n, rounds, np.float32))


# -- bug 2: writing a broadcast / sliding-window view as big as its storage ------------------------

N2 = 8
OVERLAPPING_VIEWS = {
    "sliding_window(x[:5],2)": lambda a: sliding_window_view(a[:5], 2, writeable=True),
    "sliding_window(x[:5],4)": lambda a: sliding_window_view(a[:5], 4, writeable=True),
    "broadcast(x[:1])": lambda a: np.broadcast_arrays(a[:1], np.zeros(N2, np.float32))[0],
    "broadcast(x[2:3])": lambda a: np.broadcast_arrays(a[2:3], np.zeros(N2, np.float32))[0],
    "broadcast(2d row)": lambda a: np.broadcast_arrays(a.reshape(2, 4)[:1],
                                                       np.zeros((2, 4), np.float32))[0],
}
VIEW_WRITES = {
    "v[...]=": lambda v: v.__setitem__(Ellipsis, -1.0),
    "v[:]=": lambda v: v.__setitem__(slice(None), -1.0),
    "v.fill": lambda v: v.fill(-1.0),
    "np.copyto": lambda v: np.copyto(v, -1.0),
}


@pytest.mark.filterwarnings("ignore::FutureWarning")
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
@pytest.mark.parametrize("how", list(VIEW_WRITES.values()), ids=list(VIEW_WRITES))
@pytest.mark.parametrize("make", list(OVERLAPPING_VIEWS.values()), ids=list(OVERLAPPING_VIEWS))
def test_write_of_an_overlapping_view_as_big_as_its_storage_keeps_kernel_writes(
        prg, cl_device, make, how) -> None:
    """Bug 2 (t33): a broadcast or sliding-window view whose nbytes equals its storage's is not
    a whole overwrite: writing it must keep the kernel's values in the elements it doesn't
    cover (the copied link lost them)."""
    x = ha.zeros(N2, dtype=ha.float32, device=cl_device)
    v = make(x)  # taken before the kernel writes x
    assert isinstance(v, ha.HostPtrArray) and v.nbytes == x.nbytes
    prg.setv(N2, x)  # the device holds the newest bytes
    how(v)
    m = np.arange(N2, dtype=np.float32) + 100
    how(make(m))
    assert not np.array_equal(m, np.full(N2, -1.0, np.float32))  # the view is not everything
    np.testing.assert_array_equal(host_copy(x), m)
    np.testing.assert_array_equal(device_sees(prg, x), m)


def test_write_of_a_zero_stride_view_keeps_kernel_writes(prg, cl_device) -> None:
    """Bug 2 (t33): ``as_strided`` with a zero stride, as big as the array, written whole."""
    x = ha.zeros(N2, dtype=ha.float32, device=cl_device)
    v = as_strided(x[3:], shape=(N2,), strides=(0,))
    prg.setv(N2, x)
    v[...] = -1.0
    m = np.arange(N2, dtype=np.float32) + 100
    m[3] = -1.0
    np.testing.assert_array_equal(host_copy(x), m)
    np.testing.assert_array_equal(device_sees(prg, x), m)


# -- bug 3: adopted memory stays coherent while the user holds its owner ---------------------------

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


# -- bug 4: free_buffer in one thread racing launches in another ----------------------------------

@pytest.mark.parametrize("other", [
    lambda a, b, dev: hostptr.free_buffer(b, dev),
    lambda a, b, dev: (hostptr.publish_host_writes(a, dev), hostptr.free_buffer(b, dev)),
    lambda a, b, dev: (hostptr.acquire_device_writes(a, dev), hostptr.free_buffer(a, dev)),
], ids=["free", "publish+free", "acquire+free-other"])
def test_free_buffer_racing_launches_raises_nothing(prg, cl_device, other) -> None:
    """Bug 4 (t20/t20b): ``hostptr.free_buffer`` in one thread while another launches on the
    array raised KeyError(Device) from inside the launch.  No error, no deadlock, and no launch
    lost: each swap_add adds 2 to a + b."""
    n, rounds = 1024, 150
    end = time.monotonic() + STRESS_S
    while time.monotonic() < end:
        a = ha.zeros(n, dtype=ha.float32, device=cl_device)
        b = ha.zeros(n, dtype=ha.float32, device=cl_device)
        done = [0]

        def launcher(a=a, b=b, done=done) -> None:
            for _ in range(rounds):
                prg.swap_add(n, a, b, 1.0)
                done[0] += 1

        def freer(a=a, b=b) -> None:
            for _ in range(rounds):
                other(a, b, cl_device)

        run_threads([launcher, freer], switch=1e-6)
        assert done[0] == rounds
        np.testing.assert_array_equal(host_copy(a) + host_copy(b),
                                      np.full(n, 2 * rounds, np.float32))


def test_free_buffer_then_launch_recreates_the_buffer(prg, cl_device) -> None:
    """Bug 4 (t20b), sequential: after ``free_buffer`` a launch re-creates the buffer and sees
    the newest data (the free acquired first)."""
    x = ha.zeros(32, dtype=ha.float32, device=cl_device)
    prg.add(32, x, 2.0)
    assert hostptr.free_buffer(x, cl_device)
    assert hostptr.host_link(x, cl_device) is None
    prg.add(32, x, 1.0)
    np.testing.assert_array_equal(host_copy(x), np.full(32, 3.0, np.float32))


# -- bug 5: scalar arguments that don't fit their declared type -----------------------------------

BAD_SCALARS = [
    ("sc_int", 2**40), ("sc_int", np.int64(2**40)), ("sc_int", np.uint64(2**63)),
    ("sc_int", np.float64(2.0**40)), ("sc_int", 3.5), ("sc_int", None),
    ("sc_uint", -1), ("sc_uint", np.int64(-1)), ("sc_uint", 2**32),
    ("sc_uchar", 256), ("sc_uchar", np.int16(256)), ("sc_uchar", np.int8(-1)),
    ("sc_char", 128), ("sc_char", np.uint8(200)),
    ("sc_short", 40000), ("sc_short", np.int32(40000)),
    ("sc_ulong", -1), ("sc_ulong", np.int64(-1)), ("sc_ulong", 2**64),
    ("sc_float", None), ("sc_float", "nan"), ("sc_float", 1e300), ("sc_float", np.float64(1e300)),
]


@pytest.mark.parametrize("kernel,value", BAD_SCALARS,
                         ids=[f"{k[3:]}-{v!r}" for k, v in BAD_SCALARS])
def test_scalar_that_does_not_fit_is_refused_and_changes_nothing(
        prg, cl_device, kernel, value) -> None:
    """Bug 5 (t12): numpy scalars were converted with C wrap-around and None became NaN.
    A scalar that does not fit the declared type raises BadLaunch before anything happens."""
    dtype = ha.float32 if kernel == "sc_float" else ha.int64
    x = ha.full(4, 7, dtype=dtype, device=cl_device)
    prg.add if dtype == ha.float32 else None  # noqa: B018 - the program is built already
    ha.reset_stats()
    with pytest.raises(hostptr.BadLaunch):
        getattr(prg, kernel)(4, x, value)
    assert ha.stats() == ZERO
    assert hostptr.host_link(x, cl_device) is None
    assert x.tolist() == [7] * 4


GOOD_SCALARS = [
    ("sc_int", np.int64(5), 5), ("sc_int", np.int32(-7), -7), ("sc_int", 2**31 - 1, 2**31 - 1),
    ("sc_uint", np.uint32(4_000_000_000), 4_000_000_000), ("sc_uchar", np.int16(255), 255),
    ("sc_char", -128, -128), ("sc_ulong", np.uint64(2**63), -(2**63)),
    ("sc_float", np.float32(2.5), 2.5), ("sc_float", 0.1, np.float32(0.1)),
]


@pytest.mark.parametrize("kernel,value,expected", GOOD_SCALARS,
                         ids=[f"{k[3:]}-{v!r}" for k, v, _ in GOOD_SCALARS])
def test_scalar_that_fits_is_passed_exactly(prg, cl_device, kernel, value, expected) -> None:
    """Bug 5 (t12), the other side: values that fit, numpy scalars included, still launch."""
    dtype = ha.float32 if kernel == "sc_float" else ha.int64
    x = ha.zeros(2, dtype=dtype, device=cl_device)
    getattr(prg, kernel)(2, x, value)
    assert x.tolist() == [expected] * 2


def test_a_full_integer_index_is_a_view_that_writes_reach(prg, cl_device) -> None:
    # x[3] was a 0-d copy (numpy gives a scalar there): `x[3][...] = v` and
    # `np.add(a, b, out=x[5])` then changed nothing, silently. It is the element's 0-d view
    # (the docs' promise for every basic index); reading it acquires only its bytes.
    x = ha.asarray(np.arange(8, dtype=np.float32), device=cl_device, copy=True)
    model = np.arange(8, dtype=np.float32)
    prg.add(x.shape, x, np.float32(1))
    model += 1
    ha.reset_stats()
    assert float(x[2]) == model[2]
    assert ha.stats().bytes_acquired <= 4  # the element, not the array (copied link)
    v = x[3]
    assert v.shape == () and np.shares_memory(np.asarray(v), np.asarray(x))
    v[...] = 99
    model[3] = 99
    np.add(x[0], 1, out=x[5])
    model[5] = model[0] + 1
    np.add.reduce(x[:4], out=x[6])
    model[6] = model[:4].sum()
    m = x.reshape((2, 4))
    m[1, 3][...] = -7  # a tuple key too
    model[7] = -7
    prg.add(x.shape, x, np.float32(1))  # the kernel sees every write made through the views
    model += 1
    np.testing.assert_array_equal(np.asarray(x), model)


@pytest.mark.parametrize("refused", [
    lambda x: ha.reshape(x, (7, 7)), lambda x: ha.reshape(x, (7, 7), copy=True),
    lambda x: x.__setitem__(0, "abc"), lambda x: x.__setitem__(slice(0, 2), b"x1")])
def test_a_refused_reshape_or_text_write_moves_nothing(prg, cl_device, refused) -> None:
    # both acquired the data a kernel left on the device before numpy refused the call
    x = ha.zeros(256, dtype=ha.float32, device=cl_device)
    prg.add(x.shape, x, np.float32(3))
    before = ha.stats()
    with pytest.raises(ValueError):
        refused(x)
    after = ha.stats()
    assert (after.acquires, after.publishes) == (before.acquires, before.publishes)
    np.testing.assert_array_equal(np.asarray(x), np.full(256, 3, np.float32))


def test_text_written_into_a_device_array_is_numpys_parse(prg, cl_device) -> None:
    x = ha.zeros(4, dtype=ha.float32, device=cl_device)
    prg.add(x.shape, x, np.float32(3))
    x[0], x[1] = "7", b"1e3"
    expected = np.full(4, 3, np.float32)
    expected[0], expected[1] = "7", b"1e3"
    np.testing.assert_array_equal(np.asarray(x), expected)


def test_numpy_and_0d_integer_indices_give_views_too(prg, cl_device) -> None:
    # x[np.int64(3)] (np.argmax's type) still gave a 0-d copy: writes through it were lost
    # and a read acquired all of x
    x = ha.asarray(np.arange(8, dtype=np.float32), device=cl_device, copy=True)
    prg.add(x.shape, x, np.float32(1))
    ha.reset_stats()
    assert float(x[np.int64(3)]) == 4.0 and ha.stats().bytes_acquired <= 4
    x[np.int32(4)][...] = 40.0
    x[ha.asarray(5)][...] = 50.0  # a 0-d integer array: an index as numpy takes it
    m = x.reshape((2, 4))
    m[np.uint8(1), np.int16(3)][...] = 70.0
    np.testing.assert_array_equal(np.asarray(x), [1, 2, 3, 4, 40, 50, 7, 70])
    assert x[np.intp(2)].shape == () and x[np.int64(-1)].shape == ()
