"""Reads and writes through numpy-integer, integer-array and mask keys move only the bytes
around the elements they touch (docs/coherence.md, "Per byte range").

Each case makes an array device-newest with a kernel, reads or writes it through a key,
and checks the values against numpy and the bytes moved (``ha.stats()``) against the span
from the first element touched to the last.  On a shared link nothing moves; run it again
with ``HOSTARRAY_LINK=copied``, where a missing acquire is a wrong value.
"""

from __future__ import annotations

import os
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import hostarray as ha
from tests._device_helpers import device_newest

pytestmark = pytest.mark.device

N = 4096  # float32 elements
SETTINGS = settings(max_examples=400 if os.environ.get("HOSTARRAY_THOROUGH") == "1" else 40,
                    deadline=None, database=None)
SRC = "__kernel void add(__global float *x, const float a) { x[get_global_id(0)] += a; }"


@pytest.fixture(scope="module")
def prg(cl_device: ha.Device) -> ha.Program:
    return ha.Program(SRC, device=cl_device)


def newest(dev: ha.Device, shape: tuple[int, ...]) -> tuple[Any, np.ndarray]:
    """A float32 array of ``shape`` whose newest bytes a kernel wrote, and its model."""
    m = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    x = device_newest(m, dev)
    ha.reset_stats()
    return x, m


def moved_bytes() -> tuple[int, int]:
    s = ha.stats()
    ha.reset_stats()
    return s.bytes_acquired, s.bytes_published


def span_bytes(m: np.ndarray, key: Any) -> int:
    """Bytes from the first element ``m[key]`` touches to the last (0 if none)."""
    marks = np.zeros(m.shape, bool)
    marks[key] = True
    flat = np.flatnonzero(marks.reshape(-1))
    return int(flat[-1] - flat[0] + 1) * m.itemsize if flat.size else 0


KEYS = st.one_of(
    st.lists(st.integers(-N, N - 1), min_size=1, max_size=8),          # a list of ints
    st.lists(st.integers(-N, N - 1), max_size=8).map(                  # an integer array
        lambda v: np.asarray(v, dtype=np.int64)),
    st.sets(st.integers(0, N - 1), max_size=8).map(                    # a mask
        lambda s: np.isin(np.arange(N), list(s))),
)


@given(key=KEYS)
@SETTINGS
def test_an_advanced_read_acquires_only_around_its_elements(cl_device, key) -> None:
    x, m = newest(cl_device, (N,))
    np.testing.assert_array_equal(np.asarray(x[key]), m[key])
    if cl_device.link != "shared":
        assert moved_bytes()[0] <= span_bytes(m, key)
    np.testing.assert_array_equal(np.asarray(x, copy=True), m)  # nothing else changed


@given(key=KEYS, value=st.floats(-5, 5, width=32))
@SETTINGS
def test_an_advanced_write_moves_only_around_its_elements(prg, cl_device, key, value) -> None:
    x, m = newest(cl_device, (N,))
    x[key] = value
    m[key] = value
    acquired, _ = moved_bytes()
    prg.add(N, x, 1.0)  # the device lacks only the bytes the write covered
    m += 1
    _, published = moved_bytes()
    if cl_device.link != "shared":
        span = span_bytes(m, key)
        assert acquired <= span and published <= span
    np.testing.assert_array_equal(np.asarray(x, copy=True), m)


@pytest.mark.parametrize("key", [np.int64(5), np.intp(-3), np.uint8(7), np.array(9),
                                 (np.int64(2),), ha.asarray(np.int32(4))],
                         ids=["int64", "intp negative", "uint8", "0-d array", "tuple",
                              "0-d HostPtrArray"])
def test_a_numpy_integer_key_writes_one_element(prg, cl_device, key) -> None:
    # x[np.int64(5)] = v acquired and published the whole array (x[5] = v: one element)
    x, m = newest(cl_device, (N,))
    k = key if not isinstance(key, ha.HostPtrArray) else int(key)
    ha.reset_stats()
    x[key] = -1.0
    m[k] = -1.0
    acquired, _ = moved_bytes()
    prg.add(N, x, 1.0)
    m += 1
    _, published = moved_bytes()
    assert acquired == 0  # the element is overwritten: nothing to acquire
    if cl_device.link != "shared":
        assert published == m.itemsize
    np.testing.assert_array_equal(np.asarray(x, copy=True), m)
    with ha.transfer_guard("disallow"):  # an element's overwrite moves nothing
        x[key] = 3.0


def test_rows_by_index_and_mask_of_a_2d_array(cl_device) -> None:
    x, m = newest(cl_device, (64, 64))
    rows = m.shape[1] * m.itemsize
    for key in ([3, 5], np.array([-1, -2]), np.arange(64) % 7 == 3):
        np.testing.assert_array_equal(np.asarray(x[key]), m[key])
        x[key] = 0.5
        m[key] = 0.5
        acquired, _ = moved_bytes()
        if cl_device.link != "shared":
            assert 0 < acquired <= span_bytes(m, key) and acquired % rows == 0
    mask = (m % 5) == 1  # a mask of every element: the span from the first to the last
    np.testing.assert_array_equal(np.asarray(x[mask]), m[mask])
    np.testing.assert_array_equal(np.asarray(x, copy=True), m)


def test_out_of_bounds_keys_raise_numpys_error(cl_device) -> None:
    x, m = newest(cl_device, (N,))
    for key in ([N], np.array([-N - 1]), [2**70]):
        with pytest.raises(IndexError):
            x[key]
        with pytest.raises(IndexError):
            x[key] = 1.0
    np.testing.assert_array_equal(np.asarray(x, copy=True), m)


def test_an_index_object_runs_before_anything_moves(prg, cl_device) -> None:
    # numpy called the key's __index__ inside the write (after the acquire): a kernel it
    # launched on the same array lost its writes, or the write its own (copied link)
    x = ha.asarray(np.zeros(256, np.float32), device=cl_device, copy=True)

    class Launching:
        def __index__(self) -> int:
            prg.add(256, x, 1.0)
            return 2

    x[Launching()] = 100.0  # the kernel first (numpy's order), then the write
    m = np.ones(256, np.float32)
    m[2] = 100.0
    np.testing.assert_array_equal(np.asarray(x, copy=True), m)
    assert float(x[Launching()]) == 101.0  # the read sees the kernel's +1
    m += 1
    np.testing.assert_array_equal(np.asarray(x, copy=True), m)


def test_an_index_array_of_another_library_is_still_fancy(cl_device) -> None:
    # objects with an __index__ that refuses several elements (arrays of other libraries)
    class Indices:
        def __init__(self, v: list[int]) -> None:
            self.v = np.asarray(v)

        def __index__(self) -> int:
            raise TypeError("only one-element arrays are indices")

        def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
            return self.v

    m = np.arange(10.0)
    x = ha.asarray(m, device=cl_device)
    np.testing.assert_array_equal(np.asarray(x[Indices([1, 3])]), m[Indices([1, 3])])
    x[Indices([0, 9])] = -1.0
    m[[0, 9]] = -1.0
    np.testing.assert_array_equal(np.asarray(x), m)


def test_key_callbacks_run_once_before_anything_moves(prg, cl_device) -> None:
    # a key's __array__ ran inside the read or write (after the acquire: stale read, lost
    # kernel writes), and a slice's __index__ ran twice in a write (the kernel twice)
    calls = []
    x = ha.asarray(np.zeros(64, np.float32), device=cl_device, copy=True)

    class Key:
        def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
            calls.append("array")
            prg.add(64, x, 1000.0)
            return np.array([40, 1])

    class Step:
        def __index__(self) -> int:
            calls.append("index")
            prg.add(64, x, 1.0)
            return 2

    assert np.asarray(x[Key()]).tolist() == [1000.0, 1000.0]
    x[Key()] = 5.0
    x[::Step()] = 7.0
    m = np.full(64, 2000.0, np.float32)
    m[[40, 1]] = 5.0
    m += 1
    m[::2] = 7.0
    assert calls == ["array", "array", "index"]
    np.testing.assert_array_equal(np.asarray(x, copy=True), m)


@pytest.mark.parametrize("dtype", [np.int8, np.int16])
def test_negative_indices_in_a_narrow_dtype(cl_device, dtype) -> None:
    # the span's wrap of negative indices overflowed the key's own dtype (OverflowError)
    x, m = newest(cl_device, (300,) if dtype == np.int8 else (40000,))
    key = np.array([-1, 3], dtype)
    np.testing.assert_array_equal(np.asarray(x[key]), m[key])
    x[key] = 9.0
    m[key] = 9.0
    np.testing.assert_array_equal(np.asarray(x, copy=True), m)


def test_a_mask_over_a_strided_view_moves_its_rows_only(cl_device) -> None:
    x, m = newest(cl_device, (64, 16))
    for view in (lambda a: a[::-1], lambda a: a[::2], lambda a: a[:, 1:]):
        v, mv = view(x), view(m)
        mask = np.zeros(mv.shape, bool)
        mask[5, 3] = mask[6, 2] = True
        np.testing.assert_array_equal(np.asarray(v[mask]), mv[mask])
        if cl_device.link != "shared":
            assert moved_bytes()[0] <= 2 * 64 * 2 * 4  # two rows of the view
        v[mask] = -1.0
        mv[mask] = -1.0
    np.testing.assert_array_equal(np.asarray(x, copy=True), m)
