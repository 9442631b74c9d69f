"""The disk cache of built programs (``hostarray.backends._binaries``, docs/kernels.md):
a later process loads what an earlier one built and computes the same values; a damaged,
stale or unsuitable entry is never used; what the key can't see is not cached."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pyopencl as cl
import pytest

import hostarray as ha
from hostarray.backends import _binaries
from hostarray.backends.opencl import build_program
from hostarray.errors import BuildFailed

pytestmark = pytest.mark.device

ROOT = Path(__file__).resolve().parents[2]

SCRIPT = r"""
import json, numpy as np, hostarray as ha
dev = ha.device("opencl")
ha.set_device_compute_threshold(0)
x = ha.asarray(np.arange(1, 65, dtype=np.float32), device=dev)
prg = ha.Program("__kernel void inc(__global float *x, const float a) "
                 "{ x[get_global_id(0)] += a; }", device=dev)
prg.inc(x.shape, x, np.float32(0.5))            # device-newest: the namespace runs kernels
y = ha.sqrt(x * 3 + 1)
s = float(ha.sum(y))
yh = np.asarray(y).tolist()
st = ha.stats()
print(json.dumps({"y": yh, "s": s, "args": prg.inc.args,
                  "compiled": st.kernels_compiled, "loaded": st.kernels_loaded}))
"""


def _run(cache: Path | str, **more: str) -> dict[str, Any]:
    path = os.pathsep.join(p for p in (str(ROOT), os.environ.get("PYTHONPATH", "")) if p)
    env = dict(os.environ, HOSTARRAY_LINK="copied", HOSTARRAY_PROGRAM_CACHE=str(cache),
               PYTHONPATH=path, **more)
    r = subprocess.run([sys.executable, "-c", SCRIPT], env=env, capture_output=True,
                       text=True, timeout=300, cwd=ROOT)
    assert r.returncode == 0, r.stderr[-2000:]
    return json.loads(r.stdout.strip().splitlines()[-1])


def test_a_later_process_loads_what_earlier_ones_built(tmp_path: Path) -> None:
    first = _run(tmp_path)
    marks = sorted(p.name for p in tmp_path.iterdir())
    # built once: only marks (asking the driver for a binary costs more than it saves then)
    assert marks and all(f.endswith(".seen") for f in marks), marks
    # the generated kernels (and the user's program) were compiled, none loaded
    assert first["compiled"] >= 2 and first["loaded"] == 0, first
    second = _run(tmp_path)  # built again: now the binaries are written
    assert second["loaded"] == 0 and second["compiled"] == first["compiled"], second
    files = sorted(p.name for p in tmp_path.iterdir())
    assert files == sorted(m.replace(".seen", ".bin") for m in marks), files
    third = _run(tmp_path)
    assert third["loaded"] == third["compiled"] == first["compiled"], third
    ref = np.sqrt((np.arange(1, 65, dtype=np.float32) + np.float32(0.5)) * 3 + 1)
    for got in (first, second, third):
        np.testing.assert_array_equal(np.asarray(got["y"], dtype=np.float32), ref)
        assert got["s"] == pytest.approx(float(ref.sum(dtype=np.float64)), rel=1e-6)
    # a program loaded from its binary still knows its arguments (typed launches, checks)
    assert third["args"] == first["args"]
    assert sorted(p.name for p in tmp_path.iterdir()) == files  # nothing new written


def test_off_writes_nothing(tmp_path: Path) -> None:
    for _ in range(2):
        out = _run("off", XDG_CACHE_HOME=str(tmp_path))
        assert out["loaded"] == 0 and out["compiled"] >= 2
    assert not (tmp_path / "hostarray" / "programs").exists()


# -- one build at a time, each in a context of its own (a process's program cache is per
# -- device runtime: a fresh context asks the disk cache as a new process does) ---------

SRC = "__kernel void twice(__global float *x) { x[get_global_id(0)] *= 2; }"


@pytest.fixture()
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    monkeypatch.setenv("HOSTARRAY_PROGRAM_CACHE", str(tmp_path))
    return tmp_path


def _build(dev: ha.Device, source: str = SRC, options: tuple[str, ...] = ()
           ) -> tuple[cl.Program, bool, cl.Context]:
    ctx = cl.Context([dev._cl_device])
    loaded: list[bool] = []
    prg = build_program(ctx, source, ["-cl-kernel-arg-info", *options], str(dev), None, loaded)
    return prg, bool(loaded), ctx


def _stored(dev: ha.Device, source: str = SRC, options: tuple[str, ...] = ()) -> Path:
    """Build ``source`` twice from source (the second build writes the binary): its entry."""
    for _ in range(2):
        _, loaded, _ = _build(dev, source, options)
        assert not loaded
    (path,) = [p for p in _entries(Path(os.environ["HOSTARRAY_PROGRAM_CACHE"]))
               if not p.with_suffix(".seen").exists()]
    return path


def _twice(prg: cl.Program, ctx: cl.Context, name: str = "twice") -> np.ndarray:
    q = cl.CommandQueue(ctx)
    a = np.arange(16, dtype=np.float32)
    buf = cl.Buffer(ctx, cl.mem_flags.READ_WRITE | cl.mem_flags.COPY_HOST_PTR, hostbuf=a)
    getattr(prg, name)(q, a.shape, None, buf)
    cl.enqueue_copy(q, a, buf)
    q.finish()
    return a


def _entries(folder: Path) -> list[Path]:
    return sorted(folder.glob("*.bin"))


def test_a_hit_is_the_same_program(cl_device: ha.Device, cache: Path) -> None:
    prg, loaded, ctx = _build(cl_device)
    assert not loaded and _entries(cache) == [] and len(list(cache.glob("*.seen"))) == 1
    _, loaded, _ = _build(cl_device)
    assert not loaded and len(_entries(cache)) == 1 and list(cache.glob("*.seen")) == []
    prg2, loaded2, ctx2 = _build(cl_device)
    assert loaded2
    np.testing.assert_array_equal(_twice(prg2, ctx2), np.arange(16, dtype=np.float32) * 2)


@pytest.mark.parametrize("damage", ["cut short", "one byte changed", "not ours", "empty"])
def test_a_damaged_entry_is_removed_and_the_program_built_from_source(
        cl_device: ha.Device, cache: Path, damage: str) -> None:
    path = _stored(cl_device)
    data = path.read_bytes()
    if damage == "cut short":
        path.write_bytes(data[: len(data) // 2])
    elif damage == "one byte changed":
        i = len(data) - 100
        path.write_bytes(data[:i] + bytes([data[i] ^ 0xFF]) + data[i + 1:])
    elif damage == "not ours":
        path.write_bytes(b"\x7fELF" + data[4:])
    else:
        path.write_bytes(b"")
    prg, loaded, ctx = _build(cl_device)
    assert not loaded and not path.exists()  # removed, built from source
    np.testing.assert_array_equal(_twice(prg, ctx), np.arange(16, dtype=np.float32) * 2)
    _build(cl_device)  # built again: written anew
    assert path.read_bytes() == data and _build(cl_device)[1]


def test_a_binary_the_driver_refuses_is_removed(cl_device: ha.Device, cache: Path) -> None:
    path = _stored(cl_device)
    # a well-formed entry (length and digest right) around bytes no driver takes
    junk = b"this is no program binary" * 40
    import hashlib
    path.write_bytes(_binaries._MAGIC + _binaries._HEADER.pack(len(junk),
                                                               hashlib.sha256(junk).digest())
                     + junk)
    prg, loaded, ctx = _build(cl_device)
    assert not loaded and not path.exists()
    np.testing.assert_array_equal(_twice(prg, ctx), np.arange(16, dtype=np.float32) * 2)
    _build(cl_device)
    assert _build(cl_device)[1]  # the entry was replaced by a good one


def test_options_and_source_are_in_the_key(cl_device: ha.Device, cache: Path) -> None:
    src = "__kernel void twice(__global float *x) { x[get_global_id(0)] *= F; }"
    _stored(cl_device, src, ("-DF=2",))
    p2, loaded2, c2 = _build(cl_device, src, ("-DF=2",))
    p3, loaded, c3 = _build(cl_device, src, ("-DF=3",))
    assert loaded2 and not loaded and len(_entries(cache)) == 1
    _build(cl_device, src, ("-DF=3",))
    assert len(_entries(cache)) == 2
    a = np.arange(16, dtype=np.float32)
    np.testing.assert_array_equal(_twice(p2, c2), a * 2)
    np.testing.assert_array_equal(_twice(p3, c3), a * 3)
    p3b, loaded, c3b = _build(cl_device, src, ("-DF=3",))
    assert loaded
    np.testing.assert_array_equal(_twice(p3b, c3b), a * 3)
    for _ in range(2):
        _, loaded, _ = _build(cl_device, src + " ", ("-DF=3",))
        assert not loaded  # another text: another entry


# every way to have the preprocessor read a file that was found to slip past a check for
# the text "#include" (an adversarial review)
_INCLUDES = ['#include "factor.h"\n', '# include "factor.h"\n', '#\tinclude "factor.h"\n',
             '#/**/include "factor.h"\n', '#\\\ninclude "factor.h"\n', '%:include "factor.h"\n',
             '#if 1\n#  include "factor.h"\n#endif\n',
             '#if __has_include("factor.h")\n#define F 5\n#else\n#define F 2\n#endif\n']


@pytest.mark.parametrize("spelling", _INCLUDES)
def test_a_source_reading_a_file_is_not_cached(cl_device: ha.Device, cache: Path,
                                               tmp_path_factory: pytest.TempPathFactory,
                                               spelling: str) -> None:
    inc = tmp_path_factory.mktemp("inc")
    header = inc / "factor.h"
    header.write_text("#define F 2\n")
    src = spelling + SRC.replace("*= 2", "*= F")
    for _ in range(2):  # twice: a program built again would be written
        prg, _, ctx = _build(cl_device, src, (f"-I{inc}",))
    a = np.arange(16, dtype=np.float32)
    if "__has_include" in spelling:
        np.testing.assert_array_equal(_twice(prg, ctx), a * 5)
        header.unlink()  # now the other branch
        expect = 2
    else:
        np.testing.assert_array_equal(_twice(prg, ctx), a * 2)
        header.write_text("#define F 5\n")  # the header changed, the text did not
        expect = 5
    assert list(cache.iterdir()) == []
    prg, loaded, ctx = _build(cl_device, src, (f"-I{inc}",))
    assert not loaded
    if "__has_include" not in spelling or "NVIDIA" not in cl_device._cl_device.platform.name:
        # (NVIDIA's own compiler cache answers the old program for __has_include after the
        # header went: its key does not see it either; found on the H200)
        np.testing.assert_array_equal(_twice(prg, ctx), a * expect)


def test_a_logged_build_is_not_cached(cl_device: ha.Device, cache: Path) -> None:
    # a build with a log (a #warning) stays uncached: a user's Program keeps its warnings
    warned = "#warning look here\n" + SRC
    for _ in range(3):
        prg, loaded, ctx = _build(cl_device, warned)
        assert not loaded
        log = prg.get_build_info(ctx.devices[0], cl.program_build_info.LOG)
        if not log.strip():
            # a driver whose own cache answered without the log (NVIDIA's does): nothing
            # left to lose, the binary may be written from here on
            return
    assert _entries(cache) == []  # every build logged: a mark, no binary
    w1 = ha.Program(warned, device=cl_device)
    assert any("look here" in w for w in w1.warnings), w1.warnings


def test_a_failed_build_leaves_nothing(cl_device: ha.Device, cache: Path) -> None:
    with pytest.raises(BuildFailed):
        _build(cl_device, "__kernel void broken(__global float *x) { x[0] = ; }")
    assert list(cache.iterdir()) == []


def test_an_unwritable_folder_is_no_error(cl_device: ha.Device, tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("not a folder")
    monkeypatch.setenv("HOSTARRAY_PROGRAM_CACHE", str(blocker / "programs"))
    prg, loaded, ctx = _build(cl_device)
    assert not loaded
    np.testing.assert_array_equal(_twice(prg, ctx), np.arange(16, dtype=np.float32) * 2)
    assert blocker.read_text() == "not a folder"


def test_a_binary_the_driver_died_loading_is_removed(cl_device: ha.Device, cache: Path
                                                     ) -> None:
    path = _stored(cl_device)
    # what a process that crashed in the driver's load leaves: the marker with its pid
    dead = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    marker = Path(str(path) + ".loading")
    marker.write_text(dead.stdout.strip())
    prg, loaded, ctx = _build(cl_device)
    assert not loaded and not marker.exists() and not path.exists()  # built from source
    np.testing.assert_array_equal(_twice(prg, ctx), np.arange(16, dtype=np.float32) * 2)
    _build(cl_device)  # written anew
    assert _build(cl_device)[1] and not marker.exists()  # the new entry loads; no marker left
    # a marker of a live process (another one loading the entry now) is no crash
    marker.write_text(str(os.getppid()))
    assert _build(cl_device)[1]
    # nor is one of this process: another thread loading it (two devices of one model)
    marker.write_text(str(os.getpid()))
    assert _build(cl_device)[1] and path.exists()


def test_threads_loading_one_entry_keep_it(cl_device: ha.Device, cache: Path) -> None:
    # two like devices share an entry: their threads load it at once, in contexts of their own
    from tests._threads import run_in_threads

    path = _stored(cl_device)
    results: list[tuple[bool, np.ndarray]] = []

    def load_and_run() -> None:
        for _ in range(10):
            prg, loaded, ctx = _build(cl_device)
            results.append((loaded, _twice(prg, ctx)))

    run_in_threads([load_and_run] * 4, timeout=120, switch=1e-5)
    a = np.arange(16, dtype=np.float32) * 2
    assert len(results) == 40 and all(loaded for loaded, _ in results)
    for _, got in results:
        np.testing.assert_array_equal(got, a)
    assert path.exists() and not Path(str(path) + ".loading").exists()


def test_a_process_that_stores_trims_an_oversized_folder(tmp_path: Path) -> None:
    # a few processes that each write one entry: the first store of each one trims
    big = tmp_path / ("0" * 64 + ".bin")
    with open(big, "wb") as f:
        f.truncate(_binaries.MAX_BYTES + 1)  # sparse: takes no disk
    os.utime(big, (1000, 1000))
    leftover = tmp_path / ".tmp-dead"
    leftover.write_bytes(b"x")
    os.utime(leftover, (1000, 1000))
    _run(tmp_path)  # marks only
    assert big.exists()
    out = _run(tmp_path)  # stores: the first one trims
    assert out["compiled"] >= 2
    assert not big.exists() and not leftover.exists()
    assert _entries(tmp_path)  # this process's entries stay


def test_off_and_its_spellings(tmp_path: Path) -> None:
    from hostarray import _settings
    for off in ("off", " OFF ", "0", "false", "no", "none"):
        assert _settings.program_cache({"HOSTARRAY_PROGRAM_CACHE": off}) is None
    home = {"XDG_CACHE_HOME": "relative/cache"}  # the XDG spec: a relative value is ignored
    assert _settings.program_cache(home) == os.path.join(os.path.expanduser("~"), ".cache",
                                                         "hostarray", "programs")
    assert _settings.program_cache({"HOSTARRAY_PROGRAM_CACHE": "~/p"}) == \
        os.path.expanduser("~/p")


def test_trim_removes_the_least_recently_used_first(tmp_path: Path) -> None:
    sizes = {f"{i:02d}.bin": 100 for i in range(10)}
    for k, (name, size) in enumerate(sizes.items()):
        p = tmp_path / name
        p.write_bytes(b"x" * size)
        os.utime(p, (1000 + k, 1000 + k))  # 00 is the oldest
    (tmp_path / "keep.txt").write_text("not an entry")
    _binaries.trim(str(tmp_path), limit=2000)
    assert len(_entries(tmp_path)) == 10  # under the limit: nothing goes
    _binaries.trim(str(tmp_path), limit=800)
    left = [p.name for p in _entries(tmp_path)]
    assert left == [f"{i:02d}.bin" for i in range(4, 10)]  # down to 3/4 of the limit
    assert (tmp_path / "keep.txt").exists()
