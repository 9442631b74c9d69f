"""Lazy fusion (issue 23): element-wise results of the device path are pending expressions.

Each test runs on the real OpenCL device, off a shared link (``off_shared``: on a CPU
device the buffers are copied ones), so a missing flush is a wrong value.  Values are
checked against numpy; launches and transfers against ``ha.stats()``.
"""

from __future__ import annotations

import gc
import pickle
import threading

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import hostarray as ha
from hostarray import hostptr
from hostarray._compute import fusion
from tests._device_helpers import newest_on

pytestmark = pytest.mark.device

N = 1000
_FILL = "__kernel void fill(__global float *x, const float v) { x[get_global_id(0)] = v; }"
_COPY = ("__kernel void cp(__global const float *x, __global float *y) "
         "{ y[get_global_id(0)] = x[get_global_id(0)]; }")


def _data(dev, n=N, dtype="float32"):
    a = (np.arange(n) % 7 - 3).astype(dtype)
    return newest_on(dev, a, dtype), a


def _pending(y) -> bool:
    return fusion.pending_program(y) is not None


# -- values and launches ------------------------------------------------------------------------

def test_chain_is_one_kernel_and_numpy_bits(off_shared, device_path) -> None:
    x, a = _data(off_shared)
    ha.reset_stats()
    y = ((x * x + 1) * 0.5 - x) / 3
    assert ha.stats().launches == 0 and _pending(y)
    got = np.asarray(y)
    s = ha.stats()
    assert s.launches == 1 and s.device_ops == 5, s
    assert np.array_equal(got, ((a * a + 1) * np.float32(0.5) - a) / 3)


def test_reduction_of_a_chain_launches_at_most_two_kernels(off_shared, device_path) -> None:
    x, a = _data(off_shared, 1 << 16)
    ha.reset_stats()
    r = ha.sum(((x * x + 1) * 0.5 - x) / 3)
    v = float(r)
    s = ha.stats()
    assert s.launches <= 2 and s.bytes_acquired == r.nbytes and s.acquires == 1, s
    ref = (((a * a + 1) * np.float32(0.5) - a) / 3).astype(np.float64).sum()
    assert v == pytest.approx(ref, rel=1e-5)


@pytest.mark.parametrize("fn", ["sum", "max", "min", "mean", "var", "std", "prod", "argmax"])
@pytest.mark.parametrize("axis", [None, 0, 1])
def test_reductions_fold_the_expression(off_shared, device_path, fn, axis) -> None:
    x, a = _data(off_shared, 60 * 40)
    x, a = ha.reshape(x, (60, 40)), a.reshape(60, 40)
    ha.reset_stats()
    r = getattr(ha, fn)(ha.abs(x * 0.5 - 1) + 1, axis=axis)
    got = np.asarray(r)
    assert ha.stats().launches <= (4 if fn in ("var", "std") else 2)
    ref = getattr(np, fn)(np.abs(a * np.float32(0.5) - 1) + 1, axis=axis)
    np.testing.assert_allclose(got, ref, rtol=1e-4)


def test_intermediate_read_later_is_still_right(off_shared, device_path) -> None:
    x, a = _data(off_shared)
    y = x * 2
    z = y + 1                       # inlines y's program
    assert np.array_equal(np.asarray(z), a * 2 + 1)
    assert np.array_equal(np.asarray(y), a * 2)


def test_dead_intermediates_are_never_computed(off_shared, device_path) -> None:
    x, _ = _data(off_shared)
    ha.reset_stats()
    for _ in range(3):
        y = x * 2 + 1
    del y
    gc.collect()
    np.asarray(x)                   # flushes whatever still reads x
    assert ha.stats().launches == 0


_OPS = [("add", lambda p, q: p + q), ("multiply", lambda p, q: p * q),
        ("subtract", lambda p, q: p - q), ("maximum", None), ("where", None)]


@settings(max_examples=15, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.lists(st.tuples(st.sampled_from(range(len(_OPS))), st.integers(0, 3),
                          st.sampled_from([0.5, 2, -1, True]), st.integers(0, 5)),
                min_size=1, max_size=8),
       st.sampled_from(["float32", "int32", "int8"]))
def test_random_chains_with_hazards_against_numpy(off_shared, device_path, steps,
                                                  dtype) -> None:
    x, a = _data(off_shared, 257, dtype)
    w, b = _data(off_shared, 257, "float32")
    prg = ha.Program(_FILL, device=off_shared)
    vals = [x, w, x[::-1], ha.reshape(w, (1, 257))]
    refs = [a, b, a[::-1], b.reshape(1, 257)]
    cur, ref = x, a
    with np.errstate(all="ignore"):
        for op, k, scalar, hazard in steps:
            name, f = _OPS[op]
            other, oref = (vals[k], refs[k]) if k < 3 else (scalar, scalar)
            if name == "maximum":
                cur, ref = ha.maximum(cur, other), np.maximum(ref, oref)
            elif name == "where":
                cur, ref = ha.where(cur > 0, cur, other), np.where(ref > 0, ref, oref)
            else:
                cur, ref = f(cur, other), f(ref, oref)
            # a hazard on an input: numpy's model has computed ref already
            if hazard == 1:
                x[k] = 1
                a[k] = 1
            elif hazard == 2:
                prg.fill(w.shape, ha.write(w), np.float32(k))
                b[...] = k
            elif hazard == 3:
                v = np.asarray(x)
                v[-1] = 2
                a[-1] = 2
                del v
        np.testing.assert_allclose(np.asarray(cur), ref, rtol=1e-6)
        if cur.dtype in (ha.float32, ha.float64):
            assert float(ha.sum(cur)) == pytest.approx(float(np.sum(ref, dtype=np.float64)),
                                                       rel=1e-4, abs=1e-3)


# -- hazards: every write to an input runs the expression first -----------------------------------

def _hazard(dev, write):
    x, a = _data(dev)
    y = x * 2 + 1
    assert _pending(y)
    write(x)
    assert np.array_equal(np.asarray(y), a * 2 + 1)
    return x


def test_host_write_to_an_input(off_shared, device_path) -> None:
    x = _hazard(off_shared, lambda x: x.__setitem__(slice(None), 5.0))
    assert float(x[0]) == 5.0


def test_host_write_of_one_element(off_shared, device_path) -> None:
    x = _hazard(off_shared, lambda x: x.__setitem__(3, 9.0))
    assert float(x[3]) == 9.0


def test_in_place_operator_on_an_input(off_shared, device_path) -> None:
    def inc(x):
        x += 1
    x = _hazard(off_shared, inc)
    assert float(x[0]) == -2.0


def test_kernel_writing_an_input(off_shared, device_path) -> None:
    prg = ha.Program(_FILL, device=off_shared)
    x = _hazard(off_shared, lambda x: prg.fill(x.shape, ha.write(x), np.float32(4)))
    assert float(x[1]) == 4.0


def test_cl_buffer_writing_an_input(off_shared, device_path) -> None:
    import pyopencl as cl

    def raw(x):
        with hostptr.cl_buffer(x, off_shared, "w") as buf:
            cl.enqueue_fill_buffer(hostptr.queue(off_shared), buf, np.float32(6), 0, x.nbytes)
    x = _hazard(off_shared, raw)
    assert float(x[2]) == 6.0


@pytest.mark.parametrize("mode", ["w", "rw"])
@pytest.mark.parametrize("case", ["whole", "view block", "operand inside", "in-place"])
def test_operation_inside_a_cl_buffer_block_precedes_the_raw_writes_after_it(
        off_shared, device_path, mode, case) -> None:
    """An operation made inside an open block over its input is queued before the raw
    commands that follow it in the block (as an eager launch was), not deferred past them."""
    import pyopencl as cl

    x, a = _data(off_shared)
    q = hostptr.queue(off_shared)
    y0 = x * 2 if case in ("operand inside", "in-place") else None
    lo = 512 if case == "view block" else 0  # (a sub-buffer starts on the device's alignment)
    region = x[lo:]
    with hostptr.cl_buffer(region, off_shared, mode) as buf:
        if case == "operand inside":
            y = y0 + x
            want = a * 2 + a
        elif case == "in-place":
            y = y0
            y += x
            want = a * 2 + a
        else:
            y = x * 2
            want = a * 2
        cl.enqueue_fill_buffer(q, buf, np.float32(9), 0, (N - lo) * 4)
    np.testing.assert_array_equal(np.asarray(y), want)
    np.testing.assert_array_equal(np.asarray(x)[lo:], np.full(N - lo, 9, np.float32))


def test_free_buffer_of_an_input(off_shared, device_path) -> None:
    _hazard(off_shared, lambda x: hostptr.free_buffer(x, off_shared))


def test_raw_view_write_to_an_input(off_shared, device_path) -> None:
    def raw(x):
        v = np.asarray(x)
        v[:] = 8.0
    x = _hazard(off_shared, raw)
    assert float(x[0]) == 8.0


def test_out_argument_writing_an_input(off_shared, device_path) -> None:
    x = _hazard(off_shared, lambda x: np.multiply(x, 0, out=x))
    assert float(x[0]) == 0.0


def test_write_to_a_pending_result_keeps_its_consumers(off_shared, device_path) -> None:
    x, a = _data(off_shared)
    y = x * 2
    z = y + 1
    y[...] = 0.0
    assert np.array_equal(np.asarray(z), a * 2 + 1)
    assert float(ha.sum(y)) == 0.0


# -- every reader of a pending result runs it first ----------------------------------------------

def test_kernel_reading_a_pending_result(off_shared, device_path) -> None:
    x, a = _data(off_shared)
    out = ha.zeros(N, dtype=ha.float32, device=off_shared)
    ha.Program(_COPY, device=off_shared).cp((N,), x * 3, out)
    assert np.array_equal(np.asarray(out), a * 3)


def test_views_dlpack_pickle_to_device(off_shared, device_path) -> None:
    x, a = _data(off_shared)
    assert float((x * 2)[5]) == a[5] * 2
    assert np.array_equal(np.asarray((x * 2)[1:] + 1), a[1:] * 2 + 1)
    assert np.array_equal(np.from_dlpack(x - 1), a - 1)
    assert np.array_equal(np.asarray(pickle.loads(pickle.dumps(x + 4))), a + 4)
    assert np.array_equal(np.asarray((x * 5).to_device(ha.device("cpu"))), a * 5)


def test_in_place_on_a_pending_result(off_shared, device_path) -> None:
    x, a = _data(off_shared)
    y = x * 2
    y += 1
    y *= 3
    assert np.array_equal(np.asarray(y), (a * 2 + 1) * 3)


def test_transfer_guard_sees_only_the_host_read(off_shared, device_path) -> None:
    x, a = _data(off_shared)
    with ha.transfer_guard("disallow"):
        y = ha.sqrt(ha.abs(x)) * 2.0 + 1
        with pytest.raises(ha.errors.TransferDisallowed):
            float(y[0])
    assert np.allclose(np.asarray(y), np.sqrt(np.abs(a)) * 2 + 1)


def test_expression_size_limit(off_shared, device_path) -> None:
    x, a = _data(off_shared)
    y, ref = x, a
    for _ in range(3 * fusion.MAX_INSTRUCTIONS):
        y, ref = y + 1, ref + 1
    ha.reset_stats()
    assert np.array_equal(np.asarray(y), ref)


def test_threads_write_inputs_while_others_build(off_shared, device_path) -> None:
    x, a = _data(off_shared)
    errors = []

    def reader() -> None:
        for _ in range(30):
            y = x * 1.0  # noqa: F841 - the hazard: x is written meanwhile
            v = float(ha.sum(x * 0 + 1))
            if v != N:
                errors.append(v)

    def writer() -> None:
        for k in range(30):
            x[...] = float(k % 3 - 1)

    threads = [threading.Thread(target=reader), threading.Thread(target=writer)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors


# -- nothing leaks -----------------------------------------------------------------------------

@pytest.mark.slow
def test_loops_stay_flat(off_shared, device_path) -> None:
    import tracemalloc

    x, _ = _data(off_shared)
    coh = x._s.coh
    tracemalloc.start()
    try:
        for i in range(10_000):
            y = x * 2 + 1
            if i % 3 == 0:
                s = ha.sum(x * x)
            if i % 7 == 0:
                float(y[0])
            if i == 1000:
                gc.collect()
                start = tracemalloc.get_traced_memory()[0]
        del y, s
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - start
    finally:
        tracemalloc.stop()
    assert len(coh.inflight) < 40 and len(coh.deferred) < 40, (len(coh.inflight),
                                                              len(coh.deferred))
    assert grown < 1 << 20, grown  # flat: what 9000 iterations left behind


def test_in_place_on_a_pending_result_is_one_kernel(off_shared, device_path) -> None:
    x, a = _data(off_shared)
    ha.reset_stats()
    y = x * 2
    view = y[3:]
    y += 1
    y *= x
    assert ha.stats().launches == 0 and _pending(y)
    assert np.array_equal(np.asarray(y), (a * 2 + 1) * a)
    assert np.array_equal(np.asarray(view), ((a * 2 + 1) * a)[3:])
    assert ha.stats().launches == 1


def test_in_place_then_a_write_to_an_input(off_shared, device_path) -> None:
    x, a = _data(off_shared)
    w, b = _data(off_shared)
    y = x * 2
    y += w                          # the pending launch now reads w too
    w[...] = 100.0
    x[...] = 50.0
    assert np.array_equal(np.asarray(y), a * 2 + b)


def test_pooled_memory_of_a_dead_pending_result_is_reused_safely(off_shared,
                                                                  device_path) -> None:
    x, a = _data(off_shared)
    for k in range(20):
        y = x * float(k)            # the previous y dies pending: its memory is pooled
        z = x + float(k)
    assert np.array_equal(np.asarray(y), a * 19)
    assert np.array_equal(np.asarray(z), a + 19)


def test_live_raw_view_of_an_input_runs_the_expression_at_once(off_shared,
                                                                device_path) -> None:
    x, a = _data(off_shared)
    w, b = _data(off_shared)
    v = np.asarray(x)               # may be written at any time: the expression runs now
    ha.reset_stats()
    y = x * w                       # (w's newest bytes are the device's: the device path)
    assert ha.stats().device_ops == 1 and ha.stats().launches == 1
    v[:] = 1.0
    assert np.array_equal(np.asarray(y), a * b)
    del v


def test_free_buffer_and_explicit_acquire_of_a_pending_result(off_shared,
                                                               device_path) -> None:
    x, a = _data(off_shared)
    y = x * 3
    hostptr.free_buffer(y, off_shared)
    assert np.array_equal(y._a, a * 3)
    z = x - 3
    hostptr.acquire_device_writes(z, off_shared)
    assert np.array_equal(z._a, a - 3)


@pytest.mark.parametrize("axis", [-1, 0])
def test_vecdot_folds_both_operands(off_shared, device_path, axis) -> None:
    x, a = _data(off_shared, 60 * 40)
    x, a = ha.reshape(x, (60, 40)), a.reshape(60, 40)
    ha.reset_stats()
    r = ha.vecdot(x * 2 + 1, ha.abs(x) - 1, axis=axis)
    got = np.asarray(r)
    assert ha.stats().launches == 1
    np.testing.assert_allclose(got, np.vecdot(a * 2 + 1, np.abs(a) - 1, axis=axis), rtol=1e-5)


def test_cl_buffer_of_a_pending_result(off_shared, device_path) -> None:
    import pyopencl as cl

    x, a = _data(off_shared)
    y = x * 4 - 1
    got = np.empty(N, np.float32)
    with hostptr.cl_buffer(y, off_shared, "r") as buf:
        cl.enqueue_copy(hostptr.queue(off_shared), got, buf)
    assert np.array_equal(got, a * 4 - 1)
