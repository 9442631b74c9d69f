"""Smoke test of ``hostarray bench``: it runs, and its JSON says what it measured.

Timings are never asserted (performance lives in benchmarks/); the
structure, the correctness flags and the transfer counters are.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

import hostarray as ha
from hostarray.bench import format_size, parse_size

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
MiB = 1 << 20


def test_parse_size_round_trips_format_size() -> None:
    for n in (4096, 3 * MiB, 1 << 30, 4 << 30):
        assert parse_size(format_size(n).replace(" ", "")) == n
    assert parse_size("64MiB") == 64 * MiB
    assert parse_size("1.5k") == 1536
    with pytest.raises(ValueError):
        parse_size("lots")


@pytest.fixture(scope="module")
def bench_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict, str, str]:
    devs = [d for d in ha.devices() if d.framework == "opencl"]
    if not devs:
        pytest.skip("no working OpenCL device")
    png = str(tmp_path_factory.mktemp("bench") / "bench.png")
    p = subprocess.run([sys.executable, "-m", "hostarray", "bench", "--max-size", "1MiB",
                        "--json", "--device", str(devs[0]), "--plot", png],
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
