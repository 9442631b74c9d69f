"""``hostarray._settings``: every ``HOSTARRAY_*`` variable parsed and checked in one place,
with the standard library alone; the table in ``docs/install.md`` is made from it; the
library's modules read the variables through it."""

from __future__ import annotations

import ast
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import hostarray as ha
from hostarray import _config, _guard, _settings

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "hostarray"

# modules, besides _settings, that still read a HOSTARRAY_* variable from the environment
# themselves: the report (its raw values, and the variables set here that hostarray does
# not read), and bench.py and dask.py, which have a _settings function to switch to
# (bench_host_mem, device; dask_device, device)
STILL_READING = {"_config.py", "bench.py", "dask.py"}


def test_settings_imports_the_standard_library_alone() -> None:
    tree = ast.parse((PACKAGE / "_settings.py").read_text(encoding="utf-8"))
    top = []
    for node in tree.body:
        if isinstance(node, ast.Import):
            top += [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            top.append("." * node.level + (node.module or ""))
    assert all(not m.startswith(".") and m.split(".")[0] in sys.stdlib_module_names
               for m in top if m != "__future__"), top
    inner = [("." * n.level + (n.module or "")) for n in ast.walk(tree)
             if isinstance(n, ast.ImportFrom) and n not in tree.body]
    assert inner == ["._bench_report"], inner  # the bench's size parser, at its call
    bench_report = ast.parse((PACKAGE / "_bench_report.py").read_text(encoding="utf-8"))
    # (itself importing nothing that imports back)
    assert {n.module for n in ast.walk(bench_report)
            if isinstance(n, ast.ImportFrom) and n.level} <= {None, "_text"}


def test_one_record_per_variable_and_the_report_lists_them() -> None:
    names = [s.name for s in _settings.SETTINGS]
    assert len(names) == len(set(names)) and set(names) == set(_settings.BY_NAME)
    assert list(_config.SETTINGS) == names
    for s in _settings.SETTINGS:
        assert _config.SETTINGS[s.name] == (s.sets, s.unset)
        assert s.sets and s.values and s.unset and s.read
        assert (ROOT / "docs" / f"{s.see}.md").is_file()
        assert s is getattr(_settings, s.name.removeprefix("HOSTARRAY_"))


def test_each_variable_unset_and_empty_give_the_default() -> None:
    for environ in ({}, {s.name: "" for s in _settings.SETTINGS}):
        assert _settings.device(environ) is None
        assert _settings.link(environ) is None
        assert _settings.transfer_guard(environ) == "allow"
        assert _settings.device_compute_min_bytes(environ) == 1 << 20
        assert _settings.bench_host_mem(environ) == 0
        assert _settings.dask_device(environ) == {}
        assert _settings.check(environ) == []


def test_each_variable_takes_its_values() -> None:
    assert _settings.device({"HOSTARRAY_DEVICE": " opencl:gpu:1 "}) == "opencl:gpu:1"
    for given in ("auto", " AUTO "):
        assert _settings.link({"HOSTARRAY_LINK": given}) is None
    for kind in _settings.LINK_KINDS:
        assert _settings.link({"HOSTARRAY_LINK": f" {kind.upper()} "}) == kind
    for mode in ("allow", "log", "disallow"):
        assert _settings.transfer_guard({"HOSTARRAY_TRANSFER_GUARD": mode.title()}) == mode
    min_bytes = _settings.device_compute_min_bytes
    assert min_bytes({"HOSTARRAY_DEVICE_COMPUTE_MIN_BYTES": "0"}) == 0
    assert min_bytes({"HOSTARRAY_DEVICE_COMPUTE_MIN_BYTES": " 4096 "}) == 4096
    for off in ("off", "None", "NEVER"):
        assert min_bytes({"HOSTARRAY_DEVICE_COMPUTE_MIN_BYTES": off}) is None
    assert _settings.bench_host_mem({"HOSTARRAY_BENCH_HOST_MEM": "16GiB"}) == 16 << 30
    assert _settings.dask_device({"HOSTARRAY_DASK_DEVICE": '{"device": "opencl:0:0"}'}) == {
        "device": "opencl:0:0"}


@pytest.mark.parametrize("name, given, words", [
    ("HOSTARRAY_LINK", "sideways", "'sideways': use one of auto, shared, mapped, copied"),
    ("HOSTARRAY_TRANSFER_GUARD", " Sideways", "'sideways': use one of 'allow', 'log', 'disallow'"),
    ("HOSTARRAY_DEVICE_COMPUTE_MIN_BYTES", "lots", "'lots': give a number of bytes"),
    ("HOSTARRAY_DEVICE_COMPUTE_MIN_BYTES", "-1", "'-1': the threshold must be >= 0 bytes"),
    ("HOSTARRAY_BENCH_HOST_MEM", "2g", "'2g': ambiguous size '2g'"),
    ("HOSTARRAY_DASK_DEVICE", "[1]", "'[1]': not a JSON object"),
    ("HOSTARRAY_DASK_DEVICE", "{", "'{': not JSON"),
])
def test_a_wrong_value_is_one_sentence_naming_the_variable(name: str, given: str,
                                                          words: str) -> None:
    environ = {name: given}
    setting = _settings.BY_NAME[name]
    with pytest.raises(ValueError) as e:
        setting.value(environ)
    assert str(e.value) == setting.problem(environ)
    assert str(e.value).startswith(f"{name}={words}"), str(e.value)
    assert _settings.check(environ) == [str(e.value)]
    assert _settings.check(environ, skip=[name]) == []
    assert setting.raw(environ) == given and setting.raw({}) is None


def test_check_lists_every_problem_in_order() -> None:
    environ = {"HOSTARRAY_DEVICE_COMPUTE_MIN_BYTES": "lots", "HOSTARRAY_LINK": "sideways",
               "HOSTARRAY_DEVICE": "no such device"}  # (a device name is checked at its use)
    got = _settings.check(environ)
    assert [p.split("=")[0] for p in got] == ["HOSTARRAY_LINK",
                                              "HOSTARRAY_DEVICE_COMPUTE_MIN_BYTES"]


def test_unchecked_reads_keep_a_wrong_value_for_a_report() -> None:
    assert _settings.link({"HOSTARRAY_LINK": " Sideways"}, checked=False) == "sideways"
    assert _settings.transfer_guard({"HOSTARRAY_TRANSFER_GUARD": "X"}, checked=False) == "x"


def test_the_guard_refuses_its_variable_as_the_settings_say(
        monkeypatch: pytest.MonkeyPatch) -> None:
    assert _guard.MODES == _settings.TRANSFER_GUARD_MODES
    monkeypatch.setattr(_guard, "_default", "sideways")  # as the variable left it at import
    with pytest.raises(ValueError, match=re.escape(_settings.check(
            {"HOSTARRAY_TRANSFER_GUARD": "sideways"})[0])):
        _guard.check_environment()


def test_the_library_reads_the_variables_through_the_settings() -> None:
    reading = set()
    for path in PACKAGE.rglob("*.py"):
        rel = path.relative_to(PACKAGE).as_posix()
        text = path.read_text(encoding="utf-8")
        if rel != "_settings.py" and "environ" in text and re.search(r"\bHOSTARRAY_\w", text):
            if re.search(r"environ(\.get\(|\[)", text):
                reading.add(rel)
    assert reading <= STILL_READING, reading - STILL_READING


def test_the_install_page_has_the_table() -> None:
    page = (ROOT / "docs" / "install.md").read_text(encoding="utf-8")
    section = page.split("## Environment variables", 1)[1].split("\n## ", 1)[0]
    assert _settings.markdown_table() in section
    for s in _settings.SETTINGS:
        assert f"| `{s.name}` |" in section


def test_a_wrong_device_variable_is_refused_at_its_use(monkeypatch: pytest.MonkeyPatch) -> None:
    from hostarray import _devices

    monkeypatch.setenv("HOSTARRAY_DEVICE", " bogus:0 ")
    monkeypatch.setattr(_devices, "_FROM_ENVIRONMENT", [])
    with pytest.raises(ha.errors.UnknownFramework) as e:
        _devices._environment_default()
    assert str(e.value).startswith("HOSTARRAY_DEVICE=' bogus:0 ': no backend for framework")


# -- HOSTARRAY_DEVICE_COMPUTE_MIN_BYTES: a bad value breaks neither the import nor the CLI ---------

def _run(code: list[str], value: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, HOSTARRAY_LINK="copied", HOSTARRAY_DEVICE_COMPUTE_MIN_BYTES=value,
               PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, *code], env=env, capture_output=True, text=True,
                          timeout=120, cwd=ROOT)


@pytest.mark.device
def test_bad_min_bytes_env_does_not_break_import() -> None:
    r = _run(["-c", "import hostarray"], "abc")
    assert r.returncode == 0, r.stderr[-400:]


@pytest.mark.device
def test_bad_min_bytes_env_cli_is_one_sentence_exit_2() -> None:
    r = _run(["-m", "hostarray", "--version"], "abc")
    assert r.returncode in (0, 2) and "Traceback" not in r.stderr, r.stderr[-400:]


@pytest.mark.device
def test_bad_min_bytes_env_message_quotes_the_value_as_given() -> None:
    r = _run(["-c", "import hostarray as ha; ha.device_compute_threshold()"], "1MiB")
    assert "'1MiB'" in r.stderr or r.returncode == 0, r.stderr[-300:]


# -- ha.stats() in a fresh process -----------------------------------------------------------------

@pytest.mark.device
def test_compile_seconds_is_a_float_in_a_fresh_process() -> None:
    r = _run(["-c", "import hostarray as ha; print(type(ha.stats().compile_seconds).__name__)"],
             "0")
    assert r.stdout.strip() == "float", (r.stdout, r.stderr[-300:])
