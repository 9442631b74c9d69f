"""Test plumbing shared by ``tests/`` and ``array_api_tests/`` (one place for each of these).

* ``--thorough`` (or ``HOSTARRAY_THOROUGH=1``): the long modes: at least 10,000
  state-machine steps and lifetime cycles in ``tests/reliability``, more examples in
  ``tests/coherence/test_state_machine.py``, 10x the hypothesis examples in ``array_api_tests``.
  The environment variable is folded into the option here, so every consumer reads
  ``config.getoption("thorough")`` or the ``thorough`` fixture.
* ``HOSTARRAY_REQUIRE_DEVICE=1`` (CI): the session exits at once (status 3) when no
  working OpenCL device exists, so device tests can never silently skip.
* ``cl_device``: the first working OpenCL device (the suite's real device; no mocks).
* Order: the tests marked ``slow`` run first, and ``-n`` without ``--dist`` distributes
  with pytest-xdist's ``worksteal`` (a worker that runs out takes tests queued for another),
  so that the workers finish together.
* ``--keep-link-fixed``: see ``tests/conftest.py`` (the copied pass leaves out the tests
  that set their link themselves).

Only fixtures and hooks live in conftest files; helpers that tests import live in
``_support`` modules (``tests/reliability/_support.py``); ``tests/tooling/test_plumbing.py``
checks both rules.
"""

from __future__ import annotations

import os
import shlex

import pytest

import hostarray as ha

REQUIRE = os.environ.get("HOSTARRAY_REQUIRE_DEVICE") == "1"


def _opencl_devices() -> list[ha.Device]:
    return [d for d in ha.devices() if d.framework == "opencl"]


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption("--thorough", action="store_true", default=False,
                     help="hostarray: long modes (>= 10,000 state-machine steps and cycles, "
                          "10x the array_api_tests examples); also HOSTARRAY_THOROUGH=1")
    parser.addoption("--keep-link-fixed", action="store_true", default=False,
                     help="hostarray: under HOSTARRAY_LINK=copied, run the tests that set "
                          "their link themselves too (left out by default: the run without "
                          "HOSTARRAY_LINK runs them on the same links; tests/conftest.py)")


def pytest_configure(config: pytest.Config) -> None:
    if os.environ.get("HOSTARRAY_THOROUGH") == "1":
        config.option.thorough = True
    # -n without --dist: pytest-xdist's "load" hands each worker its share of the tests up
    # front, and a worker that ends early then waits for the others (65 s of 240 here);
    # "worksteal" gives it tests from their queues instead
    given = [*map(str, config.invocation_params.args), *config.getini("addopts"),
             *shlex.split(os.environ.get("PYTEST_ADDOPTS", ""))]
    if getattr(config.option, "dist", None) == "load" and not any(
            a.startswith(("--dist", "-d")) for a in given):
        config.option.dist = "worksteal"


@pytest.hookimpl(trylast=True)
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # the tests marked slow (several seconds each) first: pytest-xdist hands the first items
    # out in turn, so the long ones start at once instead of keeping one worker busy at the
    # end while the others wait
    items.sort(key=lambda item: item.get_closest_marker("slow") is None)


def pytest_sessionstart(session: pytest.Session) -> None:
    if REQUIRE and not _opencl_devices():
        pytest.exit("HOSTARRAY_REQUIRE_DEVICE=1 but no working OpenCL device was found "
                    f"(left out: {ha._devices.left_out_devices()})", returncode=3)


def pytest_report_header(config: pytest.Config) -> list[str]:
    devs = _opencl_devices()
    return [f"hostarray devices: {[f'{d} {d.name} link={d.link}' for d in devs]}",
            f"HOSTARRAY_LINK={os.environ.get('HOSTARRAY_LINK', 'auto')}"]


@pytest.fixture(scope="session")
def thorough(request: pytest.FixtureRequest) -> bool:
    """True under ``--thorough`` or ``HOSTARRAY_THOROUGH=1``."""
    return bool(request.config.getoption("thorough"))


@pytest.fixture(scope="session")
def cl_device() -> ha.Device:
    """The first working OpenCL device (the suite's real device; no mocks)."""
    devs = _opencl_devices()
    if not devs:
        if REQUIRE:
            pytest.fail("no working OpenCL device (HOSTARRAY_REQUIRE_DEVICE=1)")
        pytest.skip("no working OpenCL device")
    return devs[0]
