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
