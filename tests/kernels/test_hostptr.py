"""The seed's API, hostarray.hostptr, on the real OpenCL device: among the rest, a
``cl_buffer`` block that raises leaves the data as it was, and ``free_buffer`` racing
launches in another thread loses no launch."""

from __future__ import annotations

import functools
import time
from typing import Any

import numpy as np
import pytest

import hostarray as ha
from hostarray import hostptr
from hostarray._storage import address_of
from tests._threads import run_in_threads

pytestmark = pytest.mark.device

JOIN_TIMEOUT = 20.0  # seconds: a thread still alive then is deadlocked
STRESS_S = 1.5  # seconds of each randomized race (the deterministic tests do the real work)

SRC = r"""
__kernel void add(__global float *x, const float v) { x[get_global_id(0)] += v; }
__kernel void swap_add(__global float *a, __global float *b, const float v) {
    int i = get_global_id(0); float t = a[i]; a[i] = b[i] + v; b[i] = t + v; }
"""


@pytest.fixture(scope="module")
def prg(cl_device):
    return ha.Program(SRC, device=cl_device)


def host_copy(x: Any) -> np.ndarray:
    return np.array(x, copy=True)


run_threads = functools.partial(run_in_threads, timeout=JOIN_TIMEOUT)


def _state(x: ha.HostPtrArray) -> tuple:
    return (np.array(x._a, copy=True).tobytes(), dict(x._s.buffers), x._device)


def test_attach_reports_a_verified_link(cl_device) -> None:
    x = ha.zeros(1024, dtype=ha.float32)
    link = hostptr.attach(x, cl_device)
    assert link.kind == cl_device.link
    assert link.device == cl_device and link.nbytes == x.nbytes
    assert hostptr.host_link(x, cl_device) == link
    assert hostptr.host_link(ha.zeros(3), cl_device) is None


def test_attach_twice_raises_buffer_exists(cl_device) -> None:
    x = ha.zeros(16)
    hostptr.attach(x, cl_device)
    before = _state(x)
    with pytest.raises(hostptr.BufferExists) as e:
        hostptr.attach(x, cl_device)
    assert e.value.array_id == id(x) and e.value.device == cl_device
    assert "free_buffer" in hostptr.error_message(e.value)
    assert _state(x) == before


def test_misaligned_memory_is_refused_and_unchanged(cl_device) -> None:
    raw = np.zeros(4 * 256 + 8, np.uint8)  # numpy's own memory
    start = 1 + (-address_of(raw) % 4)  # one byte past a float32 boundary
    a = raw[start:start + 4 * 256].view(np.float32)
    a[:] = 7
    with pytest.raises(hostptr.Refused) as e:
        hostptr.of_numpy(cl_device, a)
    r = e.value.reason
    assert r.kind == "alignment" and r.address == address_of(a)
    assert r.required == max(cl_device.host_alignment, 4)  # never below the element size
    assert "ha.empty" in hostptr.refusal_message(r)
    assert (a == 7).all()
    x = ha.asarray(a)
    before = _state(x)
    with pytest.raises(hostptr.Refused):
        hostptr.attach(x, cl_device)
    assert _state(x) == before and x._s.buffers == {}


def test_zero_bytes_and_too_large_are_refused(cl_device) -> None:
    with pytest.raises(hostptr.Refused) as e:
        hostptr.attach(ha.zeros(0), cl_device)
    assert e.value.reason.kind == "size" and e.value.reason.size == 0
    big = ha.empty(cl_device.max_alloc + 64, dtype=ha.uint8)  # virtual memory: never touched
    with pytest.raises(hostptr.Refused) as e:
        hostptr.attach(big, cl_device)
    assert e.value.reason.kind == "size"
    assert e.value.reason.limit == cl_device.max_alloc and e.value.reason.size > cl_device.max_alloc
    assert big._s.buffers == {}


def test_host_device_is_refused_by_type() -> None:
    with pytest.raises(hostptr.Refused) as e:
        hostptr.attach(ha.zeros(4), "cpu")
    assert e.value.reason.kind == "device_type"


def test_non_contiguous_numpy_is_not_host_backed(cl_device) -> None:
    a = np.asarray(ha.zeros((8, 8)))[:, ::2]
    with pytest.raises(hostptr.NotHostBacked) as e:
        hostptr.of_numpy(cl_device, a)
    assert isinstance(e.value.array_id, int)


def test_of_numpy_shares_the_pointer_with_the_device(cl_device) -> None:
    a = np.asarray(ha.zeros(64, dtype=ha.int32))
    x = hostptr.of_numpy(cl_device, a)
    assert hostptr.host_link(x, cl_device).address == address_of(a)
    prg = ha.Program("__kernel void put(__global int *x) { x[get_global_id(0)] = 3; }",
                     device=cl_device)
    prg.put(64, x)
    assert (np.asarray(x) == 3).all()
    assert np.shares_memory(np.asarray(x), a)
    if cl_device.link == "shared":
        # the device wrote the very bytes numpy owns
        assert (a == 3).all()


def test_install_over_own_memory_and_new_memory(cl_device) -> None:
    x = ha.zeros(32, dtype=ha.float32)
    link = hostptr.install(x, cl_device, np.asarray(x))
    assert link.address == x._s.address
    y = ha.zeros(32, dtype=ha.float32)
    fresh = np.asarray(ha.asarray(np.arange(32, dtype=np.float32), copy=True))
    hostptr.install(y, cl_device, fresh)
    assert np.array_equal(np.asarray(y), np.arange(32, dtype=np.float32))
    assert hostptr.host_link(y, cl_device).address == address_of(fresh)
    with pytest.raises(ValueError):
        hostptr.install(ha.zeros(3), cl_device, np.zeros(4))


def test_free_buffer_keeps_newest_data_and_launch_recreates(cl_device) -> None:
    prg = ha.Program("__kernel void inc(__global float *x) { x[get_global_id(0)] += 1; }",
                     device=cl_device)
    x = ha.zeros(256, dtype=ha.float32, device=cl_device)
    prg.inc(256, x)
    ha.reset_stats()
    assert hostptr.free_buffer(x, cl_device) is True
    assert ha.stats().acquires == 1  # the device copy was newest: acquired first
    assert hostptr.host_link(x, cl_device) is None
    assert (np.asarray(x) == 1).all()
    assert hostptr.free_buffer(x, cl_device) is False
    prg.inc(256, x)  # a launch re-creates the buffer
    assert hostptr.host_link(x, cl_device) is not None
    assert (np.asarray(x) == 2).all()


def test_publish_and_acquire_without_buffer_do_nothing(cl_device) -> None:
    x = ha.zeros(8)
    hostptr.publish_host_writes(x, cl_device)
    hostptr.acquire_device_writes(x, cl_device)
    s = ha.stats()
    assert (s.publishes, s.acquires) == (0, 0)


@pytest.mark.parametrize("before", ["kernel", "host write", "nothing"])
def test_explicit_publish_keeps_the_newest_data_on_every_link(cl_device, before) -> None:
    # one contract every link can honour: the newest data wins (unread device writes are
    # acquired first, not discarded: a shared link could not discard them)
    prg = ha.Program("__kernel void put(__global int *x) { x[get_global_id(0)] = 9; }"
                     "__kernel void add1(__global int *x) { x[get_global_id(0)] += 1; }",
                     device=cl_device)
    x = ha.zeros(128, dtype=ha.int32, device=cl_device)
    model = np.zeros(128, np.int32)
    prg.add1(128, x)
    model += 1
    if before == "kernel":
        prg.put(128, x)
        model[:] = 9
    elif before == "host write":
        x[3] = 42
        model[3] = 42
    ha.reset_stats()
    hostptr.publish_host_writes(x, cl_device)
    s = ha.stats()
    # always one publish (an explicit request); acquires first of what the device held
    # and the host had not read: all of it, or (after the host wrote element 3 without
    # reading anything) the two runs around that element
    expected = {"kernel": (1, 1, 512), "host write": (1, 2, 508), "nothing": (1, 1, 512)}
    publishes, acquires, acquired_bytes = expected[before]
    assert (s.publishes, s.acquires) == (publishes, acquires)
    if cl_device.link != "shared":  # a shared link moves no byte
        assert (s.bytes_acquired, s.bytes_published) == (acquired_bytes, 512)
    prg.add1(128, x)  # the device works on the newest data
    model += 1
    assert np.array_equal(np.asarray(x), model)


def test_explicit_acquire(cl_device) -> None:
    prg = ha.Program("__kernel void put(__global int *x) { x[get_global_id(0)] = 5; }",
                     device=cl_device)
    x = ha.zeros(128, dtype=ha.int32, device=cl_device)
    prg.put(128, x)
    hostptr.acquire_device_writes(x, cl_device)
    assert ha.stats().acquires == 1
    assert (x._a == 5).all()  # visible in the raw host bytes, without a further sync
    hostptr.acquire_device_writes(x, cl_device)
    assert ha.stats().acquires == 1  # nothing newer: a no-op


def test_raw_pyopencl_hand_off(cl_device) -> None:
    import pyopencl as cl

    x = ha.zeros(16, dtype=ha.float32, device=cl_device)
    x[:] = 1
    with hostptr.cl_buffer(x, cl_device, "rw") as buf:
        assert isinstance(buf, cl.Buffer)
        cl.enqueue_fill_buffer(hostptr.queue(cl_device), buf, np.float32(4), 0, 32)
    assert ha.stats().publishes == 1
    out = np.asarray(x)
    assert ha.stats().acquires == 1
    assert list(out[:9]) == [4] * 8 + [1]


def test_error_messages_are_one_sentence_with_advice() -> None:
    errs = [hostptr.Refused("d", hostptr.Refusal("backend", code=-61, text="bad")),
            hostptr.NotHostBacked(1), hostptr.BufferExists(1, "d"),
            hostptr.UnknownFramework("cuda")]
    for e in errs:
        msg = hostptr.error_message(e)
        assert msg and ";" in msg and str(e) == msg
    with pytest.raises(ValueError):
        hostptr.Refusal("nonsense")


def test_attach_of_a_view_makes_a_launchs_checks_first(cl_device) -> None:
    # attach took any view and attached its whole array; a launch refuses those views
    g = cl_device.alignment // 4  # float32 elements per alignment unit
    for view, error, kind in [(lambda x: x[::2], hostptr.NotHostBacked, None),
                              (lambda x: x[::-1], hostptr.NotHostBacked, None),
                              (lambda x: x[1:], hostptr.Refused, "alignment")]:
        x = ha.asarray(np.arange(4 * g, dtype=np.float32))
        before = ha.stats()
        with pytest.raises(error) as e:
            hostptr.attach(view(x), cl_device)
        if kind:
            assert e.value.reason.kind == kind
        assert hostptr.host_link(x, cl_device) is None and ha.stats() == before  # no change
    x = ha.asarray(np.arange(4 * g, dtype=np.float32))
    link = hostptr.attach(x[g:], cl_device)  # an aligned part: its array's memory attaches
    assert link.nbytes == x.nbytes and hostptr.host_link(x, cl_device) == link
    y = ha.asarray(np.arange(16.0).reshape(4, 4))
    assert hostptr.attach(y.mT, cl_device).nbytes == y.nbytes  # the whole memory, transposed


@pytest.mark.parametrize("name", ["attach", "host_link", "free_buffer", "publish_host_writes",
                                  "acquire_device_writes", "cl_buffer", "install"])
@pytest.mark.parametrize("value", [np.zeros(4, np.float32), None, [1.0]])
def test_hostptr_functions_refuse_what_is_not_an_array(cl_device, name: str, value) -> None:
    # (a bare AttributeError naming a private attribute before)
    args = (value, cl_device) + ((np.zeros(4, np.float32),) if name == "install" else ())
    with pytest.raises(TypeError, match=f"hostptr.{name} takes a HostPtrArray"):
        getattr(hostptr, name)(*args)


@pytest.mark.parametrize("dtype", ["datetime64[s]", "timedelta64[ms]"])
def test_of_numpy_refuses_what_asarray_refuses(cl_device, dtype: str) -> None:
    a = np.zeros(4, dtype)
    with pytest.raises(TypeError):
        ha.asarray(a, device=cl_device)
    with pytest.raises(TypeError, match="can't be shared with a device"):
        hostptr.of_numpy(cl_device, a)


@pytest.mark.parametrize("write", [lambda x: x.__setitem__(slice(0, 4), 1.0),
                                   lambda x: x.__iadd__(1.0),
                                   lambda x: np.add(x, 1.0, out=x)])
def test_a_host_write_under_an_open_writing_raw_block_is_refused(cl_device, write) -> None:
    # the block's writes land when it ends, over its whole range: a host write meanwhile
    # was lost silently (x[0:4] += 1 inside a "+= 10" block gave 10, not 11)
    import pyopencl as cl

    n = 256
    x = ha.zeros(n, dtype=ha.float32, device=cl_device)
    src = "__kernel void addv(__global float *y, const float v) { y[get_global_id(0)] += v; }"
    q = hostptr.queue(cl_device)
    raw = cl.Program(q.context, src).build()
    with hostptr.cl_buffer(x, cl_device, "rw") as buf:
        raw.addv(q, (n,), None, buf, np.float32(10.0))
        before = ha.stats()
        with pytest.raises(hostptr.InUse) as e:
            write(x)
        assert e.value.device == cl_device and e.value.byte_range == (0, n * 4)
        assert ha.stats() == before  # refused before anything moved
    np.testing.assert_array_equal(np.asarray(x), np.full(n, 10, np.float32))
    write(x)  # after the block: an ordinary write
    model = np.full(n, 10, np.float32)
    write(model)
    np.testing.assert_array_equal(np.asarray(x), model)
    with hostptr.cl_buffer(x, cl_device, "r"):
        x[5] = 3.0  # a read-only block: its bytes may be written (it records no writes)
    assert float(x[5]) == 3.0


def _fill_block(x, dev, access, value=4.0):
    """A cl_buffer block that fills x on the device (raw pyopencl), left open."""
    import pyopencl as cl

    block = hostptr.cl_buffer(x, dev, access)
    buf = block.__enter__()
    cl.enqueue_fill_buffer(hostptr.queue(dev), buf, np.float32(value), 0, x.nbytes)
    return block


@pytest.mark.parametrize("before", ["fresh", "attached", "device-newest"])
def test_a_host_write_under_a_write_only_block_is_refused(cl_device, before) -> None:
    # a "w" block on an array no device held (fresh, attached) let host writes through:
    # the storage counted as host-only, and the write was lost at the block's end
    x = ha.zeros(64, dtype=ha.float32)
    if before != "fresh":
        hostptr.attach(x, cl_device)
    if before == "device-newest":
        _fill_block(x, cl_device, "w", 1.0).__exit__(None, None, None)
    block = _fill_block(x, cl_device, "w")
    st = ha.stats()
    with pytest.raises(hostptr.InUse):
        x[3] = 9.0
    with pytest.raises(hostptr.InUse):
        np.add(x, 1, out=x)
    assert ha.stats() == st
    block.__exit__(None, None, None)
    np.testing.assert_array_equal(np.asarray(x), np.full(64, 4, np.float32))


def test_free_buffer_inside_a_block_keeps_its_bytes_the_blocks(cl_device) -> None:
    x = ha.zeros(64, dtype=ha.float32)
    block = _fill_block(x, cl_device, "rw")
    assert hostptr.free_buffer(x, cl_device)
    with pytest.raises(hostptr.InUse):  # it was allowed, then overwritten at the block's end
        x[0] = 9.0
    block.__exit__(None, None, None)
    np.testing.assert_array_equal(np.asarray(x), np.full(64, 4, np.float32))


def test_a_launch_on_the_blocks_device_reads_the_raw_codes_bytes(cl_device) -> None:
    # the launch published the host's bytes over what the raw code wrote (a lost write on
    # the mapped and copied links); the block's own queue orders the two, so the launch
    # publishes nothing there and reads the raw code's bytes
    prg = ha.Program("__kernel void addv(__global float *y, const float v) "
                     "{ y[get_global_id(0)] += v; }", device=cl_device)
    x = ha.zeros(64, dtype=ha.float32, device=cl_device)
    x[...] = 1.0  # host-newest
    block = _fill_block(x, cl_device, "w")
    ha.reset_stats()
    prg.addv(x.shape, x, 2.0)  # fill 4, then + 2
    assert ha.stats().publishes == 0
    block.__exit__(None, None, None)
    np.testing.assert_array_equal(np.asarray(x), np.full(64, 6, np.float32))
    prg.addv(x.shape, x, 2.0)  # after the block: an ordinary launch
    np.testing.assert_array_equal(np.asarray(x), np.full(64, 8, np.float32))


@pytest.mark.parametrize("inner", ["r", "rw"])
@pytest.mark.parametrize("view", ["whole", "part"])
def test_a_nested_block_on_the_same_device_keeps_the_outer_blocks_writes(cl_device, inner,
                                                                         view) -> None:
    # the inner block's entry published the host's bytes over what the outer write-only
    # block's raw code had written (mapped and copied links): a lost write
    import pyopencl as cl

    n = 4 * cl_device.alignment // 4  # floats: four sub-buffer alignment units
    x = ha.zeros(n, dtype=ha.float32, device=cl_device)
    x[...] = 1.0  # host-newest
    q = hostptr.queue(cl_device)
    raw = cl.Program(q.context, "__kernel void addv(__global float *y, const float v) "
                                "{ y[get_global_id(0)] += v; }").build()
    part = x if view == "whole" else x[: n // 2]
    with hostptr.cl_buffer(x, cl_device, "w") as outer:
        cl.enqueue_fill_buffer(q, outer, np.float32(4.0), 0, x.nbytes)
        with hostptr.cl_buffer(part, cl_device, inner) as buf:
            if inner == "rw":
                raw.addv(q, (part.shape[0],), None, buf, np.float32(1.0))
            else:
                got = np.empty(part.shape[0], np.float32)
                cl.enqueue_copy(q, got, buf)  # the inner block reads the raw code's bytes
                np.testing.assert_array_equal(got, np.full(part.shape[0], 4, np.float32))
    model = np.full(n, 4, np.float32)
    if inner == "rw":
        model[: part.shape[0]] += 1
    np.testing.assert_array_equal(np.asarray(x), model)


def test_a_refused_write_reads_nothing_first(cl_device) -> None:
    # x[...] = y read y (an acquire) before refusing the write into x
    prg = ha.Program("__kernel void setv(__global float *y, const float v) "
                     "{ y[get_global_id(0)] = v; }", device=cl_device)
    x = ha.zeros(64, dtype=ha.float32, device=cl_device)
    y = ha.zeros(64, dtype=ha.float32, device=cl_device)
    prg.setv(y.shape, y, 5.0)  # y's newest bytes on the device
    block = _fill_block(x, cl_device, "rw")
    st = ha.stats()
    for write in (lambda: x.__setitem__(slice(0, 64), y), lambda: x.__iadd__(y)):
        with pytest.raises(hostptr.InUse):
            write()
    assert ha.stats() == st
    block.__exit__(None, None, None)
    assert float(x[0]) == 4.0 and float(y[0]) == 5.0


@pytest.mark.parametrize("access", ["w", "rw"])
def test_publish_host_writes_inside_a_block_keeps_the_raw_codes_bytes(cl_device,
                                                                      access) -> None:
    # the explicit publish copied the host's older bytes over what the raw code wrote
    # (copied link: 1.0 instead of 8.0); the newest data wins on every link
    import pyopencl as cl

    x = ha.ones(256, dtype=ha.float32)
    hostptr.attach(x, cl_device)
    q = hostptr.queue(cl_device)
    with hostptr.cl_buffer(x[:128], cl_device, access) as buf:
        cl.enqueue_fill_buffer(q, buf, np.float32(8.0), 0, 128 * 4)
        hostptr.publish_host_writes(x, cl_device)  # x[128:] still published
    model = np.ones(256, np.float32)
    model[:128] = 8
    np.testing.assert_array_equal(np.asarray(x), model)


def test_a_block_whose_buffer_was_let_go_refuses_its_devices_accesses(cl_device) -> None:
    # free_buffer inside a block: the raw code's bytes are in the old buffer until the
    # block ends; a launch or a nested block on the same device would use a new buffer
    # without them (copied link: garbage read, and the launch's writes lost at the end)
    import pyopencl as cl

    prg = ha.Program("__kernel void addv(__global float *y, const float v) "
                     "{ y[get_global_id(0)] += v; }", device=cl_device)
    x = ha.zeros(64, dtype=ha.float32, device=cl_device)
    block = hostptr.cl_buffer(x, cl_device, "w")
    buf = block.__enter__()
    cl.enqueue_fill_buffer(hostptr.queue(cl_device), buf, np.float32(5.0), 0, x.nbytes)
    assert hostptr.free_buffer(x, cl_device)
    st = ha.stats()
    with pytest.raises(hostptr.InUse):
        prg.addv(x.shape, x, 1.0)
    for access in ("r", "rw"):
        with pytest.raises(hostptr.InUse):
            with hostptr.cl_buffer(x, cl_device, access):
                pass
    assert ha.stats() == st  # refused before anything moved
    block.__exit__(None, None, None)
    np.testing.assert_array_equal(np.asarray(x), np.full(64, 5, np.float32))
    prg.addv(x.shape, x, 1.0)  # after the block: an ordinary launch
    np.testing.assert_array_equal(np.asarray(x), np.full(64, 6, np.float32))


def test_assigning_a_view_to_itself_writes_nothing(cl_device) -> None:
    # x[a:b] += 1 ends with x[a:b] = <the same view>: that second step was a host write,
    # refused under an open block that opened after the add had landed
    x = ha.zeros(64, dtype=ha.float32, device=cl_device)
    other = ha.zeros(64, dtype=ha.float32, device=cl_device)
    v = x[8:16]
    block = _fill_block(x, cl_device, "rw")
    st = ha.stats()
    x[8:16] = v  # numpy copies nothing here either
    x[...] = x
    assert ha.stats() == st
    with pytest.raises(hostptr.InUse):
        x[8:16] = x[0:8]  # other bytes: a real write
    with pytest.raises(hostptr.InUse):
        x[8:16] = other[8:16]  # another array
    block.__exit__(None, None, None)
    np.testing.assert_array_equal(np.asarray(x), np.full(64, 4, np.float32))


# -- a raw cl_buffer block that raises leaves the data as it was -----------------------------------

@pytest.mark.parametrize("access", ["w", "rw", "r"])
@pytest.mark.parametrize("state", ["host-newest", "device-newest"])
def test_raw_block_that_raises_leaves_the_data(prg, cl_device, access, state) -> None:
    x = ha.asarray(np.arange(8, dtype=np.float32), device=cl_device, copy=True)
    expected = np.arange(8, dtype=np.float32)
    if state == "device-newest":
        prg.add(8, x, 1.0)
        expected += 1
    with pytest.raises(RuntimeError, match="boom"):
        with hostptr.cl_buffer(x, cl_device, access) as buf:
            assert buf is not None
            raise RuntimeError("boom")
    np.testing.assert_array_equal(np.asarray(x, copy=True), expected)
    prg.add(8, x, 1.0)  # the next launch works on the newest data
    np.testing.assert_array_equal(np.asarray(x, copy=True), expected + 1)


def test_raw_block_raising_after_enqueueing_waits_for_its_work(prg, cl_device) -> None:
    import pyopencl as cl

    x = ha.asarray(np.arange(1 << 16, dtype=np.float32), device=cl_device, copy=True)
    with pytest.raises(RuntimeError):
        with hostptr.cl_buffer(x, cl_device, "rw") as buf:
            cl.enqueue_fill_buffer(hostptr.queue(cl_device), buf, np.float32(5), 0, 64)
            raise RuntimeError("after enqueueing")
    got = np.asarray(x, copy=True)
    # the fill finished before the host could look; on a shared link it landed in host
    # memory, on a copied one the host kept its data: either way one consistent answer
    assert (got[:16] == 5).all() or (got[:16] == np.arange(16)).all()
    np.testing.assert_array_equal(got[16:], np.arange(16, 1 << 16, dtype=np.float32))
    prg.add(1 << 16, x, 1.0)
    np.testing.assert_array_equal(np.asarray(x, copy=True), got + 1)


# -- free_buffer in one thread racing launches in another ------------------------------------------

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


@pytest.mark.parametrize("link", [None, "copied"])
def test_a_log_handler_raising_as_a_block_begins_leaves_no_block_open(cl_device, link) -> None:
    # review of issue 20 (5): the publish record of cl_buffer's entry reached a handler that
    # raised as the storage's lock was let go, after the block had opened: __enter__ raised,
    # so __exit__ never ran, and every later host write to the array raised InUse
    import logging

    from hostarray.bench import forced_link

    class Raising(logging.Handler):
        armed = True

        def emit(self, record: logging.LogRecord) -> None:
            if Raising.armed:
                Raising.armed = False
                raise RuntimeError("handler failed")
    logger = logging.getLogger("hostarray.transfers")
    handler = Raising()
    logger.addHandler(handler)
    try:
        with forced_link(cl_device, link):
            x = ha.zeros(64, dtype=ha.float32, device=cl_device)
            with hostptr.cl_buffer(x, cl_device, "w"):
                pass  # x's buffer exists; the host holds the newest bytes
            x[...] = 1.0  # host-newest: the next block's entry publishes (a log record)
            with pytest.raises(RuntimeError, match="handler failed"):
                with ha.transfer_guard("log"):
                    with hostptr.cl_buffer(x, cl_device, "rw"):
                        raise AssertionError("the block's body must not run")
            x[...] = 5.0  # no block left open: the write is allowed
            with hostptr.cl_buffer(x, cl_device, "rw"):
                pass
            assert float(x[0]) == 5.0
    finally:
        logger.removeHandler(handler)
        ha.clear_pool()
