"""Settings of the conformance suite: hypothesis profiles, rejection report, device-compute
mode.

The default profile keeps the whole suite to a few minutes on two cores (CI): 20 examples per
test, 10 in device-compute mode, where most examples build a kernel (a new combination of data
types is a new program: about 0.15 s on PoCL, the whole cost of the run on a fresh machine).
``--thorough`` or ``HOSTARRAY_THOROUGH=1`` draws ten times as many examples per test (CI runs
both modes so). The option, the
``cl_device`` fixture and the ``HOSTARRAY_REQUIRE_DEVICE`` check are shared with ``tests/``
in the repository's root ``conftest.py``.

``HOSTARRAY_TEST_DEVICE_COMPUTE=1`` (with ``HOSTARRAY_LINK=copied``, or on a GPU whose link is
mapped; read here only, never by
the library) runs the suite as a differential test of the device compute path: the
threshold is 0 (every size runs on the device where the placement rule allows), every input
of a differential call goes to the OpenCL device and a no-op read-write kernel makes it
device-newest before the tested function is called, and the results are compared with the
reference's as always.  The summary lists how many calls of each function ran kernels and
how many of those acquired bytes before their result was read: the device path must not,
and any such call fails the session (pytest-xdist's workers send their counts to the
controller, which prints the summary).
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

import hostarray as ha

from . import helpers

_DEVICE_COMPUTE_ENV = "HOSTARRAY_TEST_DEVICE_COMPUTE"
_DEVICE_COMPUTE = os.environ.get(_DEVICE_COMPUTE_ENV, "") == "1"
FAST_EXAMPLES = 10 if _DEVICE_COMPUTE else 20
THOROUGH_EXAMPLES = 10 * FAST_EXAMPLES
REJECT_SHARE = float(os.environ.get("HOSTARRAY_REJECT_SHARE", "0.5"))

_COMMON = dict(deadline=None, derandomize=False, print_blob=True,
               suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much,
                                      HealthCheck.data_too_large,
                                      HealthCheck.function_scoped_fixture])
settings.register_profile("hostarray-fast", max_examples=FAST_EXAMPLES, **_COMMON)
settings.register_profile("hostarray-thorough", max_examples=THOROUGH_EXAMPLES, **_COMMON)


def _thorough(config: pytest.Config) -> bool:
    # the root conftest folds HOSTARRAY_THOROUGH=1 into the option
    return bool(config.getoption("thorough"))


def _suite_settings(config: pytest.Config) -> settings:
    # An explicit --hypothesis-profile on the command line wins.
    if config.getoption("hypothesis_profile", None):
        return settings()
    return settings.get_profile("hostarray-thorough" if _thorough(config)
                                else "hostarray-fast")


def pytest_configure(config: pytest.Config) -> None:
    value = os.environ.get(_DEVICE_COMPUTE_ENV, "")
    if value not in ("", "0", "1"):
        raise pytest.UsageError(f"{_DEVICE_COMPUTE_ENV}={value!r}: give 1 (on) or 0 (off)")
    link = os.environ.get("HOSTARRAY_LINK", "")
    if value == "1" and link not in ("copied", "mapped", ""):
        # on the shared link the placement rule keeps the host path (nothing to test); the
        # copied link counts every byte moved; a GPU's own (mapped) link is the real target
        # (unset: the device's own link, checked by the session fixture)
        raise pytest.UsageError(f"{_DEVICE_COMPUTE_ENV}=1 needs HOSTARRAY_LINK=copied, or a "
                                f"GPU on its own mapped link (got HOSTARRAY_LINK={link!r})")


@pytest.fixture(scope="session", autouse=True)
def _device_compute(request: pytest.FixtureRequest):
    """Under HOSTARRAY_TEST_DEVICE_COMPUTE=1: the device path for every size, differential
    inputs device-newest on ``cl_device``."""
    if not _DEVICE_COMPUTE:
        yield
        return
    dev = request.getfixturevalue("cl_device")
    if dev.link == "shared":  # the device path never runs on a shared link
        pytest.fail(f"{_DEVICE_COMPUTE_ENV}=1: {dev} has link='shared'; set "
                    f"HOSTARRAY_LINK=copied (or run on a mapped-link GPU)")
    old = ha.set_device_compute_threshold(0)
    helpers.device_compute_mode(dev)
    try:
        yield
    finally:
        helpers.device_compute_mode(None)
        ha.set_device_compute_threshold(old)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    # The profile applies to this suite's tests only (not loaded globally, so tests/ keeps
    # its own hypothesis settings when both run in one session).
    suite = _suite_settings(config)
    here = os.path.dirname(os.path.abspath(__file__))
    done: set[int] = set()
    for item in items:
        fn = getattr(item, "obj", None)
        if (fn is None or not getattr(fn, "is_hypothesis_test", False) or id(fn) in done
                or not os.path.abspath(str(item.path)).startswith(here + os.sep)):
            continue
        done.add(id(fn))
        settings(suite)(fn)


def pytest_report_header(config: pytest.Config) -> list[str]:
    mode = "thorough" if _thorough(config) else "fast"
    where = ("opencl, made device-newest by a kernel (device compute)" if _DEVICE_COMPUTE
             else os.environ.get("HOSTARRAY_SUITE_DEVICE") or "cpu")
    return [f"array_api_tests: {mode} mode, {_suite_settings(config).max_examples} examples "
            f"per test, differential inputs on {where}"]


def pytest_sessionfinish(session: pytest.Session) -> None:
    from .helpers import CALLS, DEVICE_CALLS, REJECTED
    out = getattr(session.config, "workeroutput", None)
    if out is not None:
        # a pytest-xdist worker: its counts go to the controller, which prints the summary
        out["hostarray_suite"] = {"calls": dict(CALLS), "rejected": dict(REJECTED),
                                  "device_calls": DEVICE_CALLS}
        return
    # the device path never acquires an input's bytes before its result is read: a call that
    # ran kernels and did fails the session (the summary names the functions)
    if any(row[2] for row in DEVICE_CALLS.values()) and session.exitstatus == 0:
        session.exitstatus = pytest.ExitCode.TESTS_FAILED


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error) -> None:  # pytest-xdist's controller
    from .helpers import CALLS, DEVICE_CALLS, REJECTED
    counts = getattr(node, "workeroutput", {}).get("hostarray_suite")
    if not counts:
        return
    CALLS.update(counts["calls"])
    REJECTED.update(counts["rejected"])
    for name, row in counts["device_calls"].items():
        mine = DEVICE_CALLS.setdefault(name, [0] * len(row))
        mine[:] = [a + b for a, b in zip(mine, row)]


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    from .helpers import CALLS, DEVICE_CALLS, REJECTED
    if DEVICE_CALLS:
        _device_summary(terminalreporter, DEVICE_CALLS)
    mostly = sorted(t for t, n in CALLS.items() if n >= 5 and REJECTED[t] > REJECT_SHARE * n)
    if mostly:
        terminalreporter.write_sep("-", f"array_api_tests: the reference rejected over "
                                        f"{REJECT_SHARE:.0%} of the inputs of")
        for t in mostly:
            terminalreporter.write_line(f"{t}: {REJECTED[t]}/{CALLS[t]} rejected")


def _device_summary(terminalreporter, rows: dict[str, list[int]]) -> None:
    calls = sum(r[0] for r in rows.values())
    on_device = sum(r[1] for r in rows.values())
    terminalreporter.write_sep("-", f"device compute: {on_device} of {calls} differential "
                                    f"calls ran kernels")
    ran = [f"{n} {r[1]}/{r[0]}" for n, r in sorted(rows.items()) if r[1]]
    never = [n for n, r in sorted(rows.items()) if not r[1]]
    acquired = [f"{n} {r[2]}/{r[1]}" for n, r in sorted(rows.items()) if r[2]]
    terminalreporter.write_line("on the device (calls): " + (", ".join(ran) or "none"))
    terminalreporter.write_line("host path only: " + (", ".join(never) or "none"))
    terminalreporter.write_line("ran kernels but acquired before the result was read: "
                                + (", ".join(acquired) or "none")
                                + (" (FAILED: the device path must not)" if acquired else ""))
    declined = [f"{n} {r[3]}/{r[0]}" for n, r in sorted(rows.items()) if r[3]]
    terminalreporter.write_line("sent to the device but computed on the host "
                                "(host_fallbacks): " + (", ".join(declined) or "none"))
