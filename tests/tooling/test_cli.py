"""The ``hostarray`` command, run as a user runs it: in a subprocess."""

from __future__ import annotations

import argparse
import importlib
import importlib.metadata
import json
import os
import re
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path

import pytest

import hostarray as ha
import hostarray.__main__ as cli

WIDTH = 100  # the widest line any command prints by default (without --wide)


def _too_wide(text: str) -> list[str]:
    return [line for line in text.splitlines() if len(line) > WIDTH]


def _assert_named(shown: str, name: str) -> None:
    """``shown`` is ``name``, or its start shortened with ``...``."""
    assert shown == name or (shown.endswith("...") and name.startswith(shown[:-3].rstrip())
                             and len(shown) < len(name)), (shown, name)


def _flat(text: str) -> str:
    """``text`` with its line breaks and runs of spaces as one space: an error's words, as
    the command wraps them at 100 columns."""
    return " ".join(text.split())


def run_cli(*args: str, env: Mapping[str, str | None] | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """``python -m hostarray ARGS``, with ``env`` over this environment (``None``: unset)."""
    merged = {k: v for k, v in {**os.environ, **(env or {})}.items() if v is not None}
    return subprocess.run([sys.executable, "-m", "hostarray", *args], capture_output=True,
                          text=True, timeout=timeout, env=merged)


@pytest.mark.device
def test_devices_json_describes_the_real_device(cl_device: ha.Device) -> None:
    r = run_cli("devices", "--json")
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    by_name = {d["device"]: d for d in report["devices"]}
    host = by_name["cpu"]
    assert host["framework"] == "host" and host["link"] is None
    row = by_name[str(cl_device)]
    cl_dev = cl_device._cl_device
    assert row["framework"] == "opencl"
    assert row["name"] == cl_dev.name.strip()
    assert row["alignment"] == cl_dev.mem_base_addr_align // 8 == cl_device.alignment
    # PoCL derives its largest allocation from the memory free when a process starts
    # (1, 2 and 4 GiB were seen in different processes): compare with the device's total
    assert 0 < row["max_alloc"] <= cl_dev.global_mem_size
    assert row["host_unified"] == bool(cl_dev.host_unified_memory)
    assert row["platform"] == cl_dev.platform.name.strip()
    # the kind the runtime's probe found in this process (or HOSTARRAY_LINK forced)
    assert row["link"] == cl_device.link
    assert row["link"] in ("shared", "mapped", "copied")
    assert row["type"] in ("CPU", "GPU", "ACCELERATOR", "CUSTOM") or "|" in row["type"]
    assert "ALL" not in row["type"]
    defaults = [d["device"] for d in report["devices"] if d["default"]]
    assert defaults == [str(ha.default_device())] == [report["default"]]
    assert report["left_out"] == [{"device": s, "name": n, "why": w}
                                  for s, n, w in ha._devices.left_out_devices()]


@pytest.mark.device
def test_devices_table_lists_every_device(cl_device: ha.Device) -> None:
    r = run_cli("devices")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    header = lines[0].split()
    assert header[:4] == ["device", "framework", "type", "link"]
    rows = {ln.split()[0]: ln for ln in lines[2:] if ln.strip() and not ln.startswith(" ")
            and ln.split()[0] in {str(d) for d in ha.devices()}}
    assert set(rows) == {str(d) for d in ha.devices()}
    fields = rows[str(cl_device)].split()
    assert fields[1] == "opencl"
    assert fields[3] == cl_device.link
    assert fields[4:6] == [str(cl_device.alignment), "B"]
    # the driver's name on the line under the row (a last column with --wide)
    under = lines[lines.index(rows[str(cl_device)]) + 1].strip()
    assert under.startswith("name: ")
    _assert_named(under.removeprefix("name: "), cl_device.name)
    assert "left out:" in r.stdout or "left out (" in r.stdout


@pytest.mark.device
@pytest.mark.link_fixed
def test_devices_link_forced_is_reported(cl_device: ha.Device) -> None:
    r = run_cli("devices", "--json", env={"HOSTARRAY_LINK": "copied"})
    assert r.returncode == 0, r.stderr
    report = json.loads(r.stdout)
    assert report["link_forced"] == "copied"
    assert {d["link"] for d in report["devices"] if d["framework"] == "opencl"} == {"copied"}


def test_bad_device_name_is_one_sentence_and_exit_2() -> None:
    r = run_cli("demo", "--device", "cuda:0")
    assert r.returncode == 2
    assert "no backend for framework 'cuda'" in r.stderr
    assert "Traceback" not in r.stderr


@pytest.mark.device
def test_demo_checks_against_numpy_and_counts_transfers(cl_device: ha.Device) -> None:
    size = 1 << 18  # 1 MiB of float32: every expected MiB figure is exact
    r = run_cli("demo", "--device", str(cl_device), "--size", str(size), "--repeat", "1")
    assert r.returncode == 0, r.stdout + r.stderr
    out = r.stdout
    assert re.search(r"^check: hostarray vs numpy .*: OK$", out, re.MULTILINE), out
    for step in ("[1/4]", "[2/4]", "[3/4]", "[4/4]", "kernel smooth", "kernel clip_above"):
        assert step in out
    m = re.search(r"^hostarray\s+(\d+)\s+(\d+)\s+([\d.]+) MiB", out, re.MULTILINE)
    assert m, out
    publishes, acquires, mib = int(m[1]), int(m[2]), float(m[3])
    # exactly the data dependencies: x before smooth; y for np.quantile and at the end
    # (np.quantile reads through __array_function__, so y never escapes mid-pipeline)
    assert (publishes, acquires) == (1, 2), out
    assert "(the least possible: 1 + 2)" in out
    eager = re.search(r"^eager copies\s+-\s+-\s+([\d.]+) MiB", out, re.MULTILINE)
    assert eager and float(eager[1]) == pytest.approx(4 * size * 4 / 2**20, abs=0.05)
    link = cl_device.link
    if link == "shared":
        assert mib == 0.0
    else:  # every publish and acquire moves the whole signal
        assert mib == pytest.approx((publishes + acquires) * size * 4 / 2**20, abs=0.05)
    assert f"host link: {link}" in out


@pytest.mark.device
def test_devices_with_a_wrong_default_still_lists_devices(cl_device: ha.Device) -> None:
    r = run_cli("devices", "--json", env={"HOSTARRAY_DEVICE": "opencl:97:0"})
    assert r.returncode == 2
    report = json.loads(r.stdout)
    assert report["default"] is None and "opencl:97:0" in report["default_error"]
    assert str(cl_device) in {d["device"] for d in report["devices"]}
    assert not any(d["default"] for d in report["devices"])


def test_demo_on_the_host_says_it_needs_an_opencl_device() -> None:
    r = run_cli("demo", "--device", "cpu")
    assert r.returncode == 2
    # an error as the command's others: on stderr, prefixed (it was on stdout, bare)
    assert r.stdout == "" and "Traceback" not in r.stderr
    assert r.stderr.startswith("hostarray demo: cpu is the host") and \
        "needs an OpenCL device" in r.stderr, r.stderr


@pytest.mark.device
def test_readme_devices_table_has_the_cli_columns(cl_device: ha.Device) -> None:
    # the README pastes this command's output; its header must still be the command's
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    section = readme.split("## Devices on this machine", 1)[1]
    pasted = section.split("```text\n", 1)[1].split("```", 1)[0].splitlines()
    r = run_cli("devices")
    assert r.returncode == 0, r.stderr
    assert pasted[0].split() == r.stdout.splitlines()[0].split()
    assert any(ln.startswith(str(cl_device)) for ln in pasted)


def _commands() -> list[str]:
    sub = next(a for a in cli._parser()._actions if isinstance(a, argparse._SubParsersAction))
    return list(sub.choices)


def test_version_prints_the_installed_version() -> None:
    try:
        expected = importlib.metadata.version("hostarray")
    except importlib.metadata.PackageNotFoundError:
        expected = ha.__version__
    r = run_cli("--version")
    assert r.returncode == 0, r.stderr
    assert r.stdout == f"hostarray {expected}\n" and r.stderr == ""


def test_version_falls_back_to_the_module_attribute(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise importlib.metadata.PackageNotFoundError(name)

    monkeypatch.setattr(importlib.metadata, "version", missing)
    assert cli._version() == ha.__version__
    with pytest.raises(SystemExit) as e:
        cli.main(["--version"])
    assert e.value.code == 0


# RST roles and literals, Markdown code and emphasis, MyST roles, directives
_MARKUP = re.compile(r"`|\*\*|:(?:func|mod|class|meth|attr|data|doc|ref|exc|obj|envvar):"
                     r"|\{(?:doc|func|mod|class|ref)\}|^\s*\.\. ", re.MULTILINE)


@pytest.mark.parametrize("command", [None, "devices", "demo", "bench", "config"])
def test_help_is_plain_text(command: str | None) -> None:
    assert set(_commands()) == {"devices", "demo", "bench", "config"}, \
        "a new command: add it here"
    r = run_cli(*([command] if command else []), "--help")
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith(f"usage: hostarray{' ' + command if command else ''} ")
    assert not _MARKUP.findall(r.stdout), r.stdout
    if command is None:
        assert "--version" in r.stdout
        for c in _commands():
            assert c in r.stdout
    if command == "bench":  # the units, as the parser reads them
        text = " ".join(r.stdout.split())
        assert "KB, MB, GB, TB are powers of 1000" in text
        assert "KiB, MiB, GiB, TiB powers of 1024" in text


@pytest.mark.parametrize(("size", "words"), [
    ("1gigs", ["unknown size unit 'gigs'", "GiB"]),
    ("4k", ["ambiguous", "4KB (4000 bytes)", "4KiB (4096 bytes)"]),
    ("0", ["at least 4 bytes"]),
])
def test_bench_refuses_a_bad_size_before_measuring(size: str, words: list[str]) -> None:
    r = run_cli("bench", "--max-size", size)
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and "[bench]" not in r.stderr
    for w in words:
        assert w in _flat(r.stderr), r.stderr  # (wrapped at 100 columns)


@pytest.mark.parametrize(("size", "words"), [
    ("-1", ["not a size: '-1'"]),
    ("abc", ["not a size: 'abc'"]),
    ("1.5B", ["not a whole number of bytes"]),
])
def test_bench_refuses_odd_sizes_with_exit_2(size: str, words: list[str]) -> None:
    r = run_cli("bench", f"--max-size={size}")
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and "[bench]" not in r.stderr
    for w in words:
        assert w in _flat(r.stderr), r.stderr


@pytest.mark.parametrize("command", ["demo", "bench", "devices"])
def test_a_wrong_hostarray_link_is_one_sentence_and_exit_2(command: str) -> None:
    args = {"demo": ["--size", "64", "--repeat", "1"], "bench": ["--max-size", "4KiB"],
            "devices": []}[command]
    r = run_cli(command, *args, env={"HOSTARRAY_LINK": "sideways"})
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and "[bench]" not in r.stderr
    said = " ".join((r.stdout + r.stderr).split())  # (devices wraps lines at 100 columns)
    assert "HOSTARRAY_LINK='sideways': use one of auto, shared, mapped, copied" in said


@pytest.mark.parametrize("command", ["demo", "bench", "devices"])
@pytest.mark.parametrize("variable, words", [
    ("HOSTARRAY_DEVICE_COMPUTE_MIN_BYTES", "give a number of bytes"),
    ("HOSTARRAY_TRANSFER_GUARD", "use one of 'allow', 'log', 'disallow'")])
def test_a_wrong_environment_value_is_one_sentence_and_exit_2(command: str, variable: str,
                                                              words: str) -> None:
    # (they crashed the demo half-way with a traceback and exit 1, "a check failed")
    args = {"demo": ["--size", "64", "--repeat", "1"], "bench": ["--max-size", "4KiB"],
            "devices": []}[command]
    r = run_cli(command, *args, env={variable: "sideways"})
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and "[bench]" not in r.stderr
    # devices lists what is here first, then says what is wrong (as for HOSTARRAY_LINK)
    said = " ".join((r.stdout if command == "devices" else r.stderr).split())  # (wrapped)
    assert f"{variable}='sideways'" in said and words in said, r.stdout + r.stderr


def test_bench_refuses_a_plot_path_it_cannot_write_before_measuring(tmp_path: Path) -> None:
    r = run_cli("bench", "--max-size", "4KiB", "--plot", str(tmp_path / "no" / "such" / "b.png"))
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and "[bench]" not in r.stderr
    assert "--plot" in r.stderr and str(tmp_path / "no" / "such") in r.stderr


# -- a pyopencl that does not import (issue 24) -------------------------------------------------
# A pyopencl built for numpy 1.x under numpy 2 fails to import with numpy's banner on stderr
# (it looks like a traceback) and "numpy.core.multiarray failed to import"; a fake package
# first on the path does the same, as a missing pyopencl does with ModuleNotFoundError.
_BROKEN = {
    "abi": ("import sys\n"
            "sys.stderr.write('A module that was compiled using NumPy 1.x cannot be run in\\n'\n"
            "                 'Traceback (most recent call last):  File \"fake\"\\n')\n"
            "raise ImportError('numpy.core.multiarray failed to import')\n",
            "ImportError: numpy.core.multiarray failed to import", "--force-reinstall"),
    "missing": ("raise ModuleNotFoundError(\"No module named 'pyopencl'\", name='pyopencl')\n",
                "pyopencl is not installed", "pip install 'pyopencl>="),
}


def _broken_pyopencl(tmp_path: Path, kind: str) -> dict[str, str]:
    """An environment whose ``import pyopencl`` fails as ``kind`` says."""
    (tmp_path / "pyopencl").mkdir()
    (tmp_path / "pyopencl" / "__init__.py").write_text(_BROKEN[kind][0])
    root = str(Path(__file__).resolve().parents[2])
    path = [str(tmp_path), root, *filter(None, [os.environ.get("PYTHONPATH")])]
    return {"PYTHONPATH": os.pathsep.join(path), "HOSTARRAY_DEVICE": ""}


@pytest.mark.parametrize("kind", sorted(_BROKEN))
@pytest.mark.parametrize("args", [["devices"], ["devices", "--json"],
                                  ["demo", "--size", "64", "--repeat", "1"],
                                  ["bench", "--max-size", "4KiB"]])
def test_a_broken_pyopencl_is_one_sentence_with_the_fix(tmp_path: Path, kind: str,
                                                        args: list[str]) -> None:
    # (hostarray devices crashed with a traceback, exit 1)
    from hostarray.backends._pyopencl import PYOPENCL_FLOOR

    _, error, fix = _BROKEN[kind]
    r = run_cli(*args, env=_broken_pyopencl(tmp_path, kind))
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stdout == ""
    assert "Traceback" not in r.stderr and "compiled using NumPy" not in r.stderr, r.stderr
    assert r.stderr.startswith(f"hostarray {args[0]}: "), r.stderr
    flat = _flat(r.stderr)  # (wrapped at 100 columns)
    assert error in flat and fix in flat and f"'pyopencl>={PYOPENCL_FLOOR}'" in flat
    assert "no working OpenCL device" not in r.stderr


@pytest.mark.device
def test_no_opencl_driver_is_said_with_the_fix(tmp_path: Path) -> None:
    # (with pyopencl but no driver, `hostarray devices` said "left out (listed by the driver,
    # but failed a probe kernel): opencl ((no platform))", bench "see 'hostarray devices'")
    env = {"OCL_ICD_VENDORS": str(tmp_path), "HOSTARRAY_DEVICE": ""}  # a folder of no .icd
    said = "no OpenCL driver is installed"
    fix = "apt-get install pocl-opencl-icd"
    r = run_cli("devices", env=env)
    assert r.returncode == 0 and said in _flat(r.stdout) and fix in _flat(r.stdout), r.stdout
    assert "left out" not in r.stdout and "((" not in r.stdout, r.stdout
    report = json.loads(run_cli("devices", "--json", env=env).stdout)
    assert said in report["no_opencl"] and report["left_out"] == [], report
    for args in (["bench", "--max-size", "4KiB"], ["demo", "--size", "64"]):
        r = run_cli(*args, env=env)
        assert r.returncode == 2 and r.stdout == "" and "Traceback" not in r.stderr, r.stderr
        assert "pocl-opencl-icd" in _flat(r.stderr), r.stderr
    r = run_cli("bench", "--max-size", "4KiB", env=env)
    assert said in _flat(r.stderr) and fix in _flat(r.stderr), r.stderr
    code = ("import hostarray as ha\n"
            "for f in (lambda: ha.device('opencl'), lambda: ha.Program('__kernel void k() {}')):\n"
            "    try:\n"
            "        f()\n"
            "    except Exception as e:\n"
            "        print(type(e).__name__, e)\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, **env})
    lines = r.stdout.splitlines()
    assert [ln.split()[0] for ln in lines] == ["InvalidDevice", "DeviceUnavailable"], r.stdout
    assert all(said in ln and fix in ln for ln in lines), r.stdout


@pytest.mark.parametrize("kind", sorted(_BROKEN))
def test_device_opencl_names_the_import_error_and_the_fix(tmp_path: Path, kind: str) -> None:
    # (ha.device("opencl") said "no working OpenCL device was found")
    code = (
        "import hostarray as ha\n"
        "from hostarray.errors import DeviceUnavailable\n"
        "assert ha.devices() == (ha.device('cpu'),)\n"
        "assert ha.asarray([1.0, 2.0]).device == ha.device('cpu')  # the host still works\n"
        "for spec in ('opencl', 'opencl:0:0', 'gpu', 'opencl:cpu:0'):\n"
        "    try:\n"
        "        ha.device(spec)\n"
        "    except DeviceUnavailable as e:\n"
        "        print(spec, '=>', e)\n"
    )
    env = _broken_pyopencl(tmp_path, kind)
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, env={**os.environ, **env})
    assert r.returncode == 0, r.stdout + r.stderr
    lines = r.stdout.splitlines()
    assert [line.split(" =>")[0] for line in lines] == ["opencl", "opencl:0:0", "gpu",
                                                          "opencl:cpu:0"], r.stdout
    _, error, fix = _BROKEN[kind]
    for line in lines:
        assert error in line and fix in line, line
        assert "no working OpenCL device" not in line
    # HOSTARRAY_DEVICE naming an OpenCL device: the same sentence, after the variable
    r = subprocess.run([sys.executable, "-c", "import hostarray as ha; ha.zeros(2)"],
                       capture_output=True, text=True, timeout=120,
                       env={**os.environ, **env, "HOSTARRAY_DEVICE": "opencl"})
    assert r.returncode == 1 and "DeviceUnavailable: HOSTARRAY_DEVICE='opencl'" in r.stderr
    assert error in r.stderr and fix in r.stderr


def test_an_old_pyopencl_is_told_to_upgrade(monkeypatch: pytest.MonkeyPatch) -> None:
    from hostarray.backends import _pyopencl

    installed = {"pyopencl": "2024.1", "numpy": "2.4.0"}
    monkeypatch.setattr(_pyopencl, "_installed", installed.get)
    said = _pyopencl.describe(ImportError("initialization failed"))
    assert "pyopencl 2024.1 is installed" in said and "built for another numpy" in said
    assert f"pip install --upgrade 'pyopencl>={_pyopencl.PYOPENCL_FLOOR}'" in said
    installed["pyopencl"] = _pyopencl.PYOPENCL_FLOOR  # not old: a broken install
    said = _pyopencl.describe(ImportError("libOpenCL.so.1: cannot open shared object file"))
    assert said.startswith("pyopencl cannot be imported (ImportError: libOpenCL.so.1")
    assert "pip install --force-reinstall" in said and "upgrade" not in said


# -- at most 100 columns (issue 24): names shortened with "...", --wide prints them in full ---

_LONG_NAME = "pthread-skylake-avx512-Intel(R) Xeon(R) Platinum 8480+ " * 3 + "(the whole name)"


@pytest.mark.device
def test_devices_fits_100_columns_and_wide_shows_the_full_name(cl_device: ha.Device) -> None:
    # (the table was 138 columns: the driver's full name as the last column)
    r = run_cli("devices")
    assert r.returncode == 0, r.stderr
    assert not _too_wide(r.stdout), _too_wide(r.stdout)
    assert r.stdout.splitlines()[0].split()[-1] == "default"  # the name is under each row
    wide = run_cli("devices", "--wide")
    assert wide.returncode == 0, wide.stderr
    lines = wide.stdout.splitlines()
    assert lines[0].split()[-1] == "name"
    row = next(ln for ln in lines if ln.startswith(f"{cl_device} "))
    assert row.endswith(cl_device.name)


@pytest.mark.device
def test_device_table_shortens_a_long_name(cl_device: ha.Device,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(cl_device, "name", _LONG_NAME)
    report = cli.device_report()
    lines = cli.device_table(report)
    assert max(map(len, lines)) <= WIDTH, lines
    i = next(i for i, ln in enumerate(lines) if ln.startswith(f"{cl_device} "))
    under = lines[i + 1].strip()
    assert under.startswith("name: ") and under.endswith("...")
    _assert_named(under.removeprefix("name: "), _LONG_NAME)
    assert lines[i + 2].strip().startswith("also: ")  # the other names stay
    wide = cli.device_table(report, wide=True)
    assert any(ln.startswith(f"{cl_device} ") and ln.endswith(_LONG_NAME) for ln in wide)
    assert not any("..." in ln for ln in wide)


@pytest.mark.device
def test_demo_fits_100_columns_and_wide_shows_the_full_name(cl_device: ha.Device,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    # (the pipeline line was 126 columns)
    r = run_cli("demo", "--device", str(cl_device), "--size", "4096", "--repeat", "1")
    assert r.returncode == 0, r.stdout + r.stderr
    assert not _too_wide(r.stdout), _too_wide(r.stdout)
    assert "-> kernel clip_above -> numpy" in r.stdout
    wide = run_cli("demo", "--device", str(cl_device), "--size", "4096", "--repeat", "1",
                   "--wide")
    assert wide.returncode == 0, wide.stdout + wide.stderr
    first, pipeline = wide.stdout.splitlines()[:2]
    assert f"({cl_device.name})" in first and pipeline.endswith("-> kernel clip_above -> numpy")
    # a name longer than a line: shortened, unless --wide
    import io

    from hostarray.demo import run_demo

    monkeypatch.setattr(cl_device, "name", _LONG_NAME)
    for wide_ in (False, True):
        out = io.StringIO()
        assert run_demo(str(cl_device), size=4096, repeat=1, out=out, wide=wide_) == 0
        first = out.getvalue().splitlines()[0]
        if wide_:
            assert f"({_LONG_NAME})" in first
        else:
            assert not _too_wide(out.getvalue()), _too_wide(out.getvalue())
            assert "...)" in first and f"host link: {cl_device.link}" in first


@pytest.mark.device
def test_bench_output_fits_100_columns(cl_device: ha.Device, tmp_path: Path) -> None:
    # the tables (stdout) and the progress (stderr), a step each with the count
    r = run_cli("bench", "--device", str(cl_device), "--max-size", "16KiB", "--repeat", "1")
    assert r.returncode == 0, r.stderr[-3000:]
    assert not _too_wide(r.stdout), _too_wide(r.stdout)
    assert not _too_wide(r.stderr), _too_wide(r.stderr)
    assert re.search(r"^\[bench\] step 1/\d+: checks$", r.stderr, re.MULTILINE), r.stderr


# -- hostarray bench: options checked before measuring ------------------------------------------

def _broken_matplotlib(tmp_path: Path) -> dict[str, str]:
    """An environment whose ``import matplotlib`` fails, as where it is not installed."""
    (tmp_path / "matplotlib").mkdir()
    (tmp_path / "matplotlib" / "__init__.py").write_text(
        "raise ModuleNotFoundError(\"No module named 'matplotlib'\", name='matplotlib')\n")
    path = [str(tmp_path), str(Path(__file__).resolve().parents[2]),
            *filter(None, [os.environ.get("PYTHONPATH")])]
    return {"PYTHONPATH": os.pathsep.join(path)}


def test_bench_plot_without_matplotlib_is_refused_before_measuring(tmp_path: Path) -> None:
    # (it measured for minutes, said "--plot needs matplotlib" and exited 0 with no file)
    png = tmp_path / "b.png"
    r = run_cli("bench", "--max-size", "4KiB", "--plot", str(png), env=_broken_matplotlib(tmp_path))
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and "[bench] " not in r.stderr and r.stdout == ""
    assert r.stderr.startswith("hostarray bench: --plot needs matplotlib")
    assert "pip install 'hostarray[bench]'" in r.stderr
    assert not png.exists()


def _imports(module: str) -> bool:
    """Whether ``import module`` works here (as the CLI's own check asks it)."""
    try:
        importlib.import_module(module)
    except ImportError:
        return False
    return True


@pytest.mark.parametrize(("args", "words"), [
    (["--json", "--csv"], "can't both go to stdout"),
    (["--csv", "{tmp}/no/such/b.csv"], "--csv {tmp}/no/such/b.csv: there is no folder"),
    (["--json", "{tmp}/no/b.json"], "--json {tmp}/no/b.json: there is no folder"),
    (["--csv", "{tmp}"], "that is a folder"),
    (["--json", "{tmp}/b.json", "--csv", "{tmp}/b.json"],
     "--json and --csv name one file, {tmp}/b.json: give each its own"),
    (["--csv", "{tmp}/b.png", "--plot", "{tmp}/b.png"], "--csv and --plot name one file"),
    (["--json", ""], "--json '': give a file name (or - for stdout)"),
    (["--csv", "/proc/b.csv"], "--csv /proc/b.csv: can't be written"),
    (["--plot", "{tmp}/b.txt"], "--plot {tmp}/b.txt: matplotlib writes no .txt"),
    (["--plot", "{tmp}/b"], "--plot {tmp}/b: matplotlib writes no file without a suffix"),
])
def test_bench_refuses_outputs_it_cannot_write_before_measuring(tmp_path: Path, args: list[str],
                                                                words: str) -> None:
    args = [a.format(tmp=tmp_path) for a in args]
    if "matplotlib writes" in words and not _imports("matplotlib"):
        # Which suffixes matplotlib writes is matplotlib's to say: where it is not installed (CI's
        # floors run), the refusal that comes first is the missing matplotlib.
        words = "--plot needs matplotlib"
    r = run_cli("bench", "--max-size", "4KiB", *args)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and "[bench] " not in r.stderr and r.stdout == ""
    assert words.format(tmp=tmp_path) in _flat(r.stderr), r.stderr


def test_checking_an_output_path_leaves_the_files_and_links_as_they_were(tmp_path: Path) -> None:
    # (the write check opened a dangling symlink's target, then removed the link)
    from hostarray.bench import check_outputs

    (tmp_path / "link.csv").symlink_to(tmp_path / "target.csv")
    (tmp_path / "kept.json").write_text("the user's")
    assert check_outputs(json_path=str(tmp_path / "kept.json"), csv_path=str(tmp_path / "link.csv"),
                         plot_path=None) is None
    assert (tmp_path / "link.csv").is_symlink()
    assert (tmp_path / "kept.json").read_text() == "the user's"
    assert check_outputs(csv_path=str(tmp_path / "new.csv")) is None
    assert not (tmp_path / "new.csv").exists()  # a file the check made is removed


# -- ha.show_config() and hostarray config (issue 24) --------------------------------------------

_SECTIONS = ["versions", "OpenCL platforms", "devices", "settings", "in force"]


def _package_settings() -> set[str]:
    """Every HOSTARRAY_* name the package's code names (the list show_config reports)."""
    root = Path(ha.__file__).parent
    names: set[str] = set()
    for path in root.rglob("*.py"):
        if path.name != "_config.py":
            names |= set(re.findall(r"HOSTARRAY_[A-Z0-9_]*[A-Z0-9]", path.read_text()))
    return names


def _sections(text: str) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    name = ""
    for line in text.splitlines():
        if line and not line.startswith(" "):
            name = line.split(" (")[0]
            out[name] = []
        elif name:
            out[name].append(line)
    return out


def test_show_config_names_every_setting_the_package_reads() -> None:
    from hostarray._config import SETTINGS

    missing = _package_settings() - set(SETTINGS)
    assert not missing, f"add {sorted(missing)} to hostarray._config.SETTINGS"
    assert {"HOSTARRAY_DEVICE", "HOSTARRAY_LINK", "HOSTARRAY_TRANSFER_GUARD",
            "HOSTARRAY_DEVICE_COMPUTE_MIN_BYTES", "HOSTARRAY_BENCH_HOST_MEM"} <= set(SETTINGS)


@pytest.mark.device
@pytest.mark.link_fixed
def test_config_has_each_section_and_fits_100_columns(cl_device: ha.Device) -> None:
    env: dict[str, str | None] = {"HOSTARRAY_LINK": "copied",
                                  "HOSTARRAY_DEVICE_COMPUTE_MIN_BYTES": "4096",
                                  "HOSTARRAY_TRANSFER_GUARD": None, "HOSTARRAY_TYPO": "1"}
    r = run_cli("config", env=env)
    assert r.returncode == 0, r.stderr
    assert not _too_wide(r.stdout), _too_wide(r.stdout)
    sections = _sections(r.stdout)
    assert list(sections)[1:] == _SECTIONS, list(sections)
    versions = "\n".join(sections["versions"])
    for name in ("hostarray", "Python", "platform", "numpy", "pyopencl", "array-api-compat",
                 "[bench] extra", "matplotlib"):
        assert f"  {name} " in versions, name
    assert importlib.metadata.version("numpy") in versions
    assert "Portable" in "\n".join(sections["OpenCL platforms"]) or \
        "0  " in "\n".join(sections["OpenCL platforms"])
    devices = sections["devices"]
    assert devices[0].split() == ["device", "type", "link", "alignment", "host", "align", "fp64",
                                  "max", "alloc", "default"]
    row = next(ln for ln in devices if ln.startswith(f"  {cl_device} ")).split()
    assert row[2] == "copied" and row[3:5] == [str(cl_device.alignment), "B"]
    assert row[7] in ("yes", "no")
    assert any("left out" in ln for ln in devices)
    settings = "\n".join(sections["settings"])
    for name in _package_settings():
        assert f"  {name} " in settings, name
    assert re.search(r"HOSTARRAY_LINK +'copied'", settings)
    assert re.search(r"HOSTARRAY_TRANSFER_GUARD +unset \(allow\)", settings)
    assert "not read by hostarray (a typo?): HOSTARRAY_TYPO='1'" in settings
    in_force = "\n".join(sections["in force"])
    for what in ("default device", "host link", "transfer guard", "device-compute threshold",
                 "pool"):
        assert f"  {what} " in in_force, what
    assert "4096 B (4 KiB)" in in_force and "held of a" in in_force and "limit" in in_force
    assert "copied, forced by HOSTARRAY_LINK" in in_force


@pytest.mark.device
def test_config_json_is_the_same_report(cl_device: ha.Device) -> None:
    r = run_cli("config", "--json", env={"HOSTARRAY_TRANSFER_GUARD": "sideways"})
    assert r.returncode == 0, r.stderr  # a report: the refused value is in it, said
    report = json.loads(r.stdout)
    assert set(report) >= {"versions", "pyopencl_error", "platforms", "devices", "left_out",
                           "settings", "in_force"}
    assert report["pyopencl_error"] is None and report["platforms"]
    assert {s["name"] for s in report["settings"]} >= _package_settings()
    guard = next(s for s in report["settings"] if s["name"] == "HOSTARRAY_TRANSFER_GUARD")
    assert guard["value"] == "sideways" and "use one of 'allow'" in guard["error"]
    row = next(d for d in report["devices"] if d["device"] == str(cl_device))
    assert row["fp64"] == ha._info.supports_float64(cl_device)
    assert row["max_alloc"] > 0 and row["link"] in ("shared", "mapped", "copied")
    assert set(report["in_force"]["pool"]) == {"bytes", "limit"}
    wide = run_cli("config", "--wide")
    assert wide.returncode == 0 and "name: " + cl_device.name in wide.stdout


@pytest.mark.parametrize("kind", sorted(_BROKEN))
def test_config_works_with_a_broken_pyopencl(tmp_path: Path, kind: str) -> None:
    _, error, fix = _BROKEN[kind]
    env = _broken_pyopencl(tmp_path, kind)
    r = run_cli("config", env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and "compiled using NumPy" not in r.stderr, r.stderr
    assert not _too_wide(r.stdout), _too_wide(r.stdout)
    sections = _sections(r.stdout)
    assert list(sections)[1:] == _SECTIONS, list(sections)
    text = " ".join(r.stdout.split())  # (the sentence may be wrapped)
    assert error in text and fix in text
    assert any(ln.startswith("  cpu ") for ln in sections["devices"])
    settings = "\n".join(sections["settings"])
    assert all(f"  {name} " in settings for name in _package_settings())
    assert "pool" in "\n".join(sections["in force"])
    # and ha.show_config(), in a program
    code = "import hostarray as ha; ha.show_config(); print(ha.show_config('dicts')['devices'])"
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120,
                       env={**os.environ, **env})
    assert p.returncode == 0, p.stderr
    assert "does not import" in p.stdout and "'device': 'cpu'" in p.stdout


def test_show_config_says_what_is_in_force_in_this_process() -> None:
    import io

    old = ha.set_device_compute_threshold(0)
    try:
        with ha.transfer_guard("log"):
            out = io.StringIO()
            assert ha.show_config(file=out) is None
            report = ha.show_config("dicts")
    finally:
        ha.set_device_compute_threshold(old)
    text = out.getvalue()
    assert "transfer guard            log (a transfer_guard block)" in text
    assert "device-compute threshold  0 B" in text
    assert report is not None and report["in_force"]["transfer_guard"] == "log"
    assert report["in_force"]["device_compute_threshold"] == 0
    with pytest.raises(ValueError, match="use 'stdout' or 'dicts'"):
        ha.show_config("yaml")


@pytest.mark.device
@pytest.mark.parametrize("command", ["demo", "bench"])
def test_a_wrong_hostarray_device_is_named_by_every_command(command: str) -> None:
    # (found by a review: demo and bench said "no backend for framework 'bogus'" alone)
    r = run_cli(command, *(["--max-size", "4KiB"] if command == "bench" else []),
                env={"HOSTARRAY_DEVICE": "bogus"})
    assert r.returncode == 2, r.stdout + r.stderr
    said = _flat(r.stderr)
    assert said.startswith(f"hostarray {command}: HOSTARRAY_DEVICE='bogus': no backend"), said
    assert "Traceback" not in said and "[bench] " not in said


@pytest.mark.device
@pytest.mark.parametrize("command", ["demo", "bench"])
def test_the_host_chosen_by_hostarray_device_is_named_as_the_variable(command: str) -> None:
    # the host through HOSTARRAY_DEVICE=cpu: the refusal says the variable chose it
    r = run_cli(command, *(["--max-size", "4KiB"] if command == "bench" else []),
                env={"HOSTARRAY_DEVICE": "cpu"})
    assert r.returncode == 2, r.stdout + r.stderr
    said = _flat(r.stderr)
    assert said.startswith(f"hostarray {command}: HOSTARRAY_DEVICE='cpu': cpu is the host"), said
    given = run_cli(command, "--device", "cpu",
                    *(["--max-size", "4KiB"] if command == "bench" else []))
    assert _flat(given.stderr).startswith(f"hostarray {command}: cpu is the host"), given.stderr
