"""The transfer guard (``ha.transfer_guard``, ``ha.set_transfer_guard``,
``HOSTARRAY_TRANSFER_GUARD``): implicit transfers logged one record each, or refused
before anything moves or changes; explicit ``hostptr`` calls always allowed.

Run on the machine's link and again with ``HOSTARRAY_LINK=copied``, where a transfer
that did not happen, or happened twice, is a wrong value::

    python3 -m pytest tests/coherence/test_transfer_guard.py
    HOSTARRAY_LINK=copied python3 -m pytest tests/coherence/test_transfer_guard.py
"""

from __future__ import annotations

import logging
import pickle
import sys
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pytest

import hostarray as ha
from hostarray import _introspect as introspect
from hostarray import hostptr
from hostarray.errors import TransferDisallowed
from tests.reliability._support import run_python

pytestmark = pytest.mark.device

SRC = r"""
__kernel void add(__global float *x, const float a) { x[get_global_id(0)] += a; }
__kernel void fill(__global float *x, const float a) { x[get_global_id(0)] = a; }
__kernel void copy(__global const float *src, __global float *dst) {
    dst[get_global_id(0)] = src[get_global_id(0)];
}
"""
F = 4  # bytes of a float32
N = 1024
LOGGER = "hostarray.transfers"


@pytest.fixture(autouse=True)
def _default_allow() -> Iterator[None]:
    """Each test starts and ends with the process default ``allow``."""
    previous = ha.set_transfer_guard("allow")
    try:
        yield
    finally:
        ha.set_transfer_guard(previous)


@pytest.fixture()
def prg(cl_device: ha.Device) -> ha.Program:
    return ha.Program(SRC, device=cl_device)


@pytest.fixture()
def log(caplog: pytest.LogCaptureFixture) -> pytest.LogCaptureFixture:
    caplog.set_level(logging.WARNING, logger=LOGGER)
    return caplog


def records(caplog: pytest.LogCaptureFixture) -> list[logging.LogRecord]:
    return [r for r in caplog.records if r.name == LOGGER]


def on_device(prg: ha.Program, value: float = 1.0) -> ha.HostPtrArray:
    """An array of N float32 whose newest bytes only the device holds (all ``value``)."""
    x = ha.zeros(N, dtype=ha.float32, device=prg.device)
    prg.fill(x.shape, ha.write(x), value).wait()  # done: the host bytes stay as they are
    return x


def state(x: ha.HostPtrArray) -> tuple[Any, ...]:
    """Everything a refused transfer must leave as it was: the host bytes (read without a
    sync), the coherence state (per byte range, launches in flight, raw views, the flags:
    hostarray._introspect), the buffers."""
    s = x._s
    return s.base.tobytes(), introspect.state(x), dict(s.buffers)


def counters(st: ha.Stats) -> tuple[int, ...]:
    """The transfer counters (``waits`` aside: a refused host write may have waited)."""
    return st.publishes, st.acquires, st.bytes_published, st.bytes_acquired, st.launches


# -- modes ---------------------------------------------------------------------------------------

def test_an_unknown_mode_is_refused_at_the_call() -> None:
    for bad in ("deny", "", None, "LOG"):
        with pytest.raises(ValueError, match="'allow', 'log', 'disallow'"):
            ha.transfer_guard(bad)  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="'allow', 'log', 'disallow'"):
            ha.set_transfer_guard(bad)  # type: ignore[arg-type]
    assert ha.set_transfer_guard("allow") == "allow"  # nothing changed
    assert repr(ha.transfer_guard("log")) == "transfer_guard('log')"


def test_allow_is_the_default_and_moves_as_before(prg: ha.Program, log) -> None:
    x = on_device(prg, 2.0)
    assert float(x[7]) == 2.0
    assert ha.stats().acquires == 1 and not records(log)


# -- log ---------------------------------------------------------------------------------------

def test_log_writes_one_record_per_implicit_transfer(prg: ha.Program, cl_device, log) -> None:
    x = on_device(prg, 1.0)
    ha.reset_stats()
    with ha.transfer_guard("log"):
        assert float(x[5]) == 1.0; line_read = sys._getframe().f_lineno  # noqa: E702
        x[10:20] = 3.0  # overwrites every byte it touches: nothing acquired
        prg.add(x.shape, x, 1.0); line_launch = sys._getframe().f_lineno  # noqa: E702
        total = float(ha.sum(x))
    expect = np.full(N, 2.0, np.float32)
    expect[10:20] = 4.0
    assert total == float(expect.sum())
    got = records(log)
    st = ha.stats()
    assert len(got) == st.publishes + st.acquires == 3
    seen = [(r.direction, r.nbytes, r.byte_range) for r in got]  # type: ignore[attr-defined]
    assert seen == [
        ("acquire", F, (5 * F, 6 * F)),  # x[5] (the device keeps it too)
        ("publish", 10 * F, (10 * F, 20 * F)),  # the launch: only what the host wrote
        ("acquire", N * F, (0, N * F)),  # ha.sum(x), after the launch wrote all of x
    ]
    for r in got:
        assert r.levelno == logging.WARNING
        assert r.device == cl_device and r.link == cl_device.link  # type: ignore[attr-defined]
        assert r.pathname == __file__  # the caller's site, not hostarray's
        msg = r.getMessage()
        assert msg.startswith(f"implicit {r.direction} of {r.nbytes} bytes")  # type: ignore
        assert str(cl_device) in msg and f"{__file__}:{r.lineno}" in msg
    assert got[0].lineno == line_read and got[1].lineno == line_launch
    assert got[1].trigger == "Kernel.__call__"  # type: ignore[attr-defined]
    assert got[2].trigger == "hostarray.sum"  # type: ignore[attr-defined]


def test_log_sizes_of_a_strided_and_a_partial_read(prg: ha.Program, log) -> None:
    x = on_device(prg, 4.0)
    with ha.transfer_guard("log"):
        assert np.asarray(x[100:200]).sum() == 400.0  # a raw view of 100 elements
        assert float(ha.max(x[::256])) == 4.0  # first to last element of the strided view
    got = [(r.direction, r.nbytes, r.byte_range) for r in records(log)]  # type: ignore
    assert got == [("acquire", 100 * F, (100 * F, 200 * F)),
                   ("acquire", 100 * F, (0, 100 * F)),
                   ("acquire", (768 - 200) * F + F, (200 * F, 769 * F))]
    assert ha.stats().acquires == 3


def test_log_explicit_calls_are_not_logged(prg: ha.Program, cl_device, log) -> None:
    x = on_device(prg, 1.0)
    with ha.transfer_guard("log"):
        hostptr.acquire_device_writes(x, cl_device)
        x[:5] = 2.0
        hostptr.publish_host_writes(x, cl_device)
        prg.add(x.shape, x, 1.0)
        assert hostptr.free_buffer(x, cl_device)  # acquires the launch's result
        assert float(x[0]) == 3.0 and float(x[9]) == 2.0  # nothing left to move
    assert not records(log)
    assert ha.stats().publishes == 1 and ha.stats().acquires == 2


def test_log_level_and_handlers_are_the_users(prg: ha.Program, log) -> None:
    x = on_device(prg)
    logging.getLogger(LOGGER).setLevel(logging.ERROR)  # the user silenced it
    try:
        with ha.transfer_guard("log"):
            assert float(x[0]) == 1.0
    finally:
        logging.getLogger(LOGGER).setLevel(logging.NOTSET)
    assert not records(log) and ha.stats().acquires == 1


# -- disallow ----------------------------------------------------------------------------------

def test_disallow_refuses_a_read_before_anything_moves(prg: ha.Program, cl_device) -> None:
    x = on_device(prg, 5.0)
    before, st = state(x), ha.stats()
    with ha.transfer_guard("disallow"):
        with pytest.raises(TransferDisallowed) as info:
            float(x[3])
        assert state(x) == before and ha.stats() == st  # waits too: none
        assert (info.value.direction, info.value.nbytes) == ("acquire", F)
        # a raw view waits for the launches using x first (a counted wait), then is refused
        for read in (lambda: np.asarray(x), lambda: ha.sum(x), lambda: repr(x),
                     lambda: x.tolist(), lambda: np.sum(x), lambda: x == 5):
            with pytest.raises(TransferDisallowed) as info:
                read()
            assert state(x) == before and counters(ha.stats()) == counters(st)
        e = info.value
        assert (e.direction, e.device, e.nbytes) == ("acquire", cl_device, N * F)
        assert isinstance(e, RuntimeError) and "acquire_device_writes" in str(e)
        assert __file__ in e.trigger
        hostptr.acquire_device_writes(x, cl_device)  # explicit: allowed
        assert float(x[3]) == 5.0 and np.asarray(x).tolist() == [5.0] * N  # nothing to move
    assert ha.stats().acquires == st.acquires + 1


def test_disallow_refuses_a_launch_before_it_is_enqueued(prg: ha.Program, cl_device) -> None:
    x = ha.asarray(np.arange(N, dtype=np.float32), device=cl_device)
    y = on_device(prg, 0.0)
    hostptr.acquire_device_writes(y, cl_device)
    before, st = (state(y), ha.stats()), ha.stats()
    with ha.transfer_guard("disallow"):
        with pytest.raises(TransferDisallowed) as info:
            prg.copy(x.shape, x, y)  # y is current on the device; x must be published
        assert ha.stats() == st and ha.stats().launches == st.launches
        assert (state(y), ha.stats()) == before and x._s.buffers  # (created, not filled)
        assert (info.value.direction, info.value.nbytes) == ("publish", N * F)
        assert "publish_host_writes" in str(info.value)
        hostptr.publish_host_writes(x, cl_device)
        prg.copy(x.shape, x, y)  # the retry: nothing to move
        with pytest.raises(TransferDisallowed):
            float(y[1])  # the result is the device's
        hostptr.acquire_device_writes(y, cl_device)
        assert np.asarray(y).tolist() == list(range(N))
    assert ha.stats().launches == st.launches + 1


def test_disallow_refuses_a_host_write_that_must_acquire(prg: ha.Program, cl_device) -> None:
    x = on_device(prg, 1.0)
    before, st = state(x), counters(ha.stats())
    with ha.transfer_guard("disallow"):
        for write in ("x[::2] = 7", "x[3:9] += 1", "np.add(x, 1, out=x)"):
            with pytest.raises(TransferDisallowed):
                exec(write, {"x": x, "np": np})
            assert state(x)[1:] == before[1:] and counters(ha.stats()) == st
        x[...] = 2.0  # overwrites every byte with a value known beforehand: nothing moves
        assert counters(ha.stats()) == st
        with pytest.raises(TransferDisallowed):
            prg.add(x.shape, x, 1.0)  # the host's bytes must be published
        hostptr.publish_host_writes(x, cl_device)
        prg.add(x.shape, x, 1.0)
        hostptr.acquire_device_writes(x, cl_device)
        x[::2] = 7.0
    expect = np.full(N, 3.0, np.float32)
    expect[::2] = 7.0
    assert np.array_equal(np.asarray(x), expect)


def test_disallow_then_explicit_then_retry_in_a_loop(prg: ha.Program, cl_device) -> None:
    """The pattern the guard is for: the user catches, makes it explicit, retries."""
    x = ha.asarray(np.ones(N, np.float32), device=cl_device)
    with ha.transfer_guard("disallow"):
        for _ in range(3):
            try:
                prg.add(x.shape, x, 1.0)
            except TransferDisallowed:
                hostptr.publish_host_writes(x, cl_device)
                prg.add(x.shape, x, 1.0)
        hostptr.acquire_device_writes(x, cl_device)
        assert float(x[N - 1]) == 4.0
    assert ha.stats().publishes == 1 and ha.stats().acquires == 1


def test_disallow_refuses_cl_buffer_publish(prg: ha.Program, cl_device) -> None:
    x = ha.asarray(np.ones(N, np.float32), device=cl_device)
    st = ha.stats()
    with ha.transfer_guard("disallow"):
        with pytest.raises(TransferDisallowed):
            with hostptr.cl_buffer(x, cl_device, "rw"):
                pytest.fail("the block ran")
        assert ha.stats() == st
        with hostptr.cl_buffer(x, cl_device, "w"):  # write-only: nothing published
            pass


def test_explicit_calls_are_allowed_under_disallow(prg: ha.Program, cl_device) -> None:
    x = ha.asarray(np.arange(N, dtype=np.float32), device=cl_device)
    ha.set_transfer_guard("disallow")  # the process default, this time
    hostptr.attach(x, cl_device)  # (publish_host_writes does nothing without a buffer)
    hostptr.publish_host_writes(x, cl_device)
    prg.add(x.shape, x, 1.0)
    hostptr.acquire_device_writes(x, cl_device)
    assert float(x[2]) == 3.0
    prg.add(x.shape, x, 1.0)
    assert hostptr.free_buffer(x, cl_device)  # acquires what only the device holds
    assert float(x[2]) == 4.0 and not x._s.buffers
    st = ha.stats()
    assert (st.publishes, st.acquires, st.launches) == (1, 2, 2)


def test_the_acquire_after_a_launch_for_a_raw_view_is_made_and_warned(
        prg: ha.Program, cl_device, log) -> None:
    x = ha.asarray(np.zeros(N, np.float32), device=cl_device)
    raw = np.asarray(x)  # a raw view: launches writing x must land in it
    with ha.transfer_guard("disallow"):
        prg.fill(x.shape, ha.write(x), 6.0)  # publishes nothing; acquires after (warned)
        assert raw[0] == 6.0
    got = records(log)
    assert len(got) == 1 and got[0].direction == "acquire"  # type: ignore[attr-defined]
    assert "made under 'disallow'" in got[0].getMessage()
    assert got[0].nbytes == N * F and ha.stats().acquires == 1  # type: ignore[attr-defined]
    del raw


# -- scope: nesting, exceptions, threads, the default ------------------------------------------

def test_blocks_nest_the_inner_wins_and_exit_restores(prg: ha.Program, log) -> None:
    x = on_device(prg, 1.0)
    with ha.transfer_guard("disallow"):
        with ha.transfer_guard("allow"):
            assert float(x[0]) == 1.0  # allowed, not logged
        with pytest.raises(TransferDisallowed):
            float(x[1])  # disallow again
        with ha.transfer_guard("log"):
            assert float(x[2]) == 1.0
            with ha.transfer_guard("disallow"), pytest.raises(TransferDisallowed):
                float(x[3])
            assert float(x[4]) == 1.0  # log again
    assert float(x[5]) == 1.0  # the default: allowed, not logged
    assert [r.byte_range for r in records(log)] == [(2 * F, 3 * F), (4 * F, 5 * F)]  # type: ignore


def test_a_block_restores_its_mode_when_it_raises(prg: ha.Program) -> None:
    x = on_device(prg, 1.0)
    guard = ha.transfer_guard("disallow")
    with pytest.raises(KeyError), guard:
        raise KeyError("boom")
    assert float(x[0]) == 1.0  # allowed again
    with pytest.raises(TransferDisallowed), guard:  # the same object enters again
        float(x[1])
    with guard, guard:  # and nests in itself
        pass
    assert float(x[1]) == 1.0


def test_threads_do_not_see_each_others_guard(prg: ha.Program) -> None:
    xs = [on_device(prg, float(i)) for i in range(4)]
    inside, done = threading.Barrier(2), threading.Event()
    seen: dict[str, Any] = {}

    def guarded() -> None:  # disallow in this thread only
        with ha.transfer_guard("disallow"):
            inside.wait(timeout=30)
            try:
                float(xs[1][0])
            except TransferDisallowed as e:
                seen["guarded"] = e.direction
            done.wait(timeout=30)

    t = threading.Thread(target=guarded)
    t.start()
    inside.wait(timeout=30)
    seen["main"] = float(xs[0][0])  # the main thread is not inside the block
    done.set()
    t.join(timeout=30)
    assert seen == {"guarded": "acquire", "main": 0.0}

    def plain(i: int) -> None:  # a thread without a block: the process default
        try:
            seen[f"plain {i}"] = float(xs[i][0])
        except TransferDisallowed:
            seen[f"plain {i}"] = "refused"

    with ha.transfer_guard("disallow"):  # the main thread's block: not the other's
        t = threading.Thread(target=plain, args=(2,))
        t.start()
        t.join(timeout=30)
    assert seen["plain 2"] == 2.0
    ha.set_transfer_guard("disallow")  # the default reaches every thread outside blocks
    t = threading.Thread(target=plain, args=(3,))
    t.start()
    t.join(timeout=30)
    assert seen["plain 3"] == "refused"
    with ha.transfer_guard("allow"):
        assert float(xs[3][0]) == 3.0


def test_set_transfer_guard_returns_the_previous_default(prg: ha.Program) -> None:
    x = on_device(prg, 1.0)
    assert ha.set_transfer_guard("disallow") == "allow"
    with pytest.raises(TransferDisallowed):
        float(x[0])
    with ha.transfer_guard("allow"):  # a block overrides the default
        assert float(x[0]) == 1.0
    assert ha.set_transfer_guard("allow") == "disallow"
    assert float(x[1]) == 1.0


ENV_SCRIPT = r"""
import logging, sys
import hostarray as ha
dev = ha.device("opencl")
prg = ha.Program("__kernel void f(__global float *y) { y[get_global_id(0)] = 2; }", device=dev)
x = ha.zeros(64, dtype=ha.float32, device=dev)
prg.f(x.shape, ha.write(x))
try:
    print("value", float(x[3]))
except Exception as e:
    print("raised", type(e).__name__, getattr(e, "direction", ""), getattr(e, "nbytes", ""))
with ha.transfer_guard("allow"):
    print("inside allow", float(x[4]))
print("default", ha.set_transfer_guard("allow"))
"""


@pytest.mark.parametrize("value, first", [
    ("disallow", "raised TransferDisallowed acquire 4"),
    (" Disallow ", "raised TransferDisallowed acquire 4"),
    ("log", "value 2.0"),
    ("allow", "value 2.0"),
    ("", "value 2.0"),
    ("sideways", "raised ValueError  "),
])
def test_the_environment_variable_sets_the_process_default(value: str, first: str) -> None:
    r = run_python(ENV_SCRIPT, env={"HOSTARRAY_TRANSFER_GUARD": value})
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0] == first.rstrip() or lines[0] == first, r.stdout
    assert lines[1] == "inside allow 2.0"
    assert lines[2] == f"default {value.strip().lower() or 'allow'}"
    logged = [ln for ln in r.stderr.splitlines() if ln.startswith("implicit acquire of 4 bytes")]
    assert len(logged) == (value == "log"), r.stderr


def test_an_unknown_environment_value_says_what_to_use() -> None:
    code = ENV_SCRIPT.replace('print("raised", type(e).__name__', 'print("raised", str(e)')
    r = run_python(code, env={"HOSTARRAY_TRANSFER_GUARD": "sideways"})
    assert r.returncode == 0, r.stderr
    assert "HOSTARRAY_TRANSFER_GUARD='sideways': use one of allow, log, disallow" in r.stdout


def test_transfer_disallowed_pickles_with_its_data(prg: ha.Program) -> None:
    x = on_device(prg)
    with ha.transfer_guard("disallow"), pytest.raises(TransferDisallowed) as info:
        float(x[0])
    again = pickle.loads(pickle.dumps(info.value))
    assert type(again) is TransferDisallowed and str(again) == str(info.value)
    assert (again.direction, again.nbytes, again.device, again.trigger) == (
        "acquire", F, str(prg.device), info.value.trigger)


# -- issue 20 (5): a log handler is the user's code: it may use the array being moved -------------

@pytest.fixture(params=["auto", "copied"])
def linked(request, cl_device):
    """``cl_device`` with the buffers made inside on its own link, then on the copied one."""
    from hostarray.bench import forced_link

    with forced_link(cl_device, None if request.param == "auto" else "copied"):
        yield cl_device
    ha.clear_pool()


class _Calls(logging.Handler):
    """A handler that runs ``fn(record)`` for each transfer record (once each)."""

    def __init__(self, fn: Any) -> None:
        super().__init__(logging.WARNING)
        self.fn, self.seen = fn, []

    def emit(self, record: logging.LogRecord) -> None:
        self.seen.append((record.direction, record.byte_range))
        fn, self.fn = self.fn, None
        if fn is not None:
            fn(record)


@pytest.fixture()
def handler() -> Iterator[Any]:
    logger = logging.getLogger(LOGGER)
    made: list[logging.Handler] = []

    def install(fn: Any) -> _Calls:
        h = _Calls(fn)
        logger.addHandler(h)
        made.append(h)
        return h

    yield install
    for h in made:
        logger.removeHandler(h)


def _overwrite(x: ha.HostPtrArray, v: float) -> Any:
    def write(record: logging.LogRecord) -> None:
        x[...] = v
    return write


def test_a_handler_writing_the_array_being_acquired_wins(prg, linked, handler) -> None:
    # Issue 20 (5): the record went to the handlers under the storage's lock, between the
    # acquire's plan and its transfer: the handler's write made the plan stale (an internal
    # AssertionError reached the user), and on the copied link the device's old 5.0 was
    # copied over it.
    x = ha.zeros(N, dtype=ha.float32, device=linked)
    prg.fill(x.shape, ha.write(x), 5.0)
    h = handler(_overwrite(x, 100.0))
    with ha.transfer_guard("log"):
        got = float(x[5])
    assert h.seen == [("acquire", (5 * F, 6 * F))] and h.fn is None
    assert got in (5.0, 100.0)  # the acquired value, or the handler's if read after it
    np.testing.assert_array_equal(np.array(x), np.full(N, 100.0, np.float32))
    prg.add(x.shape, x, 1.0)  # the handler's write is what the kernel sees
    assert float(x[5]) == 101.0 and float(x[N - 1]) == 101.0


def test_a_handler_writing_between_two_runs_of_one_acquire_wins(prg, linked, handler) -> None:
    # two device-newest ranges with a host-current gap: one read acquires two runs, a record
    # each; the handler's write after the first one's made the second one's plan stale
    x = ha.zeros(N, dtype=ha.float32, device=linked)
    prg.fill(256, ha.write(x[:256]), 5.0)
    prg.fill(256, ha.write(x[512:768]), 5.0)
    h = handler(_overwrite(x, 100.0))
    with ha.transfer_guard("log"):
        got = np.array(x)
    assert h.seen == [("acquire", (0, 256 * F)), ("acquire", (512 * F, 768 * F))]
    expected = np.zeros(N, np.float32)
    expected[:256] = expected[512:768] = 5.0
    assert (got == expected).all() or (got == 100.0).all()
    np.testing.assert_array_equal(np.array(x), np.full(N, 100.0, np.float32))
    prg.add(x.shape, x, 1.0)
    np.testing.assert_array_equal(np.array(x), np.full(N, 101.0, np.float32))


def test_a_handler_writing_the_array_a_launch_publishes_wins(prg, linked, handler) -> None:
    # the launch's publish is logged: the handler runs once the launch is enqueued and
    # recorded, so its write comes after the kernel (which read the published 1.0)
    x = ha.zeros(N, dtype=ha.float32, device=linked)
    prg.fill(x.shape, ha.write(x), 0.0)
    x[...] = 1.0
    h = handler(_overwrite(x, 100.0))
    with ha.transfer_guard("log"):
        prg.add(x.shape, x, 1.0)
    assert h.seen[0] == ("publish", (0, N * F))
    np.testing.assert_array_equal(np.array(x), np.full(N, 100.0, np.float32))
    prg.add(x.shape, x, 1.0)
    np.testing.assert_array_equal(np.array(x), np.full(N, 101.0, np.float32))


def test_a_handler_reading_the_array_sees_the_acquired_bytes(prg, linked, handler) -> None:
    x = ha.zeros(N, dtype=ha.float32, device=linked)
    prg.fill(x.shape, ha.write(x), 5.0)
    seen: list[float] = []
    h = handler(lambda record: seen.append(float(ha.sum(x))))  # acquires the rest: logged
    with ha.transfer_guard("log"):
        assert float(x[5]) == 5.0
    assert seen == [5.0 * N]
    assert h.seen == [("acquire", (5 * F, 6 * F)), ("acquire", (0, 5 * F)),
                      ("acquire", (6 * F, N * F))]


@pytest.mark.parametrize("read", ["np.array", "np.asarray(copy=True)", "tolist", "ha.sum",
                                  "np.sum", "copy of a slice"])
def test_a_handler_launching_on_the_array_being_acquired_is_seen_by_the_read(
        prg, linked, handler, read) -> None:
    # review of issue 20 (5): a handler that launched a kernel on the array whose acquire it
    # was told about made the bytes device-newest again after the acquire, before the read
    # used them: copying reads returned the bytes before the kernel on the copied link and
    # the kernel's on the shared one.  The read acquires again: both links see the kernel.
    x = ha.zeros(N, dtype=ha.float32, device=linked)
    prg.fill(x.shape, ha.write(x), 5.0)

    def launch(record: logging.LogRecord) -> None:
        prg.add(x.shape, x, 100.0)
    handler(launch)
    with ha.transfer_guard("log"):
        if read == "np.array":
            got = np.array(x)
        elif read == "np.asarray(copy=True)":
            got = np.asarray(x, copy=True)
        elif read == "tolist":
            got = np.asarray(x.tolist(), np.float32)
        elif read == "ha.sum":
            got = np.float32(float(ha.sum(x)) / N)
        elif read == "np.sum":
            got = np.float32(float(np.sum(x)) / N)
        else:
            got = np.asarray(ha.asarray(x[:4], copy=True).tolist(), np.float32)
    assert (np.asarray(got) == 105.0).all(), got
    np.testing.assert_array_equal(np.array(x), np.full(N, 105.0, np.float32))


def test_operators_and_element_wise_functions_log_their_public_names(prg, log) -> None:
    """The trigger of an operator's or an element-wise function's transfer is its public
    name (``HostPtrArray.__add__``, ``hostarray.add``), not a generated closure's."""
    triggers = []
    for op in (lambda x: x + 1.0, lambda x: ha.add(x, 1.0), lambda x: x.__iadd__(1.0)):
        x = on_device(prg)
        log.clear()
        with ha.transfer_guard("log"):
            old = ha.set_device_compute_threshold(None)  # the host path: x is acquired
            try:
                op(x)
            finally:
                ha.set_device_compute_threshold(old)
        triggers += [r.trigger for r in records(log)]  # type: ignore[attr-defined]
    assert triggers == ["HostPtrArray.__add__", "hostarray.add", "HostPtrArray.__iadd__"]
