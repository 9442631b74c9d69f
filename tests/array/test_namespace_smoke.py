"""Quick checks of the namespace's own guarantees: results are HostPtrArrays on the
inputs' device, views share storage, operators read and write through the
coherence hooks (so a kernel's writes are seen and host writes reach the next
launch), and the array-object protocol the standard asks for.
"""

from __future__ import annotations

import inspect

import array_api_compat
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hostarray as ha

INC = "__kernel void inc(__global float *x) { x[get_global_id(0)] += 1.0f; }"
SCALE = "__kernel void scale(__global float *x, const float k) { x[get_global_id(0)] *= k; }"


def test_namespace_is_found_by_array_api_compat() -> None:
    x = ha.asarray([1.0, 2.0])
    assert array_api_compat.array_namespace(x) is ha
    assert x.__array_namespace__(api_version="2023.12") is ha
    assert x.__array_namespace__(api_version="2025.12") is ha
    with pytest.raises(ValueError):
        x.__array_namespace__(api_version="2021.12")


def test_zero_dimensional_results_are_arrays() -> None:
    x = ha.asarray([1, 2, 3])
    for r in (ha.sum(x), x[0], ha.max(x), ha.argmax(x), ha.linalg.vector_norm(x * 1.0),
              ha.add(x, 1)[1], x[1] + 1, ha.vecdot(x, x), ha.count_nonzero(x)):
        assert type(r) is ha.HostPtrArray
        assert r.ndim == 0
    assert int(ha.sum(x)) == 6 and float(ha.mean(x * 1.0)) == 2.0


def test_operators_defer_to_unknown_types() -> None:
    class Other:
        def __radd__(self, other: object) -> str:
            return "other"

    assert ha.asarray([1.0]) + Other() == "other"
    assert (ha.asarray([1]) == "text") is False


@settings(max_examples=25, deadline=None)
@given(a=hnp.arrays(np.float64, hnp.array_shapes(max_dims=3, max_side=4),
                    elements=st.floats(-1e6, 1e6)),
       s=st.floats(-10, 10) | st.integers(-10, 10))
def test_operators_match_numpy_with_python_scalars(a: np.ndarray, s: float | int) -> None:
    x = ha.asarray(a)
    for got, want in ((x + s, a + s), (s - x, s - a), (x * s, a * s), (x < s, a < s),
                      (-x, -a), (abs(x), abs(a)), (s <= x, s <= a)):
        assert type(got) is ha.HostPtrArray
        np.testing.assert_array_equal(np.asarray(got), want)
        assert got.dtype == want.dtype


def test_in_place_operator_keeps_identity_and_dtype() -> None:
    x = ha.asarray(np.arange(4, dtype=np.float32))
    y = x
    y += 1.5
    y *= ha.asarray(np.full(4, 2, dtype=np.float32))
    assert y is x and x.dtype == ha.float32
    np.testing.assert_array_equal(np.asarray(x), (np.arange(4) + 1.5) * 2)
    i = ha.asarray([1, 2, 3])
    with pytest.raises(TypeError):
        i /= 2  # an int array can't hold a true division


def test_manipulation_views_share_storage() -> None:
    x = ha.zeros((2, 3))
    r = ha.reshape(x, (6,))
    t = ha.permute_dims(x, (-1, 0))
    e = ha.expand_dims(x, axis=(0, -1))
    r[0] = 5.0
    assert float(x[0, 0]) == 5.0 and float(t[0, 0]) == 5.0 and float(e[0, 0, 0, 0]) == 5.0
    c = ha.reshape(x, (6,), copy=True)
    c[1] = 7.0
    assert float(x[0, 1]) == 0.0


def test_signature_of_generated_functions() -> None:
    def shape(f: object) -> list[tuple[str, object, object]]:
        return [(p.name, p.kind, p.default) for p in inspect.signature(f).parameters.values()]

    pos, kw = inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD
    empty = inspect.Parameter.empty
    assert shape(ha.add) == [("x1", pos, empty), ("x2", pos, empty)]
    assert shape(ha.sin) == [("x", pos, empty)]
    assert shape(ha.clip) == [("x", pos, empty), ("min", kw, None), ("max", kw, None)]
    assert inspect.signature(ha.sin).return_annotation is ha.HostPtrArray
    assert ha.add.__module__ == "hostarray" and "Examples" in ha.add.__doc__


def test_special_cases_where_numpy_differs() -> None:
    inf = float("inf")
    fd = np.asarray(ha.floor_divide(ha.asarray([inf, 1.0, -1.0, 7.0]),
                                    ha.asarray([2.0, -inf, inf, 2.0])))
    assert fd[0] == inf
    assert fd[1] == 0 and np.signbit(fd[1]) and fd[2] == 0 and np.signbit(fd[2])
    assert fd[3] == 3.0
    e = np.asarray(ha.expm1(ha.asarray([complex(inf, 0.0), complex(-inf, 1.0), 1e-10 + 0j])))
    assert e[0] == complex(inf, 0.0)
    assert e[1].real == -1.0
    assert e[2] == pytest.approx(1e-10, rel=1e-12) and e[2].imag == 0.0
    s = np.asarray(ha.sign(ha.asarray([3 + 4j, 0j])))
    np.testing.assert_allclose(s, [0.6 + 0.8j, 0])


def test_finfo_iinfo_fields_are_python_scalars() -> None:
    f = ha.finfo(ha.complex64)
    assert f.dtype == ha.float32
    assert all(type(getattr(f, n)) is float for n in ("eps", "max", "min", "smallest_normal"))
    assert type(f.bits) is int
    i = ha.iinfo(ha.uint16)
    assert (i.min, i.max, i.bits) == (0, 65535, 16)


@pytest.mark.device
def test_results_follow_the_inputs_device(cl_device: ha.Device) -> None:
    x = ha.asarray(np.arange(8, dtype=np.float32), device=cl_device)
    h = ha.ones(8, dtype=ha.float32)
    for r in (x + 1, x + h, h * x, ha.sum(x), ha.sort(x), ha.reshape(x, (2, 4)),
              ha.linalg.matrix_norm(ha.reshape(x, (2, 4))), ha.fft.fft(x), ha.where(x > 2, x, h),
              ha.concat([h, x]), ha.stack([x, h])):
        assert r.device == cl_device
    assert ha.full(3, 1.0, device=cl_device).device == cl_device
    assert ha.zeros_like(x).device == cl_device
    assert ha.astype(x, ha.float64, device="cpu").device == ha.device("cpu")


@pytest.mark.device
def test_namespace_reads_see_kernel_writes(cl_device: ha.Device) -> None:
    x = ha.asarray(np.arange(64, dtype=np.float32), device=cl_device)
    prg = ha.Program(INC, device=cl_device)
    prg.inc(64, x)
    # every namespace read acquires first: under HOSTARRAY_LINK=copied a missing
    # acquire leaves the host bytes at arange(64)
    assert float(ha.sum(x)) == float(np.arange(64).sum() + 64)
    np.testing.assert_array_equal(np.asarray(x[2:5] * 2), (np.arange(2, 5) + 1) * 2)
    prg.inc(64, x)
    assert float(ha.max(ha.reshape(x, (8, 8)))) == 65.0
    assert ha.stats().acquires >= 2


@pytest.mark.device
def test_in_place_operators_reach_the_next_launch(cl_device: ha.Device) -> None:
    x = ha.asarray(np.ones(32, dtype=np.float32), device=cl_device)
    prg = ha.Program(SCALE, device=cl_device)
    prg.scale(32, x, np.float32(3.0))  # device: 3
    x += 1.0  # host write: acquires the 3s first, then 4
    prg.scale(32, x, np.float32(2.0))  # must publish the 4s: 8
    np.testing.assert_array_equal(np.asarray(x), np.full(32, 8.0, dtype=np.float32))
    v = ha.reshape(x, (4, 8))
    v[1:3] = 0.0  # partial write through a view of the same storage
    prg.scale(32, x, np.float32(0.5))
    want = np.full((4, 8), 4.0, dtype=np.float32)
    want[1:3] = 0.0
    np.testing.assert_array_equal(np.asarray(v), want)


@pytest.mark.device
def test_large_device_results_are_computed_into_shareable_memory(cl_device: ha.Device) -> None:
    from hostarray._array import _shareable

    x = ha.asarray(np.arange(1 << 16, dtype=np.float32), device=cl_device)
    for r in (x + 1, 2.0 * x, -x, ha.sin(x), x < 5):
        assert r.device == cl_device and _shareable(r._s, cl_device)
    np.testing.assert_array_equal(np.asarray(2.0 * x), 2.0 * np.arange(1 << 16, dtype=np.float32))
    assert (x + 1).dtype == ha.float32 and (x < 5).dtype == ha.bool


def test_generated_docstring_examples_run() -> None:
    import doctest

    from hostarray._api.elementwise import TABLE

    runner = doctest.DocTestRunner(optionflags=doctest.NORMALIZE_WHITESPACE)
    finder = doctest.DocTestFinder()
    for name, *_ in TABLE:
        for t in finder.find(getattr(ha, name), name, globs={}):
            runner.run(t)
    result = runner.summarize(verbose=False)
    assert result.attempted >= 2 * len(TABLE) and result.failed == 0


def test_in_place_operator_on_read_only_view_is_refused() -> None:
    x = ha.asarray([1.0, 2.0])
    b = ha.broadcast_to(x, (2, 2))
    with pytest.raises(ValueError, match="read-only"):
        b += 1.0
    np.testing.assert_array_equal(np.asarray(x), [1.0, 2.0])


@pytest.mark.parametrize("make", [lambda: ha.empty(-1), lambda: ha.zeros((2, -1)),
                                  lambda: ha.full(-2, 1), lambda: ha.ones((3, -3)),
                                  lambda: ha.eye(2, -1)])
def test_negative_dimensions_are_refused(make) -> None:
    with pytest.raises(ValueError, match="negative"):
        make()


def test_two_different_devices_in_one_call_are_refused() -> None:
    # join_devices only compares device records; two OpenCL devices need not exist here
    from hostarray._placement import join as join_devices

    cpu = ha.device("cpu")
    a = ha.Device("opencl", "opencl:7:0", "first", "GPU", 128, 1 << 30, False)
    b = ha.Device("opencl", "opencl:7:1", "second", "GPU", 128, 1 << 30, False)
    assert join_devices(cpu, a) is a and join_devices(a, cpu) is a and join_devices(a, a) is a
    with pytest.raises(ValueError, match="different devices"):
        join_devices(a, b)


_AFTER_KERNEL = {
    "sin": lambda x: ha.sin(x), "negative": lambda x: -x, "add": lambda x: x + x,
    "greater": lambda x: x > 3, "where": lambda x: ha.where(x > 3, x, 0.0),
    "sum": lambda x: ha.sum(x, axis=0), "prod": lambda x: ha.prod(x, axis=1),
    "mean": lambda x: ha.mean(x), "std": lambda x: ha.std(x, axis=1),
    "cumulative_sum": lambda x: ha.cumulative_sum(x, axis=1),
    "argmax": lambda x: ha.argmax(x, axis=1), "sort": lambda x: ha.sort(x, descending=True),
    "unique_values": lambda x: ha.unique_values(x), "flip": lambda x: ha.flip(x, axis=0),
    "reshape": lambda x: ha.reshape(x, (-1,)), "concat": lambda x: ha.concat([x, x]),
    "take": lambda x: ha.take(x, ha.asarray([1, 0]), axis=0), "matmul": lambda x: x @ x.mT,
    "vecdot": lambda x: ha.vecdot(x, x), "svdvals": lambda x: ha.linalg.svdvals(x),
    "vector_norm": lambda x: ha.linalg.vector_norm(x), "fft": lambda x: ha.fft.rfft(x),
    "getitem": lambda x: x[1, 2:], "astype": lambda x: ha.astype(x, ha.float64),
    "clip": lambda x: ha.clip(x, 2.0, 5.0), "diff": lambda x: ha.diff(x),
}


@pytest.mark.device
@pytest.mark.parametrize("name", sorted(_AFTER_KERNEL))
def test_namespace_functions_read_kernel_results(cl_device: ha.Device, name: str) -> None:
    # the kernel adds 1 on the device; with HOSTARRAY_LINK=copied the host bytes keep the
    # old values until an acquire, so a function that skips it computes on stale data
    start = np.arange(8, dtype=np.float32).reshape(2, 4)
    x = ha.asarray(start.copy(), device=cl_device)
    ha.Program(INC, device=cl_device).inc(8, x)
    got = _AFTER_KERNEL[name](x)
    want = _AFTER_KERNEL[name](ha.asarray(start + 1))
    got_t = got if isinstance(got, tuple) else (got,)
    want_t = want if isinstance(want, tuple) else (want,)
    for g, w in zip(got_t, want_t):
        assert g.device == cl_device
        np.testing.assert_allclose(np.asarray(g), np.asarray(w), rtol=1e-6)


@pytest.mark.device
def test_creation_without_device_uses_the_default_device(cl_device: ha.Device) -> None:
    import subprocess
    import sys

    code = ("import numpy as np, hostarray as ha\n"
            "d = ha.__array_namespace_info__().default_device()\n"
            "made = [ha.zeros(2), ha.full(2, 1.0), ha.arange(3), ha.eye(2), ha.linspace(0, 1, 3),\n"
            "        ha.asarray([1, 2]), ha.fft.fftfreq(4)]\n"
            "print(str(d), sorted({str(x.device) for x in made}))\n")
    env = {**__import__("os").environ, "HOSTARRAY_DEVICE": str(cl_device)}
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True,
                         check=True).stdout.split(maxsplit=1)
    assert out[0] == str(cl_device) and out[1].strip() == repr([str(cl_device)])
