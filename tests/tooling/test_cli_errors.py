"""What the ``hostarray`` command says when it refuses (issue 24's review): every error line
on stderr, prefixed with the command, at most 100 columns, a command in backticks whole; the
host named as the host where a command needs an OpenCL device; a refused setting shown as
refused in ``config``; the bench's time estimate from timed steps only."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Mapping

import pytest

import hostarray as ha
from hostarray import bench

_ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def run_cli(*args: str, env: Mapping[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """``python -m hostarray ARGS`` from this checkout, with ``env`` over the environment."""
    # (the checkout first, then whatever PYTHONPATH held: pyopencl may be installed there)
    path = os.pathsep.join(filter(None, [_ROOT, os.environ.get("PYTHONPATH")]))
    merged = {**os.environ, "PYTHONPATH": path, "COLUMNS": "200", **(env or {})}
    return subprocess.run([sys.executable, "-m", "hostarray", *args], capture_output=True,
                          text=True, timeout=300, env=merged, cwd=_ROOT)


def _fits(text: str) -> None:
    for line in text.splitlines():
        assert len(line) <= 100, f"{len(line)} columns: {line!r}"


@pytest.mark.device
@pytest.mark.parametrize("args, says", [
    # (gpu:99, not gpu: a machine with a GPU runs these tests too)
    (["demo", "--device", "gpu:99"], "hostarray demo: 'gpu:99' is not a device here: no OpenCL "
                                     "GPU"),
    (["demo", "--device", "cuda:0"], "hostarray demo: no backend for framework 'cuda'"),
    (["nosuch"], "hostarray: error: argument COMMAND: invalid choice: 'nosuch'"),
    (["bench", "--max-size", "4k"], "hostarray bench: error: argument --max-size: ambiguous"),
    (["demo", "--device", "cpu"], "hostarray demo: cpu is the host; the demo runs kernels"),
    (["bench", "--device", "cpu"], "hostarray bench: cpu is the host; the bench measures an "
                                   "OpenCL device: pass --device opencl:"),
], ids=lambda v: " ".join(v) if isinstance(v, list) else "")
def test_every_cli_error_is_on_stderr_prefixed_and_fits(args: list[str], says: str) -> None:
    # (demo --device gpu was 267 columns on a machine without a GPU; demo --device cpu went to
    # stdout without a prefix; bench --device cpu said "no working OpenCL device" beside a
    # working one;
    # COLUMNS=200 shows argparse's own errors are wrapped by hostarray, not the terminal)
    r = run_cli(*args)
    assert r.returncode == 2, r.stdout + r.stderr
    assert r.stdout == "", r.stdout
    flat = " ".join(r.stderr.split())
    assert says in flat, r.stderr
    assert "Traceback" not in r.stderr and "no working OpenCL device" not in r.stderr
    _fits(r.stderr)


def test_a_command_in_backticks_is_never_split() -> None:
    from hostarray._text import error_lines, wrap

    text = ("hostarray demo needs an OpenCL device and found none: install one (e.g. "
            "`apt-get install pocl-opencl-icd`); `hostarray devices` lists what was found")
    for width in range(40, 101, 7):
        lines = wrap(text, "  ", width)
        assert all(ln.count("`") % 2 == 0 for ln in lines), lines
        assert " ".join(ln.strip() for ln in lines) == text
    assert error_lines("demo", "x " * 80).startswith("hostarray demo: x x")
    _fits(error_lines("demo", "x " * 80))


def test_config_shows_a_refused_link_as_refused() -> None:
    # (it said "host link  weird" in force)
    r = run_cli("config", env={"HOSTARRAY_LINK": "weird"})
    assert r.returncode == 0, r.stderr
    in_force = r.stdout.split("\nin force\n", 1)[1]
    link = " ".join(in_force.split("host link", 1)[1].split("transfer guard")[0].split())
    assert link.startswith("none: refused: HOSTARRAY_LINK='weird': use one of auto"), link
    _fits(r.stdout)


def test_show_config_in_process_refused_link(monkeypatch: pytest.MonkeyPatch) -> None:
    from hostarray._config import config_report

    monkeypatch.setenv("HOSTARRAY_LINK", "sideways")
    f = config_report()["in_force"]
    assert "HOSTARRAY_LINK='sideways'" in f["link_error"]
    monkeypatch.setenv("HOSTARRAY_LINK", "copied")
    f = config_report()["in_force"]
    assert f["link"] == "copied" and "link_error" not in f


def test_the_bench_estimates_from_timed_steps_only(capsys: pytest.CaptureFixture[str]) -> None:
    # (step 2/7 said "about 7 min left" for a 1.8 s run: the first step builds kernels)
    steps = bench._Steps([1.0, 1.0, 1.0, 1.0])
    steps.next("checks")
    time.sleep(0.3)  # the first step: setup, slow, not a measure of the rest
    steps.next("attach 4 KiB")
    time.sleep(0.02)
    steps.next("attach 16 KiB")
    steps.next("roundtrip")
    err = capsys.readouterr().err.splitlines()
    assert err[0] == "[bench] step 1/4: checks"
    assert err[1] == "[bench] step 2/4: attach 4 KiB"  # nothing timed but the setup yet
    assert err[2].startswith("[bench] step 3/4: attach 16 KiB (about ")
    assert err[2].endswith(" s left)") and "min" not in err[2], err[2]


def test_the_host_program_error_names_what_a_program_needs() -> None:
    with pytest.raises(ha.errors.Refused, match=r"cpu is the host; a Program needs an OpenCL "
                                                 r"device, e.g. 'opencl'"):
        ha.Program("__kernel void k() {}", device="cpu")
