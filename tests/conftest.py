"""Fixtures and hooks of ``tests/``: fresh transfer counters for every test; the
terminal summary names the driver that served as the second OpenCL device of the
two-device tests (``tests.reliability._support.second_driver``), where one ran.

The copied pass (``HOSTARRAY_LINK=copied``, the README's second run) leaves out the tests
that set their link themselves, which the first run (no ``HOSTARRAY_LINK``) runs on the
same links: those marked ``link_fixed`` (their subprocesses get ``HOSTARRAY_LINK`` from
the test), and, where the device's own link is shared, those that take ``off_shared``
(copied buffers there, as in the first run).  ``--keep-link-fixed`` runs them anyway, and
so do naming a test on the command line (``path::name``) and a ``-m`` that names
``link_fixed``.

The device fixture (``cl_device``), ``--thorough`` and the ``HOSTARRAY_REQUIRE_DEVICE``
session check are shared with ``array_api_tests/`` in the repository's root ``conftest.py``.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator

import pytest

import hostarray as ha
from hostarray import _settings


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


def _own_link() -> str | None:
    """The first OpenCL device's own link (its probe, whatever ``HOSTARRAY_LINK`` says),
    or ``None`` without a device."""
    devs = [d for d in ha.devices() if d.framework == "opencl"]
    return devs[0].runtime._check_link() if devs else None


def _named(config: pytest.Config) -> list[str]:
    """The node ids of the tests named on the command line (``path::name``), as pytest
    spells them (relative to the root folder)."""
    out = []
    for arg in config.args:
        path, sep, rest = arg.partition("::")
        if sep:
            full = os.path.join(config.invocation_params.dir, path)
            out.append(os.path.relpath(full, config.rootpath).replace(os.sep, "/") + sep + rest)
    return out


def _copied_pass() -> bool:
    """Whether ``HOSTARRAY_LINK`` forces copied buffers (as hostarray reads it)."""
    return _settings.link(checked=False) == "copied"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if (not _copied_pass() or config.getoption("keep_link_fixed")
            or "link_fixed" in (config.getoption("markexpr") or "")):
        return
    named = _named(config)
    own = None
    kept, left = [], []
    for item in items:
        if any(item.nodeid == n or item.nodeid.startswith((n + "[", n + "::")) for n in named):
            kept.append(item)  # a test named on the command line runs
            continue
        fixed = item.get_closest_marker("link_fixed") is not None
        if not fixed and "off_shared" in getattr(item, "fixturenames", ()):
            own = own or _own_link()
            fixed = own == "shared"
        (left if fixed else kept).append(item)
    if left:
        config.hook.pytest_deselected(items=left)
        items[:] = kept
        config.stash[_LEFT_OUT] = len(left)
        if hasattr(config, "workeroutput"):  # a pytest-xdist worker: tell the controller
            config.workeroutput["hostarray_left_out"] = len(left)


_LEFT_OUT = pytest.StashKey[int]()


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:  # pytest-xdist's controller
    left = getattr(node, "workeroutput", {}).get("hostarray_left_out")
    if left:
        node.config.stash[_LEFT_OUT] = left


def pytest_report_header(config: pytest.Config) -> list[str]:
    if not _copied_pass():
        return []
    return ["tests/: the tests that set their link themselves are left out of this copied "
            "pass (the run without HOSTARRAY_LINK runs them; --keep-link-fixed: run them)"]


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter) -> None:
    left = terminalreporter.config.stash.get(_LEFT_OUT, 0)
    if left:
        terminalreporter.write_line(
            f"hostarray: {left} {'test that sets its' if left == 1 else 'tests that set their'} "
            f"link {'itself was' if left == 1 else 'themselves were'} left out (the run without "
            f"HOSTARRAY_LINK runs {'it' if left == 1 else 'them'} on the same links; "
            f"--keep-link-fixed runs {'it' if left == 1 else 'them'})")
    # never silent about which driver stood in as the second device (Oclgrind where the
    # PyPI PoCL does not work on this CPU)
    support = sys.modules.get("tests.reliability._support")
    for note in getattr(support, "SECOND_DRIVER_NOTES", []):
        terminalreporter.write_line(f"hostarray: {note}")
