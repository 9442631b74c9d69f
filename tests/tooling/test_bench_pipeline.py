"""``benchmarks/bench_pipeline.py`` (issue 22) runs, checks its results against numpy and
records hostarray's counters: on a copied link both spellings move only the result."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import hostarray as ha

ROOT = Path(__file__).resolve().parents[2]


@pytest.mark.device
@pytest.mark.link_fixed
def test_pipeline_benchmark_runs_checks_and_counts(tmp_path: Path, cl_device: ha.Device) -> None:
    env = {**os.environ, "HOSTARRAY_LINK": "copied"}
    p = subprocess.run([sys.executable, str(ROOT / "benchmarks" / "bench_pipeline.py"),
                        "--sizes", "256KiB", "--repeat", "1", "--no-cupy", "--threshold", "0",
                        "--device", str(cl_device), "--out", str(tmp_path)],
                       capture_output=True, text=True, timeout=600, cwd=ROOT, env=env)
    assert p.returncode == 0, p.stdout[-3000:] + p.stderr[-3000:]
    assert "| numpy/ha |" in p.stdout and (tmp_path / "pipeline.md").exists()
    r = json.loads((tmp_path / "pipeline.json").read_text())
    assert r["benchmark"] == "pipeline" and r["link"] == "copied"
    (row,) = r["rows"]
    assert row["nbytes"] == 256 * 1024 and "cupy" not in row
    for name in ("ha", "numpy"):
        run = row[name]
        assert run["check"] == "ok" and run["median_s"] > 0, run
        s = run["stats"]
        # the device computed every step; the host received the argmax result alone
        assert s["host_fallbacks"] == 0 and s["device_ops"] >= 6, s
        assert s["bytes_acquired"] == row["rows"] * 8 and s["bytes_published"] == 0, s
