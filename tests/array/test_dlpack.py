"""DLPack, producer and consumer (array API 2025.12), against numpy and array-api-strict."""

from __future__ import annotations

import gc
import os

import array_api_strict as xps
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

import hostarray as ha
from hostarray._storage import aligned_empty

FEW = settings(max_examples=int(os.environ.get("HOSTARRAY_HYPOTHESIS_EXAMPLES", "25")),
               deadline=None)

DTYPES = [np.bool_, np.int8, np.uint16, np.int32, np.int64, np.float32, np.float64,
          np.complex64, np.complex128]
arrays = st.sampled_from(DTYPES).flatmap(
    lambda dt: hnp.arrays(dt, hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=4)))


def _address(a: np.ndarray) -> int:
    return a.__array_interface__["data"][0]


def _capsule_name(c) -> str:
    return repr(c).split('"')[1]


# -- producer -------------------------------------------------------------------------------------

@FEW
@given(a=arrays)
def test_numpy_consumes_without_a_copy(a) -> None:
    x = ha.asarray(a)
    y = np.from_dlpack(x)
    assert y.dtype == a.dtype and y.shape == a.shape
    np.testing.assert_array_equal(y, a)
    if a.size:
        assert np.shares_memory(y, a)
    z = np.from_dlpack(x, copy=True)
    np.testing.assert_array_equal(z, a)
    assert not np.shares_memory(z, a)


def test_capsule_versions_and_device() -> None:
    x = ha.zeros(3)
    assert x.__dlpack_device__() == (1, 0)
    assert _capsule_name(x.__dlpack__()) == "dltensor"
    assert _capsule_name(x.__dlpack__(max_version=(1, 0))) == "dltensor_versioned"
    assert _capsule_name(x.__dlpack__(max_version=(1, 0), dl_device=(1, 0))) == \
        "dltensor_versioned"


def test_buffer_errors_where_the_spec_says() -> None:
    x = ha.zeros(3)
    with pytest.raises(BufferError, match="stream"):
        x.__dlpack__(stream=1)
    with pytest.raises(BufferError, match="host memory"):
        x.__dlpack__(dl_device=(2, 0))
    a = np.arange(3.0)
    a.flags.writeable = False
    ro = ha.asarray(a)
    with pytest.raises(BufferError):  # an unversioned capsule can't say "read-only"
        ro.__dlpack__()
    y = np.from_dlpack(ro)  # numpy asks for a versioned capsule: it carries the flag
    assert not y.flags.writeable
    np.testing.assert_array_equal(y, a)


def test_export_is_an_escape_while_the_consumer_holds_it() -> None:
    x = ha.zeros(4)
    y = np.from_dlpack(x)
    assert x._s.escaped
    y[1] = 7.0  # the consumer writes through the shared memory
    assert np.asarray(x, copy=True).tolist() == [0.0, 7.0, 0.0, 0.0]
    del y
    gc.collect()
    assert not x._s.escaped
    z = np.from_dlpack(x, copy=True)
    assert not x._s.escaped  # a copy shares nothing
    z[0] = 1.0
    assert float(np.asarray(x, copy=True)[0]) == 0.0


def test_array_api_strict_consumes_hostptrarray() -> None:
    x = ha.asarray(np.arange(6.0).reshape(2, 3))
    s = xps.from_dlpack(x)
    assert xps.all(s == xps.reshape(xps.arange(6.0), (2, 3)))


# -- consumer -------------------------------------------------------------------------------------

@FEW
@given(a=arrays)
def test_from_dlpack_adopts_numpy_memory_on_the_host(a) -> None:
    x = ha.from_dlpack(a)
    assert isinstance(x, ha.HostPtrArray) and x.device == ha.device("cpu")
    assert x.dtype == a.dtype and x.shape == a.shape
    np.testing.assert_array_equal(np.asarray(x), a)
    if a.size:
        assert np.shares_memory(np.asarray(x), a)
    c = ha.from_dlpack(a, copy=True)
    np.testing.assert_array_equal(np.asarray(c), a)
    assert not np.shares_memory(np.asarray(c), a)
    assert _address(c._a) % 4096 == 0  # copies go to page-aligned storage


def test_from_dlpack_of_other_producers() -> None:
    s = xps.asarray([[1, 2], [3, 4]], dtype=xps.int32)
    x = ha.from_dlpack(s)
    np.testing.assert_array_equal(np.asarray(x), [[1, 2], [3, 4]])
    assert x.dtype == ha.int32
    y = ha.from_dlpack(x)
    assert y is x
    z = ha.from_dlpack(x, copy=True)
    assert z._s is not x._s
    np.testing.assert_array_equal(np.asarray(z), np.asarray(x))


def test_from_dlpack_rejects_what_it_cannot_hold() -> None:
    class NotCPU:
        def __dlpack_device__(self):
            return (2, 0)

        def __dlpack__(self, **kwargs):
            raise BufferError("no host memory here")

    with pytest.raises(BufferError):
        ha.from_dlpack(NotCPU())
    with pytest.raises(AttributeError, match="__dlpack__"):  # the standard's error
        ha.from_dlpack([1, 2, 3])


def test_from_dlpack_read_only_source_stays_read_only() -> None:
    a = np.arange(4.0)
    a.flags.writeable = False
    x = ha.from_dlpack(a)
    assert not x._a.flags.writeable
    with pytest.raises(ValueError):
        x[0] = 1.0


@pytest.mark.device
def test_from_dlpack_onto_a_device_zero_copy_when_aligned(cl_device) -> None:
    aligned = aligned_empty(64 * 4).view(np.float32)
    aligned[:] = np.arange(64)
    x = ha.from_dlpack(aligned, device=cl_device, copy=False)
    assert x.device == cl_device and np.shares_memory(np.asarray(x), aligned)
    misaligned = aligned_empty(65 * 4)[1:1 + 64 * 4].view(np.float32)  # 1 byte off
    misaligned[:] = 3.0
    assert _address(misaligned) % 4
    with pytest.raises(BufferError, match="alignment"):
        ha.from_dlpack(misaligned, device=cl_device, copy=False)
    y = ha.from_dlpack(misaligned, device=cl_device)  # copy=None: copied into aligned storage
    assert _address(y._a) % cl_device.alignment == 0
    assert not np.shares_memory(np.asarray(y), misaligned)
    np.testing.assert_array_equal(np.asarray(y), misaligned)
    prg = ha.Program("__kernel void inc(__global float *x) { x[get_global_id(0)] += 1; }",
                     device=cl_device)
    prg.inc(64, x)
    np.testing.assert_array_equal(np.asarray(x), np.arange(64) + 1)
    np.testing.assert_array_equal(aligned, np.arange(64) + 1)  # acquired into the adopted memory


@pytest.mark.device
def test_from_dlpack_of_a_hostptrarray_keeps_its_device(cl_device) -> None:
    x = ha.zeros(16, device=cl_device)
    assert ha.from_dlpack(x) is x
    c = ha.from_dlpack(x, copy=True)
    assert c.device == cl_device and c._s is not x._s
    h = ha.from_dlpack(x, device="cpu")
    assert h.device == ha.device("cpu") and h._s is x._s


@pytest.mark.device
def test_export_acquires_the_device_writes_first(cl_device) -> None:
    prg = ha.Program("__kernel void fill(__global float *x, const float v) "
                     "{ x[get_global_id(0)] = v; }", device=cl_device)
    x = ha.zeros(32, dtype=ha.float32, device=cl_device)
    prg.fill(32, ha.write(x), 4.0)
    ha.reset_stats()
    y = np.from_dlpack(x)
    assert ha.stats().acquires == 1
    np.testing.assert_array_equal(y, np.full(32, 4.0, np.float32))
    y[:] = 1.0  # written by the consumer while the export lives ...
    prg.fill(1, x, 9.0)  # ... so this launch publishes first and acquires after
    np.testing.assert_array_equal(y, np.r_[9.0, np.ones(31)].astype(np.float32))
    del y
    gc.collect()
    assert not x._s.escaped


def test_torch_shares_memory_both_ways() -> None:
    torch = pytest.importorskip("torch", reason="PyTorch is not installed here")
    x = ha.asarray(np.arange(6.0))
    t = torch.from_dlpack(x)
    assert t.data_ptr() == _address(x._a)
    t[0] = 5.0  # the consumer writes through the export
    assert float(np.asarray(x, copy=True)[0]) == 5.0
    del t
    gc.collect()
    assert not x._s.escaped
    src = torch.arange(4, dtype=torch.float32)
    y = ha.from_dlpack(src)
    assert _address(y._a) == src.data_ptr()
    np.testing.assert_array_equal(np.asarray(y), [0.0, 1.0, 2.0, 3.0])
    if torch.cuda.is_available():  # GPU memory is not host memory: nothing to adopt
        with pytest.raises(BufferError):
            ha.from_dlpack(torch.zeros(3, device="cuda"))
