"""Fixtures of ``tests/``: fresh transfer counters for every test.

The device fixture (``cl_device``), ``--thorough`` and the ``HOSTARRAY_REQUIRE_DEVICE``
session check are shared with ``array_api_tests/`` in the repository's root ``conftest.py``.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

import hostarray as ha


@pytest.fixture(autouse=True)
def _fresh_stats() -> None:
    ha.reset_stats()


@pytest.fixture
def dev(cl_device: ha.Device) -> Iterator[ha.Device]:
    """The OpenCL device, with the device path taken at every size (restored after); test
    modules with their own rule (another threshold, a forced link) define their own."""
    old = ha.set_device_compute_threshold(0)
    try:
        yield cl_device
    finally:
        ha.set_device_compute_threshold(old)
