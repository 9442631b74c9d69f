"""Fixtures and hooks of ``tests/``: fresh transfer counters for every test; the
terminal summary names the driver that served as the second OpenCL device of the
two-device tests (``tests.reliability._support.second_driver``), where one ran.

The device fixture (``cl_device``), ``--thorough`` and the ``HOSTARRAY_REQUIRE_DEVICE``
session check are shared with ``array_api_tests/`` in the repository's root ``conftest.py``.
"""

from __future__ import annotations

import sys
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


@pytest.fixture
def device_path() -> Iterator[None]:
    """The device path taken at every size (threshold 0, restored after), for tests that
    take their device from ``cl_device`` or ``off_shared``."""
    old = ha.set_device_compute_threshold(0)
    try:
        yield
    finally:
        ha.set_device_compute_threshold(old)


@pytest.fixture
def off_shared(cl_device: ha.Device) -> Iterator[ha.Device]:
    """``cl_device`` off a shared link: where the device's own link is shared, the buffers
    made inside are copied ones (as ``HOSTARRAY_LINK=copied`` makes them), so tests of the
    device compute path run in both CI passes instead of skipping in the first."""
    if cl_device.link != "shared":
        yield cl_device
        return
    from hostarray.bench import forced_link

    with forced_link(cl_device, "copied"):
        yield cl_device
    ha.clear_pool()  # its storages have copied buffers


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    # never silent about which driver stood in as the second device (Oclgrind where the
    # PyPI PoCL does not work on this CPU)
    support = sys.modules.get("tests.reliability._support")
    for note in getattr(support, "SECOND_DRIVER_NOTES", []):
        terminalreporter.write_line(f"hostarray: {note}")
