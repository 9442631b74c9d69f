"""SciPy with ``SCIPY_ARRAY_API=1`` (set by this folder's conftest) on HostPtrArray
inputs, compared with the same call on numpy inputs."""

from __future__ import annotations

import warnings

import numpy as np
import pytest

import hostarray as ha

pytest.importorskip("scipy")

from ._scipy_calls import CALLS, DATA  # noqa: E402

pytestmark = pytest.mark.usefixtures("scipy_array_api")

# SciPy functions that convert their input to numpy (through __array__): numpy results.
CONVERTS = {k: CALLS[k] for k in (
    "linalg.solve",
    "linalg.inv",
    "linalg.det",
    "linalg.eigh",
    "linalg.svd",
    "linalg.qr",
    "linalg.cholesky",
    "linalg.expm",
    "linalg.lstsq",
    "linalg.pinv",
    "linalg.lu_factor",
    "linalg.logm",
    "stats.norm.pdf",
    "signal.welch",
    "integrate.simpson",
)}
# every other one keeps the input's namespace: the result must be a HostPtrArray.
KEEPS = {k: f for k, f in CALLS.items() if k not in CONVERTS}


@pytest.fixture(autouse=True)
def _quiet():
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        yield


def _run(f, device=None):
    want = f(DATA)
    got = f({k: ha.asarray(v.copy(), device=device) for k, v in DATA.items()})
    return got, np.asarray(want)


@pytest.mark.parametrize("name", sorted(KEEPS))
def test_functions_keeping_the_namespace(name) -> None:
    got, want = _run(KEEPS[name])
    assert isinstance(got, ha.HostPtrArray), type(got)
    assert got.shape == want.shape
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-7, atol=1e-12)


@pytest.mark.parametrize("name", sorted(CONVERTS))
def test_functions_converting_to_numpy(name) -> None:
    got, want = _run(CONVERTS[name])
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-7, atol=1e-12)


SRC = r"""
#pragma OPENCL EXTENSION cl_khr_fp64 : enable
__kernel void scale(__global double *x, const double a) { x[get_global_id(0)] *= a; }
"""


@pytest.mark.device
@pytest.mark.parametrize("name", ["special.erf", "stats.zscore", "fft.fft", "signal.convolve",
                                  "linalg.solve", "special.logsumexp"])
def test_device_arrays_written_by_a_kernel(name, cl_device) -> None:
    f = {**KEEPS, **CONVERTS}[name]
    want = np.asarray(f({k: v * 1.5 for k, v in DATA.items()}))
    prg = ha.Program(SRC, device=cl_device)
    inputs = {}
    for k, v in DATA.items():
        x = ha.asarray(v, device=cl_device, copy=True)
        prg.scale(x.size, x.reshape(-1), 1.5)  # newest data on the device
        inputs[k] = x
    assert all(v._s.host_stale for v in inputs.values())
    ha.reset_stats()
    got = f(inputs)
    assert ha.stats().acquires >= 1  # SciPy's reads acquired the kernel's writes
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-7, atol=1e-12)
    if name in KEEPS:
        assert isinstance(got, ha.HostPtrArray)
        # scipy.special's ufuncs and signal.convolve compute on numpy and return
        # xp.asarray(out) without device=: the result lands on the default device.
        lost = name in ("special.erf", "signal.convolve")
        assert got.device == (ha.default_device() if lost else cl_device)
