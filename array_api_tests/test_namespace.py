"""The namespace as array-API consumers find it."""

from __future__ import annotations

import array_api_compat
import numpy as np
import pytest

import hostarray as ha


def test_array_api_version() -> None:
    assert ha.__array_api_version__ == "2025.12"


def test_array_namespace_is_hostarray() -> None:
    x = ha.asarray([1.0, 2.0])
    assert array_api_compat.array_namespace(x) is ha
    assert array_api_compat.array_namespace(x, ha.asarray([1])) is ha
    assert array_api_compat.is_array_api_obj(x)


@pytest.mark.parametrize("version", [None, "2023.12", "2024.12", "2025.12"])
def test_array_namespace_accepts(version: str | None) -> None:
    x = ha.asarray([1, 2, 3])
    assert x.__array_namespace__(api_version=version) is ha


@pytest.mark.parametrize("version", ["2021.12", "2022.12", "2026.12", "latest", "2025"])
def test_array_namespace_rejects(version: str) -> None:
    with pytest.raises(ValueError):
        ha.asarray([1]).__array_namespace__(api_version=version)


def test_zero_d_results_are_arrays() -> None:
    # 0-D results are HostPtrArrays, never numpy scalars (issue 3, semantics)
    x = ha.asarray([1.0, 2.0, 3.0])
    for r in (ha.sum(x), x[0], ha.max(x), x[1] + 1.0):
        assert isinstance(r, ha.HostPtrArray), type(r)
    assert ha.sum(x).shape == ()
    assert not isinstance(ha.sum(x), np.generic)


@pytest.mark.device
def test_results_follow_the_device(cl_device: ha.Device) -> None:
    # compute follows data: results of inputs on one OpenCL device stay on it
    x = ha.asarray([1.0, 2.0]).to_device(cl_device)
    y = ha.asarray([3.0, 4.0]).to_device(cl_device)
    assert ha.add(x, y).device == cl_device
    assert (x + y).device == cl_device


_FILL = ("__kernel void fill(__global float *a, float v) "
         "{ a[get_global_id(0)] = v + get_global_id(0); }")

# one call per section of the standard, on a float32 array of 8 elements
CALLS_BY_SECTION = {
    "astype": lambda x: ha.astype(x, ha.float64),
    "take": lambda x: ha.take(x, ha.asarray(np.array([7, 0]), device=x.device)),
    "matmul": lambda x: ha.matmul(x, x),
    "tensordot": lambda x: ha.tensordot(x, x, axes=1),
    "flip": lambda x: ha.flip(x),
    "reshape": lambda x: ha.reshape(x, (2, 4)),
    "concat": lambda x: ha.concat([x, x]),
    "roll": lambda x: ha.roll(x, 3),
    "argmax": lambda x: ha.argmax(x),
    "where": lambda x: ha.where(x > 3.0, x, 0.0),
    "searchsorted": lambda x: ha.searchsorted(x, 4.0),
    "unique_values": lambda x: ha.unique_values(x),
    "sort": lambda x: ha.sort(x, descending=True),
    "sum": lambda x: ha.sum(x),
    "mean": lambda x: ha.mean(x),
    "cumulative_sum": lambda x: ha.cumulative_sum(x),
    "max": lambda x: ha.max(x),
    "diff": lambda x: ha.diff(x),
    "any": lambda x: ha.any(x > 8.0),
    "getitem": lambda x: x[::-2],
    "linalg.vector_norm": lambda x: ha.linalg.vector_norm(x),
    "fft.rfft": lambda x: ha.fft.rfft(x),
}


@pytest.mark.device
@pytest.mark.parametrize("name", sorted(CALLS_BY_SECTION))
def test_functions_read_kernel_writes(name: str, cl_device: ha.Device) -> None:
    # the input's current values exist only on the device: every function must acquire
    # (under HOSTARRAY_LINK=copied a missing acquire gives the stale zeros)
    x = ha.zeros(8, dtype=ha.float32, device=cl_device)
    ha.Program(_FILL, device=cl_device).fill((8,), x, np.float32(1.0))
    call = CALLS_BY_SECTION[name]
    got = call(x)
    want = call(ha.asarray(np.arange(1.0, 9.0, dtype=np.float32)))
    assert got.device == cl_device
    np.testing.assert_allclose(np.asarray(got), np.asarray(want), rtol=1e-6)
