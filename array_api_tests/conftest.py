"""Settings of the conformance suite: hypothesis profiles, rejection report.

The default profile keeps the whole suite to a few minutes on two cores (CI). ``--thorough``
or ``HOSTARRAY_THOROUGH=1`` draws ten times as many examples per test. The option, the
``cl_device`` fixture and the ``HOSTARRAY_REQUIRE_DEVICE`` check are shared with ``tests/``
in the repository's root ``conftest.py``.
"""

from __future__ import annotations

import os

import pytest
from hypothesis import HealthCheck, settings

FAST_EXAMPLES = 20
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
    where = os.environ.get("HOSTARRAY_SUITE_DEVICE") or "cpu"
    return [f"array_api_tests: {mode} mode, {_suite_settings(config).max_examples} examples "
            f"per test, differential inputs on {where}"]


def pytest_terminal_summary(terminalreporter, exitstatus, config) -> None:
    from .helpers import CALLS, REJECTED
    mostly = sorted(t for t, n in CALLS.items() if n >= 5 and REJECTED[t] > REJECT_SHARE * n)
    if mostly:
        terminalreporter.write_sep("-", f"array_api_tests: the reference rejected over "
                                        f"{REJECT_SHARE:.0%} of the inputs of")
        for t in mostly:
            terminalreporter.write_line(f"{t}: {REJECTED[t]}/{CALLS[t]} rejected")
