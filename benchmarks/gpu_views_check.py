"""GPU check for issue 11 item 3: kernels on overlapping views, on both links, in subprocesses.

Runs, each in its own process (a driver crash ends that run only, and is reported):

* ``tests/reliability/test_state_machine_scale.py::test_state_machine_at_scale`` (the state
  machine that crashed NVIDIA's driver 580 on the H200),
* ``tests/coherence/test_view_subbuffers.py`` (the sub-buffer rule, hypothesis against numpy),

once with the link hostarray detects (``HOSTARRAY_LINK=auto``: mapped on an H200) and once with
``HOSTARRAY_LINK=copied``; then, unless ``--no-probes``, ``benchmarks/probes/probe_views.py --all``
(the crash pattern in plain pyopencl, old rule vs new rule).  Writes ``views_check.json`` (one
record per run: exit status or signal, seconds, pytest's counts, the tail of the output) and
one ``.log`` per run to ``$OUT`` if set, else ``gpu_out/``; prints a summary.  Exits 0 when
every test run passed.

    python3 benchmarks/gpu_views_check.py [--thorough] [--timeout 240] [--no-probes]
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TESTS = [
    ("state_machine", "tests/reliability/test_state_machine_scale.py::test_state_machine_at_scale"),
    ("view_subbuffers", "tests/coherence/test_view_subbuffers.py"),
]
LINKS = ("auto", "copied")
T0 = time.perf_counter()


def say(msg: str) -> None:
    print(f"[{time.perf_counter() - T0:6.1f}s] {msg}", flush=True)


def run(name: str, cmd: list[str], env: dict[str, str], timeout: float, out: str) -> dict:
    say(f"== {name}: {' '.join(cmd)}")
    t0 = time.perf_counter()
    try:
        p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, cwd=ROOT,
                           env=env)
        rc, text = p.returncode, p.stdout + ("\n[stderr]\n" + p.stderr if p.stderr else "")
    except subprocess.TimeoutExpired as e:
        def s(b: str | bytes | None) -> str:
            return b.decode(errors="replace") if isinstance(b, bytes) else (b or "")
        rc, text = None, s(e.stdout) + s(e.stderr) + f"\n[timed out after {timeout:.0f} s]"
    dt = time.perf_counter() - t0
    if rc is None:
        result = "timeout"
    elif rc < 0:
        result = f"killed by signal {signal.Signals(-rc).name}"
    else:
        result = "passed" if rc == 0 else f"exit {rc}"
    counts = {k: int(v) for v, k in re.findall(r"(\d+) (passed|failed|error|errors|skipped)",
                                                text.split("\n[stderr]\n")[0][-3000:])}
    notes = [ln.strip() for ln in text.splitlines()
             if ln.startswith(("state machine:", "views:")) or "Fatal Python error" in ln
             or "Segmentation fault" in ln]
    with open(os.path.join(out, f"{name}.log"), "w") as f:
        f.write(" ".join(cmd) + "\n" + text)
    say(f"   {result} in {dt:.1f} s {counts} {notes[:3]}")
    return {"name": name, "cmd": cmd, "rc": rc, "result": result, "seconds": round(dt, 1),
            "counts": counts, "notes": notes, "tail": text.splitlines()[-40:]}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--thorough", action="store_true", help="the long modes of both tests")
    p.add_argument("--timeout", type=float, default=240, help="seconds per test run (240)")
    p.add_argument("--budget", type=float, default=560,
                   help="seconds for everything (560): later runs get what is left")
    p.add_argument("--no-probes", action="store_true", help="skip probe_views.py --all")
    args = p.parse_args()
    out = os.environ.get("OUT") or os.path.join(ROOT, "gpu_out")
    os.makedirs(out, exist_ok=True)
    summary: dict = {"runs": []}
    env0 = dict(os.environ)
    env0["HOSTARRAY_THOROUGH"] = "1" if args.thorough else "0"
    env0["PYTHONFAULTHANDLER"] = "1"
    env0["HOSTARRAY_REQUIRE_DEVICE"] = "1"  # no device: a failure, never a silent skip
    try:
        import pyopencl as cl

        summary["devices"] = [
            {"name": d.name.strip(), "platform": pl.name.strip(), "driver": d.driver_version,
             "version": d.version, "mem_base_addr_align_bits": int(d.mem_base_addr_align)}
            for pl in cl.get_platforms() for d in pl.get_devices()]
    except Exception as e:  # report it, run the tests anyway: they say more
        summary["devices"] = f"{type(e).__name__}: {e}"
    say(f"devices: {summary['devices']}")

    def save() -> None:
        with open(os.path.join(out, "views_check.json"), "w") as f:
            json.dump(summary, f, indent=1)

    ok = True
    for link in LINKS:
        for short, target in TESTS:
            left = args.budget - (time.perf_counter() - T0)
            if left < 10:
                summary["runs"].append({"name": f"{short}-{link}", "result": "not run (budget)"})
                ok = False
                continue
            env = dict(env0, HOSTARRAY_LINK=link)
            r = run(f"{short}-{link}", [sys.executable, "-X", "faulthandler", "-m", "pytest",
                                        "-q", "-s", "-ra", "-p", "no:cacheprovider", target],
                    env, min(args.timeout, left), out)
            summary["runs"].append(r)
            ok &= r["rc"] == 0
            save()
    left = args.budget - (time.perf_counter() - T0)
    if not args.no_probes and left > 30:
        r = run("probe_views", [sys.executable, "benchmarks/probes/probe_views.py", "--all",
                                "--timeout", str(int(min(60, left / 12)))],
                dict(env0, OUT=out), left, out)
        summary["probes"] = r
        try:
            with open(os.path.join(out, "probe_views.json")) as f:
                summary["probes"]["variants"] = [
                    {k: v[k] for k in ("variant", "plain", "result", "last_step")}
                    for v in json.load(f)]
        except (OSError, ValueError):
            pass
    summary["all_tests_passed"] = ok
    save()
    say("summary:")
    for r in summary["runs"]:
        say(f"   {r['name']:28s} {r['result']:28s} {r.get('seconds', '')}")
    for v in summary.get("probes", {}).get("variants", []):
        say(f"   probe {v['variant'] + ('-plain' if v['plain'] else ''):22s} {v['result']:20s} "
            f"{v['last_step']}")
    say(f"wrote {os.path.join(out, 'views_check.json')}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
