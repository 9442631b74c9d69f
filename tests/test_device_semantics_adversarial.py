"""Adversarial review of the device compute path (issue 12): confirmed differences between
the device path and the host path (numpy).  These tests are expected to FAIL until fixed.

Run them on the copied link, where the device path really runs::

    HOSTARRAY_LINK=copied python3 -m pytest tests/test_device_semantics_adversarial.py

(the subprocess tests set ``HOSTARRAY_LINK=copied`` themselves).
"""

from __future__ import annotations

import os
import subprocess
import sys
import warnings
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest
from _device_helpers import C_TYPES as CTYPE

import hostarray as ha

pytestmark = pytest.mark.device

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def device_path() -> Iterator[None]:
    old = ha.set_device_compute_threshold(0)
    try:
        yield
    finally:
        ha.set_device_compute_threshold(old)


def on_device(dev: ha.Device, values, dtype: str) -> ha.HostPtrArray:
    """An array whose newest data is on ``dev`` (a do-nothing kernel wrote it)."""
    a = np.asarray(values, dtype=dtype)
    x = ha.asarray(a, device=dev, copy=True)
    ha.Program(f"__kernel void k(__global {CTYPE[dtype]} *x){{ }}", device=dev).k(x.size, x)
    return x


def host_path(fn):
    old = ha.set_device_compute_threshold(None)
    try:
        return fn()
    finally:
        ha.set_device_compute_threshold(old)


# --- float -> integer casts: the device result differs from numpy's, and even depends on
# --- the array's length (the same value converts differently alone and in a batch)

@pytest.mark.parametrize("src,dst,values", [
    ("float64", "uint16", [-1.0, -1.0]),         # numpy: [65535, 65535]; device: [0, 0]
    ("float64", "uint16", [-129.0, 5.0]),        # numpy: 65407; device: 0
    ("float64", "int16", [65535.5, 1.0]),        # numpy: -1; device: 32767
    ("float32", "uint32", [-129.0]),             # numpy: 4294967167; device: 4294967295
    ("float32", "uint64", [-1e10]),              # numpy: 18446744063709551616; device: 2**64-1
])
def test_astype_float_to_int_matches_numpy(cl_device, device_path, src, dst, values) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = np.asarray(values, dtype=src).astype(dst)
        x = on_device(cl_device, values, src)
        got = np.asarray(ha.astype(x, getattr(ha, dst)))
        host = np.asarray(host_path(lambda: ha.astype(on_device(cl_device, values, src),
                                                        getattr(ha, dst))))
    assert np.array_equal(host, expected)
    assert np.array_equal(got, expected), (got, expected)


def test_astype_float_to_uint16_does_not_depend_on_length(cl_device, device_path) -> None:
    one = np.asarray(ha.astype(on_device(cl_device, [-1.0], "float64"), ha.uint16))
    two = np.asarray(ha.astype(on_device(cl_device, [-1.0, -1.0], "float64"), ha.uint16))
    assert one[0] == two[0] == np.asarray([-1.0]).astype(np.uint16)[0]


def test_setitem_device_float_array_into_uint16_matches_numpy(cl_device, device_path) -> None:
    values = [-1.0, -129.0, 65535.5, 2.0]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        expected = np.zeros(4, np.uint16)
        expected[:] = np.asarray(values, np.float64)
        x = on_device(cl_device, [0, 0, 0, 0], "uint16")
        x[:] = on_device(cl_device, values, "float64")
        assert np.array_equal(np.asarray(x), expected), (np.asarray(x), expected)


# --- max/min reductions: the sign of a zero result differs from numpy's

@pytest.mark.parametrize("fn,values", [("max", [-0.0, 0.0]), ("max", [0.0, -0.0]),
                                       ("min", [0.0, -0.0]), ("min", [-0.0, 0.0])])
def test_max_min_signed_zero_matches_host(cl_device, device_path, fn, values) -> None:
    expected = getattr(np, fn)(np.asarray(values, np.float32))
    got = np.asarray(getattr(ha, fn)(on_device(cl_device, values, "float32")))
    host = np.asarray(host_path(lambda: getattr(ha, fn)(on_device(cl_device, values,
                                                                  "float32"))))
    assert np.signbit(host) == np.signbit(expected)
    assert np.signbit(got) == np.signbit(expected), (got, expected)


# --- HOSTARRAY_DEVICE_COMPUTE_MIN_BYTES: a bad value breaks `import hostarray` itself (and the
# --- CLI, with a traceback) where the other HOSTARRAY_* variables raise at first use

def _run(code: list[str], value: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, HOSTARRAY_LINK="copied", HOSTARRAY_DEVICE_COMPUTE_MIN_BYTES=value,
               PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, *code], env=env, capture_output=True, text=True,
                          timeout=120, cwd=ROOT)


def test_bad_min_bytes_env_does_not_break_import() -> None:
    r = _run(["-c", "import hostarray"], "abc")
    assert r.returncode == 0, r.stderr[-400:]


def test_bad_min_bytes_env_cli_is_one_sentence_exit_2() -> None:
    r = _run(["-m", "hostarray", "--version"], "abc")
    assert r.returncode in (0, 2) and "Traceback" not in r.stderr, r.stderr[-400:]


def test_bad_min_bytes_env_message_quotes_the_value_as_given() -> None:
    r = _run(["-c", "import hostarray as ha; ha.device_compute_threshold()"], "1MiB")
    assert "'1MiB'" in r.stderr or r.returncode == 0, r.stderr[-300:]


# --- stats

def test_compile_seconds_is_a_float_in_a_fresh_process() -> None:
    r = _run(["-c", "import hostarray as ha; print(type(ha.stats().compile_seconds).__name__)"],
             "0")
    assert r.stdout.strip() == "float", (r.stdout, r.stderr[-300:])


def test_stats_repr_documented_fields() -> None:
    # docs/api.md: Stats.__repr__ is ``Stats(publishes=..., ..., launches=...)``; the device
    # counters are part of the repr now, so the documentation is stale (or vice versa)
    doc = (ROOT / "docs" / "api.md").read_text()
    r = repr(ha.stats())
    if "device_ops=" in r:
        assert "device_ops=" in doc.split("Stats.__repr__")[1].split(".. py:method")[0]


# --- a call that raises for bad input is no "host fallback" and moves no byte

@pytest.fixture
def copied(cl_device: ha.Device) -> Iterator[ha.Device]:
    """``cl_device`` with the buffers made inside on the copied link (the device path runs
    there in both CI passes; on a shared link the host path acquires first, by design)."""
    from hostarray.bench import forced_link

    with forced_link(cl_device, "copied"):
        yield cl_device
    ha.clear_pool()


def test_inplace_casting_error_moves_nothing_and_is_no_fallback(copied,
                                                               device_path) -> None:
    x = on_device(copied, np.arange(10), "int32")
    ha.reset_stats()
    with pytest.raises(TypeError):
        x += 1.5
    s = ha.stats()
    assert np.array_equal(np.asarray(x), np.arange(10))
    assert s.host_fallbacks == 0 and s.acquires == 0, s


def test_inplace_casting_error_under_disallow_is_the_casting_error(copied,
                                                                  device_path) -> None:
    # numpy's casting error (a TypeError) comes before any transfer the guard could refuse
    x = on_device(copied, np.arange(10), "int32")
    with pytest.raises(TypeError), ha.transfer_guard("disallow"):
        x += 1.5
    assert np.array_equal(np.asarray(x), np.arange(10))


def test_set_threshold_takes_numpy_integers() -> None:
    old = ha.set_device_compute_threshold(np.int64(4096))
    try:
        assert ha.device_compute_threshold() == 4096
    finally:
        ha.set_device_compute_threshold(old)


# --- the placement rule: "the largest array involved, an operand or the result, has at least
# --- ha.device_compute_threshold() bytes".  Element-wise functions, where and cumulative_sum
# --- look only at their operands: a result over the threshold from operands under it (by
# --- broadcasting, or by a wider result dtype) runs on the host, acquiring the operands.

K = 1 << 17          # 512 KiB of float32/int32


@pytest.fixture
def one_mib() -> Iterator[None]:
    old = ha.set_device_compute_threshold(1 << 20)
    try:
        yield
    finally:
        ha.set_device_compute_threshold(old)


def _counts(fn):
    ha.reset_stats()
    r = fn()
    s = ha.stats()
    return r, s


@pytest.mark.parametrize("case", ["broadcast", "true_divide", "where", "cumulative_sum"])
def test_result_over_threshold_runs_on_the_device(off_shared, one_mib, case) -> None:
    dev = off_shared
    if case == "broadcast":       # (K,) float32 + (4, 1) float32 -> (4, K) float32: 2 MiB
        a = on_device(dev, np.ones(K), "float32")
        b = on_device(dev, np.ones((4, 1)), "float32")
        def fn():
            return a + b
    elif case == "true_divide":   # int32 / 2 -> float64: 1 MiB
        a = on_device(dev, np.ones(K), "int32")
        def fn():
            return a / 2
    elif case == "where":         # where((4, 1), (K,), 0.0) -> (4, K) float32: 2 MiB
        a = on_device(dev, np.ones(K), "float32")
        c = on_device(dev, np.ones((4, 1)), "bool")
        def fn():
            return ha.where(c, a, 0.0)
    else:                         # cumulative_sum(int32, dtype=int64): 1 MiB
        a = on_device(dev, np.ones(K), "int32")
        def fn():
            return ha.cumulative_sum(a, dtype=ha.int64)
    _, s = _counts(fn)
    assert s.device_ops == 1 and s.acquires == 0, s


# --- device_ops counts "operations" (``x * x + 1`` is two): one ha.where call with
# --- broadcasting operands counted (and launched) four before a fix

def test_where_with_broadcasting_is_one_device_op(off_shared, device_path) -> None:
    dev = off_shared
    c = on_device(dev, [[True], [False]], "bool")
    x = on_device(dev, [1.0, 2.0, 3.0], "float32")
    y = on_device(dev, [[9.0], [8.0]], "float32")
    ha.reset_stats()
    r = ha.where(c, x, y)
    s = ha.stats()
    assert s.device_ops == 1 and s.launches == 1, s
    assert np.array_equal(np.asarray(r), np.where([[True], [False]], [1, 2, 3], [[9], [8]]))


# --- bad arguments: the device path accepts what the host path refuses (TypeError)

@pytest.mark.parametrize("fn", ["sum", "max", "mean", "any"])
def test_keepdims_numpy_bool_same_outcome_as_host(cl_device, device_path, fn) -> None:
    # the host path raises TypeError for keepdims=np.True_; the device path does too on a
    # first call, but accepts it once a call with keepdims=1 is cached (np.True_ == 1)
    data = np.arange(24).reshape(2, 3, 4)
    getattr(ha, fn)(on_device(cl_device, data, "int32"), axis=0, keepdims=1)

    def call():
        try:
            r = getattr(ha, fn)(on_device(cl_device, data, "int32"), axis=0, keepdims=np.True_)
            return ("ok", np.asarray(r).shape)
        except Exception as e:  # noqa: BLE001
            return ("err", type(e))

    assert call() == host_path(call)


def test_bool_axis_is_refused_after_an_int_axis_was_cached(cl_device, device_path) -> None:
    # host path: sum(x, axis=True) raises TypeError; the device path too, until sum(x, axis=1)
    # has run: then axis=True hits the cached plan of axis=1 and succeeds
    data = np.arange(24).reshape(2, 3, 4)
    with pytest.raises(TypeError):
        host_path(lambda: ha.sum(on_device(cl_device, data, "int32"), axis=True))
    ha.sum(on_device(cl_device, data, "int32"), axis=1)
    with pytest.raises(TypeError):
        ha.sum(on_device(cl_device, data, "int32"), axis=True)
    with pytest.raises(TypeError):
        ha.sum(on_device(cl_device, data, "int32"), axis=(True,))


def test_vector_norm_axis_list_same_outcome_as_host(cl_device, device_path) -> None:
    data = np.arange(24.0).reshape(2, 3, 4)

    def call():
        try:
            r = ha.linalg.vector_norm(on_device(cl_device, data, "float32"), axis=[0, 1])
            return ("ok", np.asarray(r).shape)
        except Exception as e:  # noqa: BLE001
            return ("err", type(e))

    assert call() == host_path(call)


# --- clip with a Python float bound out of an integer dtype's range: the host path casts the
# --- bound with numpy's wrap-around (clip(uint8, max=-1.0) -> 255, arguably itself wrong),
# --- the device path saturates (-> 0): the two paths disagree

@pytest.mark.parametrize("dtype,kw", [("uint8", {"max": -1.0}), ("int8", {"max": -129.0}),
                                      ("uint32", {"min": 1e10}), ("uint8", {"min": 65535.5})])
def test_clip_out_of_range_float_bound_same_as_host(cl_device, device_path, dtype, kw) -> None:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        got = np.asarray(ha.clip(on_device(cl_device, [1, 2], dtype), **kw))
        host = np.asarray(host_path(lambda: ha.clip(on_device(cl_device, [1, 2], dtype), **kw)))
    assert np.array_equal(got, host), (got, host)


# --- more than 32 dimensions (numpy 2 takes up to 64): the device element-wise path, where,
# --- clip, vecdot, in-place operators and setitem of a device array raise RuntimeError from
# --- np.broadcast_shapes; the host path computes

@pytest.mark.parametrize("op", ["x+1", "x+x", "-x", "where", "clip", "vecdot", "iadd",
                                "setitem"])
def test_elementwise_over_32_dims(cl_device, device_path, op) -> None:
    shape = (1,) * 33 + (3,)
    fns = {"x+1": lambda x: x + 1, "x+x": lambda x: x + x, "-x": lambda x: -x,
           "where": lambda x: ha.where(x > 0, x, 0), "clip": lambda x: ha.clip(x, min=1),
           "vecdot": lambda x: ha.vecdot(x, x), "iadd": lambda x: x.__iadd__(1),
           "setitem": lambda x: (x.__setitem__(..., on_device(cl_device, np.ones(shape), "int32")),
                                  x)[1]}
    x = on_device(cl_device, np.arange(3).reshape(shape), "int32")
    host = np.asarray(host_path(lambda: fns[op](on_device(cl_device, np.arange(3).reshape(shape),
                                                           "int32"))))
    got = np.asarray(fns[op](x))
    assert got.shape == host.shape and np.array_equal(got, host)


# numpy's floating-point warnings and np.errstate are not followed on the device, by design
# (docs/device-compute.md, "Where the two paths differ"): no test asserts them here.
