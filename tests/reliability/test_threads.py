"""Threads: host reads/writes and launches from several threads at once, on
separate arrays and on one shared array.  No stale read, no lost write, no
deadlock (every join has a timeout), no lost counter update."""

from __future__ import annotations

import functools
import threading
from collections.abc import Callable

import numpy as np
import pytest

import hostarray as ha
from tests._threads import run_in_threads

from ._support import SPIN_SRC

pytestmark = pytest.mark.device

THREADS = 4
JOIN_TIMEOUT = 120.0  # seconds; a thread still alive after it is a deadlock

SRC = SPIN_SRC + r"""
__kernel void swap_add(__global float *a, __global float *b, const float v) {
    int i = get_global_id(0); float t = a[i]; a[i] = b[i] + v; b[i] = t + v;
}
"""


# (switching threads every few bytecodes)
run_threads = functools.partial(run_in_threads, timeout=JOIN_TIMEOUT, switch=1e-6)


@pytest.fixture()
def prg(cl_device: ha.Device):
    return ha.Program(SRC, device=cl_device)


def test_separate_arrays_counters_add_up(prg, cl_device: ha.Device, thorough: bool) -> None:
    """Each thread: whole host write -> launch -> read, on its own array.  Every
    iteration needs exactly one publish, one launch and one acquire, so the
    process-wide counters must equal the sum over the threads."""
    rounds = 400 if thorough else 60
    n = 4096
    done = [0] * THREADS

    def worker(t: int) -> Callable[[], None]:
        def run() -> None:
            rng = np.random.default_rng(t)
            x = ha.zeros(n, dtype=ha.float32, device=cl_device)
            for _ in range(rounds):
                data = rng.integers(-100, 100, n).astype(np.float32)
                x[...] = ha.asarray(data)
                prg.spin_add(n, x, float(t + 1), 50)
                got = np.array(x, copy=True)
                np.testing.assert_array_equal(got, data + (t + 1), f"thread {t}: stale read")
                done[t] += 1
        return run

    ha.reset_stats()
    run_threads([worker(t) for t in range(THREADS)])
    s = ha.stats()
    total = sum(done)
    assert total == THREADS * rounds
    assert (s.launches, s.publishes, s.acquires) == (total, total, total), s


def test_shared_array_disjoint_regions(prg, cl_device: ha.Device, thorough: bool) -> None:
    """Threads share one array; each owns an aligned region that it writes on
    the host, updates with kernels and reads back.  A whole-storage publish or
    acquire done for one thread must never undo another thread's write."""
    rounds = 300 if thorough else 60
    g = cl_device.alignment // 4
    part = 8 * g
    x = ha.zeros(THREADS * part, dtype=ha.float32, device=cl_device)

    def worker(t: int) -> Callable[[], None]:
        def run() -> None:
            lo, hi = t * part, (t + 1) * part
            model = np.zeros(part, np.float32)
            rng = np.random.default_rng(100 + t)
            for r in range(rounds):
                op = rng.integers(0, 3)
                if op == 0:
                    v = float(rng.integers(-50, 50))
                    x[lo:hi] = v
                    model[:] = v
                elif op == 1:
                    k = int(rng.integers(0, part))
                    x[lo + k] = float(r)
                    model[k] = r
                else:
                    prg.spin_add(part, x[lo:hi], 1.0, int(rng.integers(0, 200)))
                    model += 1
                got = np.array(x[lo:hi], copy=True)
                np.testing.assert_array_equal(got, model, f"thread {t} round {r}: lost write "
                                                          f"or stale read")
        return run

    run_threads([worker(t) for t in range(THREADS)])


def test_shared_array_disjoint_regions_in_place_operators(prg, cl_device: ha.Device,
                                                         thorough: bool) -> None:
    """As above, with the host writes done by in-place operators on views
    (``v = x[lo:hi]; v += 1``), numpy ufuncs with ``out=`` and ``v.fill()``."""
    rounds = 300 if thorough else 60
    g = cl_device.alignment // 4
    part = 8 * g
    x = ha.zeros(THREADS * part, dtype=ha.float32, device=cl_device)

    def worker(t: int) -> Callable[[], None]:
        def run() -> None:
            lo, hi = t * part, (t + 1) * part
            view = x[lo:hi]
            model = np.zeros(part, np.float32)
            rng = np.random.default_rng(200 + t)
            for r in range(rounds):
                op = rng.integers(0, 3)
                if op == 0:
                    view += 2.0
                    model += 2
                elif op == 1 and r % 2:
                    view *= 1.0
                    view -= 1.0
                    model -= 1
                elif op == 1:  # numpy's ufunc with out= and ndarray methods on the view
                    np.add(view, 3.0, out=view)
                    model += 3
                    if r % 5 == 0:
                        view.fill(float(r))
                        model[:] = r
                else:
                    prg.spin_add(part, view, 1.0, int(rng.integers(0, 200)))
                    model += 1
                got = np.array(view, copy=True)
                np.testing.assert_array_equal(got, model, f"thread {t} round {r}: lost write "
                                                          f"or stale read")
        return run

    run_threads([worker(t) for t in range(THREADS)])


def test_readers_never_see_older_than_issued(prg, cl_device: ha.Device, thorough: bool) -> None:
    """One thread launches ``x += 1`` over and over; readers note how many
    launches were issued, then read: every element must count at least that
    many (a read after a launch sees it, from any thread)."""
    launches = 300 if thorough else 80
    n = 8192
    x = ha.zeros(n, dtype=ha.float32, device=cl_device)
    issued = [0]
    finished = threading.Event()

    def writer() -> None:
        try:
            for k in range(1, launches + 1):
                prg.spin_add(n, x, 1.0, 20)
                issued[0] = k  # after the launch call returned
        finally:
            finished.set()

    def reader() -> None:
        reads = 0
        while not finished.is_set() or reads < 5:
            k0 = issued[0]
            got = np.array(x, copy=True)
            assert got.min() >= k0, f"stale read: {got.min()} < {k0} launches issued before"
            assert got.max() <= launches
            reads += 1

    run_threads([writer] + [reader] * (THREADS - 1))
    np.testing.assert_array_equal(np.array(x, copy=True), np.full(n, launches, np.float32))


def test_crossed_argument_orders_do_not_deadlock(prg, cl_device: ha.Device,
                                                 thorough: bool) -> None:
    """Threads launch on (a, b) and (b, a) and write a, b on the host at the
    same time: launches lock storages in one global order, so none waits on
    another forever.  The sums are checked at the end (swap_add keeps a+b
    growing by 2 v)."""
    rounds = 300 if thorough else 60
    n = 1024
    a = ha.zeros(n, dtype=ha.float32, device=cl_device)
    b = ha.zeros(n, dtype=ha.float32, device=cl_device)
    total = [0.0] * THREADS
    lock = threading.Lock()

    def worker(t: int) -> Callable[[], None]:
        def run() -> None:
            for r in range(rounds):
                first, second = (a, b) if (t + r) % 2 else (b, a)
                prg.swap_add(n, first, second, 1.0)
                with lock:
                    total[t] += 2.0
        return run

    def host_toucher() -> None:
        for _ in range(rounds):
            float(np.array(a[0], copy=True))
            np.array(b, copy=True)

    run_threads([worker(t) for t in range(THREADS - 1)] + [host_toucher])
    s = np.array(a, copy=True) + np.array(b, copy=True)
    np.testing.assert_array_equal(s, np.full(n, sum(total), np.float32))


def test_dropping_a_raw_view_never_waits_for_another_threads_lock(prg, cl_device) -> None:
    """A raw view's end runs from a finalizer, possibly inside the garbage
    collector while the thread holds another array's lock: waiting there for
    this array's lock could deadlock against a launch that locks both.  The
    end is deferred instead, and the next launch still publishes the raw
    view's writes."""
    n = 1024
    x = ha.zeros(n, dtype=ha.float32, device=cl_device)
    prg.spin_add(n, x, 0.0, 0)
    raw = np.asarray(x)  # a raw view, exported first (exporting takes the lock)
    raw[:] = 5.0
    held, release = threading.Event(), threading.Event()

    def holder() -> None:  # stands for a thread in the middle of a launch on x
        with x._s.lock:
            held.set()
            release.wait(JOIN_TIMEOUT)

    t = threading.Thread(target=holder, daemon=True)
    t.start()
    assert held.wait(JOIN_TIMEOUT)
    done = threading.Event()

    def drop() -> None:
        nonlocal raw
        del raw
        done.set()

    dropper = threading.Thread(target=drop, daemon=True)
    dropper.start()
    finished = done.wait(5.0)
    release.set()
    t.join(JOIN_TIMEOUT)
    dropper.join(JOIN_TIMEOUT)
    assert finished, "dropping a raw view waited for another thread's lock"
    prg.spin_add(n, x, 1.0, 0)  # applies the deferred end and publishes the raw writes
    assert not x._s.escaped
    np.testing.assert_array_equal(np.array(x, copy=True), np.full(n, 6.0, np.float32))



def test_placement_reads_the_map_while_another_thread_changes_it(off_shared: ha.Device,
                                                                  device_path: None,
                                                                  thorough: bool) -> None:
    """One thread splits and merges the coherence map of an array (kernels on one half,
    host writes to pieces of it) while others compute on the other half, which asks the
    map where the newest bytes are (the device compute path's placement) every time.
    The placement's read must never see a half-changed map (it once raised IndexError on
    the copied link, once in a CI run), and every value must be numpy's."""
    rounds = 8000 if thorough else 1500
    prg = ha.Program(SRC, device=off_shared)
    g = off_shared.alignment // 4
    part = 8 * g
    x = ha.zeros(2 * part, dtype=ha.float32, device=off_shared)

    def churn() -> None:
        left = x[:part]
        model = np.zeros(part, np.float32)
        for r in range(rounds):
            prg.spin_add(part, left, 1.0, 0)  # device-newest: one segment
            model += 1
            k = 1 + r % 6
            piece = x[k * g:(k + 1) * g]  # a host write cuts the segment in three
            piece += 1.0
            model[k * g:(k + 1) * g] += 1
        np.testing.assert_array_equal(np.asarray(left), model)

    def compute(t: int) -> Callable[[], None]:
        def run() -> None:
            right = x[part:]
            want = np.full(part, float(t), np.float32)
            for _ in range(rounds):
                got = right * 2.0 + float(t)  # placement reads the map over right's span
                np.testing.assert_array_equal(np.asarray(got), want)
        return run

    run_threads([churn, compute(0), compute(1)])


def test_placement_waits_for_the_thread_changing_the_map(off_shared: ha.Device,
                                                         device_path: None) -> None:
    """The deterministic form of the race above: while a thread holds an array's lock in
    the middle of a change to its map (one list of the interval map a segment longer than
    the other, as between the two inserts of a cut), the device compute path's placement
    of an operation on that array waits for the lock instead of reading the map."""
    prg = ha.Program(SRC, device=off_shared)
    n = 8 * off_shared.alignment // 4
    x = ha.zeros(n, dtype=ha.float32, device=off_shared)
    prg.spin_add(n, x, 1.0, 0)  # device-newest: the map has one segment
    s = x._s
    coh = s.coh
    assert coh is not None
    half = x[n // 2:]
    _, lo, _ = half._bytes()  # where half's bytes start in the allocation
    got: list[object] = []

    def compute() -> None:
        try:
            got.append(np.asarray(half * 2.0))
        except BaseException as e:  # reported below
            got.append(e)

    worker = threading.Thread(target=compute, daemon=True)
    with s.lock:
        starts = list(coh._starts)
        coh._starts.append(lo)  # half a cut: _valid lacks the new segment
        try:
            worker.start()
            worker.join(0.5)
            waited = worker.is_alive()
        finally:
            coh._starts[:] = starts
    worker.join(JOIN_TIMEOUT)
    assert not worker.is_alive(), "deadlock"
    assert waited, f"placement read the map under another thread's change: {got}"
    assert len(got) == 1 and not isinstance(got[0], BaseException), got
    np.testing.assert_array_equal(got[0], np.full(n - n // 2, 2.0, np.float32))
