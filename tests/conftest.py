"""Shared fixtures: the real OpenCL device the suite runs on.

With ``HOSTARRAY_REQUIRE_DEVICE=1`` (CI) the session fails at once if no
working OpenCL device exists, so device tests can never silently skip.
"""

from __future__ import annotations

import os

import pytest

import hostarray as ha

REQUIRE = os.environ.get("HOSTARRAY_REQUIRE_DEVICE") == "1"


def opencl_devices() -> list[ha.Device]:
    return [d for d in ha.devices() if d.framework == "opencl"]


def pytest_sessionstart(session: pytest.Session) -> None:
    if REQUIRE and not opencl_devices():
        pytest.exit("HOSTARRAY_REQUIRE_DEVICE=1 but no working OpenCL device was found "
                    f"(left out: {ha._devices.left_out_devices()})", returncode=3)


def pytest_report_header(config: pytest.Config) -> list[str]:
    devs = opencl_devices()
    return [f"hostarray devices: {[f'{d} {d.name} link={d.link}' for d in devs]}",
            f"HOSTARRAY_LINK={os.environ.get('HOSTARRAY_LINK', 'auto')}"]


@pytest.fixture(scope="session")
def cl_device() -> ha.Device:
    devs = opencl_devices()
    if not devs:
        if REQUIRE:
            pytest.fail("no working OpenCL device (HOSTARRAY_REQUIRE_DEVICE=1)")
        pytest.skip("no working OpenCL device")
    return devs[0]


@pytest.fixture(autouse=True)
def _fresh_stats() -> None:
    ha.reset_stats()
