"""The ``hostarray`` command, run as a user runs it: in a subprocess."""

from __future__ import annotations

import argparse
import importlib.metadata
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

import hostarray as ha
import hostarray.__main__ as cli


def run_cli(*args: str, env: dict[str, str] | None = None,
            timeout: float = 300) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "hostarray", *args], capture_output=True,
                          text=True, timeout=timeout, env={**os.environ, **(env or {})})


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
    assert cl_device.name in rows[str(cl_device)]
    assert "left out:" in r.stdout or "left out (" in r.stdout


@pytest.mark.device
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
    assert "needs an OpenCL device" in r.stdout and "Traceback" not in r.stderr


@pytest.mark.device
def test_readme_devices_table_has_the_cli_columns(cl_device: ha.Device) -> None:
    # the README pastes this command's output; its header must still be the command's
    readme = (Path(__file__).resolve().parents[1] / "README.md").read_text(encoding="utf-8")
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


@pytest.mark.parametrize("command", [None, "devices", "demo", "bench"])
def test_help_is_plain_text(command: str | None) -> None:
    assert set(_commands()) == {"devices", "demo", "bench"}, "a new command: add it here"
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
        assert w in r.stderr, r.stderr


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
        assert w in r.stderr, r.stderr


@pytest.mark.parametrize("command", ["demo", "bench", "devices"])
def test_a_wrong_hostarray_link_is_one_sentence_and_exit_2(command: str) -> None:
    args = {"demo": ["--size", "64", "--repeat", "1"], "bench": ["--max-size", "4KiB"],
            "devices": []}[command]
    r = run_cli(command, *args, env={"HOSTARRAY_LINK": "sideways"})
    assert r.returncode == 2, r.stdout + r.stderr
    assert "Traceback" not in r.stderr and "[bench]" not in r.stderr
    assert "HOSTARRAY_LINK='sideways': use one of auto, shared, mapped, copied" in \
        r.stdout + r.stderr


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
    said = r.stdout if command == "devices" else r.stderr
    assert f"{variable}='sideways'" in said and words in said, r.stdout + r.stderr


def test_bench_refuses_a_plot_path_it_cannot_write_before_measuring(tmp_path: Path) -> None:
    r = run_cli("bench", "--max-size", "4KiB", "--plot", str(tmp_path / "no" / "such" / "b.png"))
    assert r.returncode == 2
    assert "Traceback" not in r.stderr and "[bench]" not in r.stderr
    assert "--plot" in r.stderr and str(tmp_path / "no" / "such") in r.stderr
