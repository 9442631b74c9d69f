"""Smoke test of ``hostarray bench``: it runs, and its JSON says what it measured.

Timings are never asserted (performance lives in benchmarks/); the
structure, the correctness flags and the transfer counters are.  So are
sizes read as written (``GB`` = 10**9, ``GiB`` = 2**30) and tables that fit
100 columns with a legend under each.
"""

from __future__ import annotations

import json
import mmap
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import hostarray as ha
from hostarray.bench import CSV_COLUMNS, WIDTH, format_csv, format_size, format_tables, parse_size

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
MiB = 1 << 20


def test_parse_size_reads_units_as_written() -> None:
    # SI units are powers of 1000, IEC units powers of 1024
    assert parse_size("1GB") == 10**9
    assert parse_size("1GiB") == 2**30
    assert parse_size("1KB") == 1000 and parse_size("1KiB") == 1024
    assert parse_size("500MB") == 500 * 10**6 and parse_size("64MiB") == 64 * MiB
    assert parse_size("2TB") == 2 * 10**12 and parse_size("2TiB") == 2 * 2**40
    assert parse_size("4096") == parse_size("4096B") == parse_size(4096) == 4096
    # documented: units are case-insensitive, a space may come before the unit
    assert parse_size("1gb") == parse_size("1Gb") == 10**9
    assert parse_size("1gib") == parse_size("1 GiB") == parse_size(" 1 GiB ") == 2**30
    # a fraction is fine where it names whole bytes
    assert parse_size("1.5KiB") == 1536 and parse_size("1.5KB") == 1500
    assert parse_size("0.5GB") == 500_000_000


@pytest.mark.parametrize(("text", "words"), [
    ("1gigs", ["unknown size unit 'gigs'", "GB", "GiB", "1000", "1024"]),
    ("1 XB", ["unknown size unit 'XB'"]),
    ("4k", ["ambiguous", "4KB (4000 bytes)", "4KiB (4096 bytes)"]),
    ("2G", ["ambiguous", "2GB (2000000000 bytes)", "2GiB (2147483648 bytes)"]),
    ("lots", ["not a size: 'lots'", "64MiB"]),
    ("", ["not a size"]),
    ("-1GB", ["not a size"]),
    ("0.5B", ["not a whole number of bytes"]),
    ("1.0001KB", ["not a whole number of bytes"]),
])
def test_parse_size_refuses_with_a_message(text: str, words: list[str]) -> None:
    with pytest.raises(ValueError) as e:
        parse_size(text)
    for w in words:
        assert w in str(e.value), str(e.value)


def test_parse_size_refuses_negative_bytes() -> None:
    with pytest.raises(ValueError, match="negative"):
        parse_size(-1)


def test_format_size_says_binary_units_and_round_trips() -> None:
    for n in (4096, 3 * MiB, 1 << 30, 4 << 30, 5 << 40, 512):
        assert parse_size(format_size(n)) == n
        assert parse_size(format_size(n).replace(" ", "")) == n
    assert format_size(3 << 30) == "3 GiB"
    assert format_size(10**9) == "953.674 MiB"  # 1 GB is not 1 GiB
    assert format_size(1000) == "1000 B"


# -- the tables: at most WIDTH columns, each followed by a legend -----------------------------

_RULE = re.compile(r"^-+(  -+)*$")
_LEGEND_ENTRY = re.compile(r"^  (\S+(?: \S+)*)  +\S")


def _tables(text: str) -> list[tuple[list[str], dict[str, str]]]:
    """``(columns, {legend name: its text})`` of every table in ``text``."""
    lines = text.splitlines()
    out = []
    for i, line in enumerate(lines):
        if not _RULE.match(line):
            continue
        columns = re.split(r" {2,}", lines[i - 1].strip())
        j = i + 1
        while j < len(lines) and lines[j] and not _LEGEND_ENTRY.match(lines[j]):
            j += 1  # the rows (a skipped row's note goes on, indented by more than 2)
        legend: dict[str, str] = {}
        name = ""
        while j < len(lines) and lines[j].startswith(" "):
            m = _LEGEND_ENTRY.match(lines[j])
            if m:
                name = m[1]
                legend[name] = lines[j][len(name) + 2:].strip()
            else:
                legend[name] += " " + lines[j].strip()
            j += 1
        out.append((columns, legend))
    return out


def _check_tables(text: str, min_tables: int) -> None:
    too_wide = [ln for ln in text.splitlines() if len(ln) > WIDTH]
    assert WIDTH == 100 and not too_wide, too_wide
    tables = _tables(text)
    assert len(tables) >= min_tables, text
    for columns, legend in tables:
        assert legend, f"no legend under the table {columns}"
        names = {n: text for name, text in legend.items() for n in name.split(", ")}
        for col in columns:
            if "/" in col and not col.endswith("GB/s"):
                # a ratio: what it divides, and which side of 1 (or 100%) means what
                assert col in names, (col, list(legend))
                assert " / " in names[col], names[col]
                assert re.search(r"[<>] 1\b.*faster|faster.*[<>] 1\b|100% hostarray is faster",
                                 names[col]), names[col]


def _fake_result() -> dict[str, Any]:
    """A :func:`collect` result with extreme values: long names, huge ratios, skipped sizes."""
    sizes = [4096 << (2 * i) for i in range(11)]  # 4 KiB ... 4 GiB
    skip = "above the device's largest allocation (35 GiB), and needs ~20 TiB of host memory, " \
           "3.5 GiB free on this machine"
    def t(i: int, f: float) -> float:
        return 1e-7 * f * 7.3**i
    attach, rt, sync, lazy = [], [], [], []
    for i, n in enumerate(sizes):
        if i >= 9:
            for rows in (attach, rt, sync, lazy):
                rows.append({"size": n, "skipped": skip})
            continue
        attach.append({"size": n, "times": {
            "ha to_device (lazy)": 2e-6, "ha of_numpy": t(i, 3), "cl.Buffer COPY_HOST_PTR":
            t(i, 9e4), "cla.to_device": t(i, 1e5), "ha of_numpy + kernel": t(i, 20),
            "cl.Buffer COPY_HOST_PTR + kernel": t(i, 2e5), "cla.to_device + kernel": t(i, 3e5)}})
        rt.append({"size": n, "times": {"ha": t(i, 5), "cl enqueue_copy": t(i, 5e3),
                                        "cla set/get": t(i, 0.5)},
                   "correct": {"ha": True, "cl enqueue_copy": True, "cla set/get": False}})
        times = {"copy pinned H->D": t(i, 4e3), "copy pinned D->H": t(i, 4e3),
                 "copy pageable H->D": t(i, 9e3), "copy pageable D->H": t(i, 9e3),
                 "publish": t(i, 2), "acquire": t(i, 2), "second acquire_device_writes": 7e-7,
                 "second read x[-1]": 3e-6}
        sync.append({"size": n, "times": times, "link": "shared",
                     "bandwidth_GBps": {k: n / v / 1e9 for k, v in times.items()
                                        if not k.startswith("second")},
                     "fraction_of_pinned": 2000.0, "second_read_bytes": 0})
        pol = {name: {"median_s": t(i, f), "bytes_moved": b * n, **extra}
               for name, f, b, extra in (
                   ("ha lazy", 10, 3, {"publishes": 2, "acquires": 5}),
                   ("ha eager", 99, 88, {"publishes": 72, "acquires": 24}),
                   ("ha lazy + attach", 11, 3, {"publishes": 2, "acquires": 5}),
                   ("cl minimal", 1e4, 3, {}))}
        lazy.append({"size": n, "link": "copied", "iterations": 20, "check_every": 5,
                     "minimum_bytes": 3 * n, "policies": pol,
                     "agree": dict.fromkeys(pol, True)})
    return {"date": "2026-12-01 00:00 UTC", "repeat": 5,
            "device": {"spec": "opencl:12:3", "name": "A Very Long Device Name " * 6,
                       "platform": "Some OpenCL Platform With A Long Name", "link": "mapped"},
            "checks": {"publish_map_flags": ["WRITE_INVALIDATE_REGION"],
                       "publish_acquired_bytes": 0, "publish_keeps_host_bytes": True,
                       "publish_ok": True},
            "attach": attach, "roundtrip": rt, "sync": sync, "laziness": lazy}


def test_tables_fit_100_columns_with_legends() -> None:
    text = format_tables(_fake_result())
    _check_tables(text, 6)  # attach x2, round trip, sync x2, laziness
    assert "skipped: above the device's largest allocation" in text
    assert "wrong: [('4 KiB', 'cla set/get')" in text


@pytest.mark.parametrize("name", ["cpu-pocl-bench.json", "h200-bench.json"])
def test_tables_of_measured_results_fit(name: str) -> None:
    path = Path(ROOT) / "benchmarks" / "results" / name  # committed measurements
    _check_tables(format_tables(json.loads(path.read_text())), 6)


@pytest.fixture(scope="module")
def bench_run(tmp_path_factory: pytest.TempPathFactory, cl_device: ha.Device
              ) -> tuple[dict, str, str]:
    png = str(tmp_path_factory.mktemp("bench") / "bench.png")
    p = subprocess.run([sys.executable, "-m", "hostarray", "bench", "--max-size", "1MiB",
                        "--json", "--device", str(cl_device), "--plot", png,
                        "--csv", png.replace(".png", ".csv")],
                       capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert p.returncode == 0, p.stderr[-3000:]
    return json.loads(p.stdout), p.stderr, png


@pytest.mark.device
def test_bench_json_structure(bench_run: tuple[dict, str, str]) -> None:
    r, err, _ = bench_run
    assert "[bench]" in err  # progress goes to stderr, the JSON alone to stdout
    assert r["max_size"] == MiB
    assert r["device"]["link"] in ("shared", "mapped", "copied")
    assert [row["size"] for row in r["attach"]] == [4096, 16384, 65536, 262144, MiB]
    for part in ("attach", "roundtrip", "sync"):
        for row in r[part]:
            assert row["times"] and all(t > 0 for t in row["times"].values()), (part, row)
    assert set(r["roundtrip"][0]["times"]) == {"ha", "cl enqueue_copy", "cla set/get"}


@pytest.mark.device
def test_bench_checks_and_counters(bench_run: tuple[dict, str, str]) -> None:
    r, _, _ = bench_run
    link = r["device"]["link"]
    c = r["checks"]
    assert c["publish_ok"] and c["publish_keeps_host_bytes"]
    assert c["publish_acquired_bytes"] == 0
    assert set(c["publish_map_flags"]) <= {"WRITE_INVALIDATE_REGION"}  # copies map nothing

    rt = r["roundtrip"][0]
    assert all(rt["correct"].values())
    runs = rt["ha_stats"]["runs"]
    assert rt["ha_stats"]["publishes"] == runs and rt["ha_stats"]["acquires"] == runs
    moved = 0 if link == "shared" else 2 * MiB * runs
    assert rt["ha_stats"]["bytes_moved"] == moved

    sy = r["sync"][0]
    assert sy["second_read_bytes"] == 0 and sy["second_read_syncs"] == 0
    assert sy["publish_bytes_per_run"] == (0 if link == "shared" else MiB)


@pytest.mark.device
def test_bench_laziness_counts(bench_run: tuple[dict, str, str]) -> None:
    r, _, _ = bench_run
    rows = r["laziness"]
    assert {row["link"] for row in rows} >= {r["device"]["link"]}
    for row in rows:
        assert all(row["agree"].values()), row["agree"]
        pol = row["policies"]
        checks = row["iterations"] // row["check_every"]
        # lazy: u and f published once; the partial sums at each check, u at the end
        assert (pol["ha lazy"]["publishes"], pol["ha lazy"]["acquires"]) == (2, checks + 1)
        assert pol["ha eager"]["publishes"] == 3 * (row["iterations"] + checks)
        if row["link"] != "shared":
            assert pol["ha lazy"]["bytes_moved"] == row["minimum_bytes"]
            assert pol["ha eager"]["bytes_moved"] > 20 * row["minimum_bytes"]
        else:
            assert pol["ha lazy"]["bytes_moved"] == 0


@pytest.mark.device
def test_bench_plot_is_a_png(bench_run: tuple[dict, str, str]) -> None:
    pytest.importorskip("matplotlib")
    _, _, png = bench_run
    with open(png, "rb") as f:
        assert f.read(8) == b"\x89PNG\r\n\x1a\n"


def r_link(run: tuple[dict, str, str]) -> str:
    return str(run[0]["device"]["link"])


@pytest.mark.device
def test_bench_progress_counts_the_steps_and_the_time_left(bench_run: tuple[dict, str, str]
                                                           ) -> None:
    # (progress was "[bench] attach 4 KiB" lines, without a count or an estimate)
    _, err, _ = bench_run
    assert all(len(line) <= WIDTH for line in err.splitlines()), err
    steps = re.findall(r"^\[bench\] step (\d+)/(\d+): (.*)$", err, re.MULTILINE)
    total = {int(n) for _, n, _ in steps}
    assert len(total) == 1 and [int(i) for i, _, _ in steps] == list(range(1, len(steps) + 1))
    assert len(steps) == total.pop()  # every step planned ran, and no other
    # checks, attach 4 KiB .. 1 MiB, round trip, sync, the solver (on a copied link too when
    # the device's own link is shared)
    # no estimate until a step past the first was timed (the first builds the kernels: its
    # time said "about 13 min left" for a run of seconds)
    assert steps[0][2] == "checks" and steps[1][2] == "attach 4 KiB"
    assert len(steps) == 1 + 5 + 1 + 1 + (2 if r_link(bench_run) == "shared" else 1)
    assert all(re.search(r" \(about \d+ (s|min) left\)$", what) for _, _, what in steps[2:])
    assert "JSON written" not in err and f"CSV written to {bench_run[2][:-4]}.csv" in err


@pytest.mark.device
def test_bench_csv_holds_the_json_numbers(bench_run: tuple[dict, str, str]) -> None:
    import csv

    r, _, png = bench_run
    with open(png[:-4] + ".csv", newline="") as f:
        rows = list(csv.DictReader(f))
    assert rows and list(rows[0]) == list(CSV_COLUMNS)
    got = {(row["part"], row["size"], row["link"], row["method"], row["quantity"]): row
           for row in rows}
    link = r["device"]["link"]
    for part in ("attach", "roundtrip", "sync"):
        for m in r[part]:
            for method, t in m["times"].items():
                row = got[(part, str(m["size"]), m.get("link", link), method, "time")]
                assert float(row["value"]) == t and row["unit"] == "s"  # every digit
    rt = r["roundtrip"][0]
    assert got[("roundtrip", str(rt["size"]), link, "ha", "bytes_moved")]["value"] == \
        str(rt["ha_stats"]["bytes_moved"])
    assert got[("roundtrip", str(rt["size"]), link, "ha", "correct")]["value"] == "True"
    for lz in r["laziness"]:
        for policy, p in lz["policies"].items():
            key = ("laziness", str(lz["size"]), lz["link"], policy)
            assert float(got[(*key, "time")]["value"]) == p["median_s"]
            assert got[(*key, "bytes_moved")]["unit"] == "B"
            assert got[(*key, "agree")]["value"] == str(lz["agree"][policy])
    assert got[("run", "", "", "", "device spec")]["value"] == r["device"]["spec"]
    assert got[("checks", "", link, "", "publish_ok")]["value"] == "True"
    assert format_csv(r) == open(png[:-4] + ".csv", newline="").read()


def test_csv_of_skipped_sizes_and_every_part() -> None:
    import csv
    import io

    rows = list(csv.DictReader(io.StringIO(format_csv(_fake_result()))))
    parts = {row["part"] for row in rows}
    assert parts == {"run", "checks", "attach", "roundtrip", "sync", "laziness"}
    skipped = [row for row in rows if row["quantity"] == "skipped"]
    assert len(skipped) == 8 and {row["size"] for row in skipped} == {str(4096 << 18),
                                                                      str(4096 << 20)}
    assert skipped[0]["value"].startswith("above the device's largest allocation")
    assert {row["quantity"] for row in rows if row["part"] == "sync"} >= {
        "time", "bandwidth", "fraction_of_pinned", "second_read_bytes"}


@pytest.mark.device
def test_bench_json_tables_fit(bench_run: tuple[dict, str, str]) -> None:
    r, _, _ = bench_run
    _check_tables(format_tables(r), 6)


@pytest.mark.device
def test_bench_prints_tables_that_fit(cl_device: ha.Device) -> None:
    p = subprocess.run([sys.executable, "-m", "hostarray", "bench", "--max-size", "256 KiB",
                        "--repeat", "1", "--device", str(cl_device)],
                       capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert p.returncode == 0, p.stderr[-3000:]
    assert p.stdout.startswith("hostarray bench -- ")
    assert "[bench]" not in p.stdout and "[bench]" in p.stderr
    _check_tables(p.stdout, 6)
    assert "256 KiB" in p.stdout


# -- benchmarks/bench_iterative.py and bench_half.py: hostarray vs CuPy and pyopencl.array ----

@pytest.mark.device
@pytest.mark.parametrize("script", ["bench_iterative.py", "bench_half.py"])
def test_peer_benchmarks_run_check_and_count(script: str, tmp_path: Path,
                                            cl_device: ha.Device) -> None:
    dev = cl_device
    out = tmp_path / "peers.json"
    # a copied link, so that hostarray's bytes show on a device whose own link is shared
    p = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", script),
                        "--sizes", "64KiB", "--repeat", "1", "--link", "copied",
                        "--device", str(dev), "--json", str(out)],
                       capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    _check_tables(p.stdout, 2)  # the times and the reference measurements
    assert "every value read matches numpy's closed form: True" in p.stdout
    r = json.loads(out.read_text())
    assert r["benchmark"] == script[len("bench_"):-len(".py")]
    (row,) = r["rows"]
    assert row["size"] == 64 * 1024 and row["device_kernels_s"] > 0
    assert set(row["copy_rate_GBps"]) == {"pinned", "pageable"}
    runs = row["runs"]
    assert set(runs) == {"ha", "cupy", "cla", "cl"}
    for name in ("ha", "cla", "cl") + (("cupy",) if "median_s" in runs["cupy"] else ()):
        run = runs[name]
        assert run["correct"] and not run["wrong"] and run["median_s"] > 0, (name, run)
        assert run["limit"] in {"PCIe", "device", "driver", "Python", "host"}, run["limit"]
    if "skipped" in runs["cupy"]:
        assert runs["cupy"]["skipped"].split(" (")[0] in p.stdout
    s = runs["ha"]["stats"]  # one run's counters: the host must have received its reads
    assert runs["ha"]["link"] == "copied"
    assert s["acquires"] >= 1 and s["bytes_acquired"] >= row["minimum_bytes"] > 0
    assert runs["ha"]["bytes_moved"] == s["bytes_published"] + s["bytes_acquired"]


@pytest.mark.device
def test_launch_benchmark_runs_checks_and_counts(tmp_path: Path, cl_device: ha.Device) -> None:
    dev = cl_device
    out = tmp_path / "launch.json"
    p = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "bench_launch.py"),
                        "--sizes", "4KiB", "--launches", "20", "--repeat", "1", "--profile",
                        "--device", str(dev), "--json", str(out)],
                       capture_output=True, text=True, timeout=600, cwd=ROOT)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    _check_tables(p.stdout, 3)  # the times, hostarray above pyopencl, the profile
    assert "synchronised nothing while launching: True" in p.stdout
    r = json.loads(out.read_text())
    assert r["benchmark"] == "launch" and r["launches"] == 20 and r["goal_us"] == 10
    (row,) = r["rows"]
    assert row["size"] == 4096 and row["device_s"] > 0
    runs = row["runs"]
    assert set(runs) == {"ha", "ha op", "ha op new", "cl", "cl call", "cl ha-buf", "cupy raw",
                         "cupy ew"}
    shared = runs["ha"]["link"] == "shared"
    for name, run in runs.items():
        if "skipped" in run:
            # generated kernels are measured off a shared link only (the device path)
            assert name.startswith("cupy") or (shared and name.startswith("ha op")), run
            continue
        assert run["correct"] and run["s_per_launch"] > 0 and run["host_s_per_launch"] > 0
        assert run["limit"] in {"device", "driver", "Python", "host"}, run["limit"]
        if name.startswith("ha op"):  # every batch ran on the device, nothing moved
            assert run["counters_clean"], run["stats"]
    assert runs["ha"]["stats"] == {"launches": 20, "publishes": 0, "acquires": 0, "waits": 0}
    assert runs["ha"]["profile"] and isinstance(row["goal_met"], bool)
    assert row["ha_over_cl_us"] == pytest.approx(
        (runs["ha"]["s_per_launch"] - runs["cl"]["s_per_launch"]) * 1e6)


@pytest.mark.device
def test_peer_benchmark_fails_loudly_on_a_wrong_value(capsys: pytest.CaptureFixture,
                                                      cl_device: ha.Device) -> None:
    dev = cl_device
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        import _peers
        import bench_half
    finally:
        sys.path.pop(0)
    wl = bench_half.WORKLOAD
    right = wl.expected
    wl.expected = lambda n: [right(n)[0], -1.0]  # x[0] can't be -1: every library is wrong
    try:
        rc = _peers.main(wl, bench_half.__doc__, ["--sizes", "16KiB", "--repeat", "1",
                                                  "--no-cupy", "--device", str(dev)])
    finally:
        wl.expected = right
    out = capsys.readouterr()
    assert rc == 1
    assert "every value read matches numpy's closed form: False" in out.out
    assert "WRONG 16 KiB ha: run 0" in out.out and "FAILED" in out.err


# -- benchmarks/bench_compute.py: the device path against CuPy, pyopencl.array, numpy ------

def _bench_compute() -> Any:
    sys.path.insert(0, os.path.join(ROOT, "benchmarks"))
    try:
        import bench_compute
    finally:
        sys.path.pop(0)
    return bench_compute


def test_compute_benchmark_suggests_the_smallest_size_from_which_the_device_wins() -> None:
    suggest = _bench_compute().suggest_threshold
    rows = [{"size": s, "on_over_off": r} for s, r in ((4096, 3.0), (8192, 0.9), (16384, 1.1),
                                                      (32768, 0.5), (65536, 0.2))]
    assert suggest(rows) == 32768  # 8 KiB won once, but lost again above it
    assert suggest(rows[:2]) == 8192
    assert suggest(rows[:3]) is None  # the device path lost at the largest size


@pytest.mark.device
@pytest.mark.link_fixed
def test_compute_benchmark_runs_checks_and_counts(tmp_path: Path, cl_device: ha.Device) -> None:
    # a copied link, so that the device path runs on a device whose own link is shared
    env = {**os.environ, "HOSTARRAY_LINK": "copied"}
    env.pop("HOSTARRAY_DEVICE_COMPUTE_MIN_BYTES", None)  # the default threshold
    p = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "bench_compute.py"),
                        "--max-size", "1MiB", "--matmul", "64", "--sweep-max", "8KiB",
                        "--repeat", "1", "--sweep-repeat", "2", "--no-cupy",
                        "--device", str(cl_device), "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=600, cwd=ROOT, env=env)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    _check_tables(p.stdout, 5)  # four workloads and the sweep
    assert "every value matches numpy's: True" in p.stdout
    r = json.loads((tmp_path / "compute.json").read_text())
    md = (tmp_path / "compute.md").read_text()
    assert md.startswith("# Device compute benchmark") and "| size | lib | time |" in md
    assert r["benchmark"] == "compute" and r["device"]["link"] == "copied"
    assert r["threshold"] == 1 << 20 and r["cupy"].startswith("left out")
    assert r["sweep_repeat"] == 2 and len(r["sweep"]["rows"][0]["on"]["times_s"]) == 2
    assert list(r["workloads"]) == ["chain", "elementwise", "reduction", "matmul"]
    for key, rows in r["workloads"].items():
        (row,) = rows
        assert set(row["runs"]) == {"ha", "cupy", "cla", "numpy"}
        for name in ("ha", "numpy"):
            run = row["runs"][name]
            assert run["correct"] and run["median_s"] > 0, (key, name, run)
        assert "skipped" in row["runs"]["cupy"]
        assert row["runs"]["ha"]["stats_same_every_run"]
    n = (1 << 20) // 4
    ew = r["workloads"]["elementwise"][0]["runs"]["ha"]
    # x * x + 1 on the device: two generated kernels, no byte moved, nothing compiled again
    assert ew["stats"]["device_ops"] == 2 and ew["stats"]["host_fallbacks"] == 0
    assert ew["bytes_moved"] == 0 and ew["only_result_bytes"]
    assert ew["stats"]["kernels_compiled"] == 0  # the warm-up built them
    for key in ("chain", "reduction"):
        run = r["workloads"][key][0]["runs"]["ha"]
        s = run["stats"]
        # the host reads one float32: only those 4 bytes, once the sum runs on the device;
        # the whole array while it runs on the host
        assert s["bytes_published"] == 0 and s["bytes_acquired"] in (4, 4 * n), (key, s)
        assert run["only_result_bytes"] == (s["bytes_acquired"] == 4)
    assert r["workloads"]["chain"][0]["runs"]["ha"]["stats"]["device_ops"] >= 2
    mm = r["workloads"]["matmul"][0]["runs"]
    assert mm["ha"]["correct"] and mm["cla"]["skipped"].startswith("not available")
    sweep = r["sweep"]
    assert [row["size"] for row in sweep["rows"]] == [4096, 8192]
    for row in sweep["rows"]:
        assert row["on"]["correct"] and row["off"]["correct"]
        assert row["on"]["stats"]["device_ops"] >= 1 and row["off"]["stats"]["device_ops"] == 0
        assert row["off"]["bytes_moved"] == row["size"]  # x acquired for numpy
    assert sweep["suggested_threshold"] in (None, 4096, 8192)


# -- benchmarks/bench_device_born.py: host RAM of device-born results --------------------------

@pytest.mark.device
def test_device_born_benchmark_runs_checks_and_commits_one_page(tmp_path: Path) -> None:
    out = tmp_path / "born.json"
    p = subprocess.run([sys.executable, os.path.join(ROOT, "benchmarks", "bench_device_born.py"),
                        "--link", "copied", "--sizes", "1MiB", "--repeat", "1", "--no-cupy",
                        "--json", str(out)], capture_output=True, text=True, timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    (row,) = json.loads(out.read_text())["rows"]
    # the chain's results and temporaries got no host memory but the page of the scalar read
    assert row["chain_host_committed"] == mmap.PAGESIZE and row["chain_acquired"] == 4
    assert row["pool_misses"] == 0 and row["pool_hits"] > 0
    assert "cupy/ha" in p.stdout
