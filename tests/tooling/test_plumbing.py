"""The test plumbing stays in one place.

The root ``conftest.py`` alone registers ``--thorough``, defines ``cl_device`` and checks
``HOSTARRAY_REQUIRE_DEVICE``, for ``tests/`` and ``array_api_tests/`` alike; conftest files
hold only fixtures and hooks, and no test module imports from one (helpers that tests share
live in ``_support`` modules).
"""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import hostarray as ha

ROOT = Path(__file__).resolve().parents[2]
SUITES = ("tests", "array_api_tests")
FUNCTIONS = (ast.FunctionDef, ast.AsyncFunctionDef)


def _python_files() -> list[Path]:
    files = [ROOT / "conftest.py"]
    for suite in SUITES:
        files += sorted(p for p in (ROOT / suite).rglob("*.py") if "__pycache__" not in p.parts)
    return files


def _conftests() -> list[Path]:
    return [p for p in _python_files() if p.name == "conftest.py"]


def _tree(path: Path) -> ast.Module:
    return ast.parse(path.read_text(), filename=str(path))


def _rel(path: Path) -> str:
    return path.relative_to(ROOT).as_posix()


def _is_fixture(fn: ast.FunctionDef) -> bool:
    for d in fn.decorator_list:
        target = d.func if isinstance(d, ast.Call) else d
        if isinstance(target, ast.Attribute) and target.attr == "fixture":
            return True
        if isinstance(target, ast.Name) and target.id == "fixture":
            return True
    return False


def test_the_root_conftest_exists() -> None:
    assert (ROOT / "conftest.py").is_file()
    assert ROOT / "conftest.py" in _conftests()


def test_no_test_module_imports_from_a_conftest() -> None:
    bad = []
    for path in _python_files():
        if path.name == "conftest.py":
            continue
        for node in ast.walk(_tree(path)):
            if isinstance(node, ast.ImportFrom):
                names = [node.module or ""] + [f"{node.module or ''}.{a.name}" for a in node.names]
            elif isinstance(node, ast.Import):
                names = [a.name for a in node.names]
            else:
                continue
            if any(n.split(".")[-1] == "conftest" for n in names):
                bad.append(f"{_rel(path)}:{node.lineno}")
    assert not bad, f"imports from a conftest (move the helper into a _support module): {bad}"


def test_cl_device_is_defined_in_one_place() -> None:
    where = []
    for path in _python_files():
        for node in ast.walk(_tree(path)):
            if isinstance(node, FUNCTIONS) and node.name == "cl_device":
                where.append(f"{_rel(path)}:{node.lineno}")
            elif isinstance(node, ast.Assign | ast.AnnAssign):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                if any(isinstance(t, ast.Name) and t.id == "cl_device" for t in targets):
                    where.append(f"{_rel(path)}:{node.lineno}")
    assert len(where) == 1 and where[0].startswith("conftest.py:"), where


def test_thorough_is_registered_once() -> None:
    where = []
    for path in _python_files():
        for node in ast.walk(_tree(path)):
            if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                    and node.func.attr == "addoption"
                    and any(isinstance(a, ast.Constant) and a.value == "--thorough"
                            for a in node.args)):
                where.append(f"{_rel(path)}:{node.lineno}")
    assert len(where) == 1 and where[0].startswith("conftest.py:"), where


def test_conftests_hold_only_fixtures_and_hooks() -> None:
    bad = []
    for path in _conftests():
        for node in _tree(path).body:
            if not isinstance(node, (*FUNCTIONS, ast.ClassDef)):
                continue
            if node.name.startswith(("_", "pytest_")):
                continue
            if isinstance(node, ast.ClassDef) or not _is_fixture(node):
                bad.append(f"{_rel(path)}:{node.lineno} {node.name}")
    assert not bad, f"public helpers in a conftest (move them into a _support module): {bad}"


def test_thorough_fixture_follows_the_option_and_the_environment(
        request: pytest.FixtureRequest, thorough: bool) -> None:
    assert thorough is bool(request.config.getoption("thorough"))
    if os.environ.get("HOSTARRAY_THOROUGH") == "1":
        assert thorough


def _pytest(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    full = dict(os.environ)
    full["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), full.get("PYTHONPATH")]))
    full.pop("HOSTARRAY_THOROUGH", None)
    full.update(env or {})
    return subprocess.run([sys.executable, "-m", "pytest", "-p", "no:cacheprovider", *args],
                          cwd=ROOT, env=full, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("suite", ["tests/tooling/test_ci.py", "array_api_tests/test_info.py"])
def test_require_device_without_a_device_exits_the_session_at_once(suite: str) -> None:
    r = _pytest("--collect-only", "-q", suite,
                env={"HOSTARRAY_REQUIRE_DEVICE": "1", "OCL_ICD_VENDORS": "/nonexistent",
                     "OCL_ICD_FILENAMES": "", "HOSTARRAY_DEVICE": ""})
    assert r.returncode == 3, r.stdout + r.stderr
    assert "HOSTARRAY_REQUIRE_DEVICE=1 but no working OpenCL device" in r.stdout + r.stderr


@pytest.mark.parametrize("how", [("--thorough",), ()], ids=["option", "environment"])
def test_thorough_reaches_every_suite(how: tuple[str, ...]) -> None:
    env = {} if how else {"HOSTARRAY_THOROUGH": "1"}
    r = _pytest("--collect-only", *how, "tests/coherence/test_state_machine.py",
                "tests/reliability", "array_api_tests/test_info.py", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "array_api_tests: thorough mode" in r.stdout, r.stdout


@pytest.mark.parametrize("env,why", [
    ({"HOSTARRAY_TEST_DEVICE_COMPUTE": "1", "HOSTARRAY_LINK": "shared"},
     "HOSTARRAY_TEST_DEVICE_COMPUTE=1 needs HOSTARRAY_LINK=copied, or a GPU"),
    ({"HOSTARRAY_TEST_DEVICE_COMPUTE": "yes", "HOSTARRAY_LINK": "copied"},
     "HOSTARRAY_TEST_DEVICE_COMPUTE='yes': give 1 (on) or 0 (off)")])
def test_device_compute_mode_refuses_a_wrong_setting(env: dict[str, str], why: str) -> None:
    r = _pytest("--collect-only", "-q", "array_api_tests/test_info.py", env=env)
    assert r.returncode == 4, r.stdout + r.stderr
    assert why in r.stdout + r.stderr


@pytest.mark.device
@pytest.mark.slow
@pytest.mark.link_fixed
def test_device_compute_mode_runs_the_suite_as_kernels(cl_device: ha.Device) -> None:
    r = _pytest("-q", "array_api_tests/test_elementwise.py", "-k",
                "test_unary and (exp or sqrt) or test_binary and add",
                env={"HOSTARRAY_TEST_DEVICE_COMPUTE": "1", "HOSTARRAY_LINK": "copied"})
    out = r.stdout + r.stderr
    assert r.returncode == 0, out
    ran = re.search(r"device compute: (\d+) of (\d+) differential calls ran kernels", out)
    assert ran and int(ran.group(1)) > 0, out
    assert "ran kernels but acquired before the result was read: none" in out


@pytest.mark.device
@pytest.mark.link_fixed
def test_the_copied_pass_leaves_out_only_the_tests_that_set_their_link(
        cl_device: ha.Device) -> None:
    # tests/conftest.py: under HOSTARRAY_LINK=copied the link_fixed tests (and, on a
    # shared-link device, those taking off_shared) are deselected; --keep-link-fixed and a
    # test named on the command line run them
    proto = "tests/kernels/test_launch_protocol.py"
    fixed = _pytest("--collect-only", "-q", proto, env={"HOSTARRAY_LINK": "copied"})
    every = _pytest("--collect-only", "-q", proto, "--keep-link-fixed",
                    env={"HOSTARRAY_LINK": "copied"})
    named = _pytest("--collect-only", "-q", proto + "::test_a_del_that_launches_while_finished_"
                    "launches_are_let_go", env={"HOSTARRAY_LINK": "copied"})
    first = _pytest("--collect-only", "-q", proto, env={"HOSTARRAY_LINK": ""})
    ids = [[ln for ln in r.stdout.splitlines() if "::" in ln] for r in (fixed, every, named, first)]
    del_ids = [i for i in ids[1] if "test_a_del_that_launches" in i]
    assert len(del_ids) == 5, every.stdout
    assert not set(del_ids) & set(ids[0]) and set(ids[0]) == set(ids[1]) - set(del_ids), \
        fixed.stdout
    assert "5 tests that set their link themselves were left out" in fixed.stdout
    assert ids[2] == del_ids and ids[3] == ids[1], named.stdout + first.stdout
    one = _pytest("--collect-only", "-q", "tests/tooling/test_bench_pipeline.py",
                  env={"HOSTARRAY_LINK": "copied"})
    assert "1 test that sets its link itself was left out" in one.stdout, one.stdout


def test_the_slow_tests_start_first() -> None:
    r = _pytest("--collect-only", "-q", "tests/device_compute/test_fusion.py")
    ids = [ln for ln in r.stdout.splitlines() if "::" in ln]
    assert len(ids) > 10 and ids[0].endswith("::test_loops_stay_flat"), r.stdout


@pytest.mark.device
@pytest.mark.link_fixed
@pytest.mark.parametrize("workers", [[], ["-n", "2"]], ids=["one process", "xdist"])
def test_device_compute_mode_fails_a_call_that_acquired_before_its_result_was_read(
        cl_device: ha.Device, tmp_path: Path, workers: list[str]) -> None:
    # array_api_tests/conftest.py: a differential call that ran kernels and acquired fails the
    # session; a plugin records one such call as helpers.py would
    (tmp_path / "acquired_plugin.py").write_text(
        "def pytest_runtest_teardown(item):\n"
        "    from array_api_tests.helpers import DEVICE_CALLS\n"
        "    DEVICE_CALLS.setdefault('made_up', [1, 1, 1, 0])\n")
    # (under xdist the workers' counts reach the controller, which fails the session)
    r = _pytest("-q", *workers, "-p", "acquired_plugin", "array_api_tests/test_elementwise.py",
                "-k",
                "test_binary and add and not python and not device",
                env={"HOSTARRAY_TEST_DEVICE_COMPUTE": "1", "HOSTARRAY_LINK": "copied",
                     "PYTHONPATH": os.pathsep.join(filter(None, [
                         str(ROOT), str(tmp_path), os.environ.get("PYTHONPATH")]))})
    out = r.stdout + r.stderr
    assert r.returncode == 1, out
    # every test passed: the session alone failed, for the recorded call
    assert re.search(r"\b\d+ passed\b", out) and not re.search(r"\b\d+ failed\b", out), out
    # (one count per process that ran a test: under xdist, one or two)
    calls = r"1/1" if not workers else r"[12]/[12]"
    assert re.search(rf"acquired before the result was read: made_up {calls} \(FAILED: the "
                     r"device path must not\)", out), out
