"""The README's two commands and .ci/run stay in step."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _readme_commands() -> list[str]:
    blocks = re.findall(r"```sh\n(.*?)```", (ROOT / "README.md").read_text(), re.S)
    return [line for b in blocks for line in b.strip().splitlines()]


def test_ci_runs_exactly_the_readme_test_command() -> None:
    test_cmd = next(c for c in _readme_commands() if "pytest" in c)
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    # set -e does not stop at a failure inside an && list (only at its last command's), so
    # the command ends in "|| exit 1": CI fails when any part of it fails
    line = test_cmd + " || exit 1"
    assert line in ci
    assert "export HOSTARRAY_REQUIRE_DEVICE=1" in ci
    assert ci.index("export HOSTARRAY_REQUIRE_DEVICE=1") < ci.index(line)
    assert "set -euo pipefail" in ci  # a failing (or empty: exit 5) pytest fails CI


def test_readme_first_command_installs_then_runs_the_demo() -> None:
    assert "./scripts/install.sh && hostarray demo" in _readme_commands()
    assert (ROOT / "scripts" / "install.sh").stat().st_mode & 0o111


def test_the_readme_runs_the_suite_on_the_device_compute_path() -> None:
    # the conformance suite once more with its inputs device-newest (array_api_tests'
    # conftest: HOSTARRAY_TEST_DEVICE_COMPUTE=1), on the copied link it requires
    test_cmd = next(c for c in _readme_commands() if "pytest" in c)
    runs = test_cmd.split(" && ")
    assert ("HOSTARRAY_LINK=copied HOSTARRAY_TEST_DEVICE_COMPUTE=1 python3 -m pytest -q "
            "array_api_tests") in runs
