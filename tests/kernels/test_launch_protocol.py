"""The one launch protocol (hostarray/_launch.py) under user kernels, generated kernels and
``hostptr.cl_buffer`` blocks, and what letting go of finished launches may run."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hostarray as ha
from hostarray import hostptr

pytestmark = pytest.mark.device

ROOT = Path(__file__).resolve().parents[2]

# The user's memory, adopted by ha.asarray, whose last reference runs code that uses
# hostarray (a __del__ that launches and reads).  Only a finished launch's record keeps it.
DEL_SCRIPT = r"""
import json, sys, time
import numpy as np, hostarray as ha
from hostarray import hostptr
dev = [d for d in ha.devices() if d.framework == "opencl"][0]
prg = ha.Program('''
__kernel void fill(__global float *x, const float v) { x[get_global_id(0)] = v; }
__kernel void look(__global const float *x, __global float *y) { y[get_global_id(0)] = x[0]; }
''', device=dev)
z = ha.zeros(16, dtype=ha.float32, device=dev)
seen = ha.zeros(16, dtype=ha.float32, device=dev)
out = {}
watched = [z]  # arrays whose locks __del__ must not run under

class Owner:
    def __init__(self):
        self.mem = np.zeros(1024, np.float32)
        self.__array_interface__ = self.mem.__array_interface__
    def __del__(self):
        out["under_lock"] = any(bool(a._s.lock._is_owned()) for a in watched)
        prg.fill(16, z, 7.0)           # a launch from __del__
        out["del_read"] = float(z[0])

def adopted():
    x = ha.asarray(np.asarray(Owner()), device=dev)   # Owner lives as long as x's storage
    return prg.fill(x.size, x, 1.0).event  # the record of this launch keeps the storage
    # x dies here: only that record keeps Owner's memory now

case = sys.argv[1]
event = adopted()
while event.command_execution_status != 0:  # done (nothing synced on the host)
    time.sleep(0.001)
if case == "prune":
    # every eighth launch lets go of the finished ones (Owner.__del__ launches again)
    for _ in range(16):
        prg.fill(16, seen, 2.0)
elif case == "host_write":
    # a host write waits for the launch reading z, under z's lock: the finished launches
    # are let go after it, never in the middle of the write
    prg.look(16, z, seen)
    z[...] = 5.0
else:
    # the same for the result of a generated kernel (a storage new to its launch): what
    # the finished launches kept goes at the next launch
    ha.set_device_compute_threshold(0)
    prg.fill(16, seen, 1.0)            # device-newest: seen + 1 runs on the device
    y = seen + 1.0
    watched.append(y)
    ha.set_device_compute_threshold(1 << 40)  # the write on the host:
    y[...] = 5.0                       # waits for the launch writing y, under y's lock
    assert "del_read" not in out
    prg.fill(16, seen, 2.0)
# (a buffer over the user's memory that died while the queue ran is let go once it is idle,
# at the next launch: pyopencl's buffer holds the memory; the shared link)
hostptr.queue(dev).finish()
prg.fill(16, seen, 3.0)
hostptr.queue(dev).finish()
out["z"] = float(z[0])
print("RESULT", json.dumps(out))
"""


def _run(code: str, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    full = dict(os.environ)
    full["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), full.get("PYTHONPATH")]))
    full.update(env or {})
    try:
        r = subprocess.run([sys.executable, "-c", code, *args], env=full, capture_output=True,
                           text=True, timeout=120)
    except subprocess.TimeoutExpired as e:
        raise AssertionError(f"deadlock: no exit in {e.timeout} s") from None
    assert r.returncode == 0, f"exit {r.returncode}: {r.stderr[-3000:]}"
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")), None)
    assert line, f"no result: {r.stdout[-2000:]} {r.stderr[-2000:]}"
    return json.loads(line[7:])


# the "result" case needs the device compute path, which runs off a shared link: it is run on
# the copied link, where every device takes it (not listed for "auto" instead of skipped there)
@pytest.mark.parametrize("case,link", [("prune", "auto"), ("prune", "copied"),
                                       ("host_write", "auto"), ("host_write", "copied"),
                                       ("result", "copied")])
@pytest.mark.link_fixed
def test_a_del_that_launches_while_finished_launches_are_let_go(cl_device, case, link) -> None:
    """``_Pending._prune`` dropped what finished launches kept (storages, and through them
    the user's memory: its ``__del__`` ran) under its non-reentrant lock, so a ``__del__``
    that launched deadlocked; and a host write waiting for a launch let go of finished ones
    from ``Storage._wait_for``, under the storage's lock, in the middle of the write.  Now
    what they kept goes after the registry's lock, and after the storage's lock."""
    out = _run(DEL_SCRIPT, case, env={"HOSTARRAY_LINK": link})
    assert out["del_read"] == 7.0, out  # __del__ ran, launched and read its result
    assert out["under_lock"] is False, out
    # the host write completed first, then __del__'s launch wrote z
    assert out["z"] == 7.0, out


def test_no_module_of_the_device_path_imports_the_user_kernel_api() -> None:
    """hostarray/_compute launches through hostarray/_launch.py, never hostarray.kernels."""
    for path in (ROOT / "hostarray" / "_compute").glob("*.py"):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ImportFrom) and node.level in (0, 2):
                base = ("hostarray." if node.level else "") + (node.module or "")
                base = base.rstrip(".") or "hostarray"
                names = {base, *(f"{base}.{a.name}" for a in node.names)}
            elif isinstance(node, ast.Import):
                names = {a.name for a in node.names}
            else:
                continue
            assert "hostarray.kernels" not in names, f"{path.name}: {ast.unparse(node)}"


def test_one_program_cache_and_argument_info_for_generated_kernels(cl_device) -> None:
    """A generated kernel's program is in the device runtime's one cache (as a user's), and
    its scalar arguments are typed from clGetKernelArgInfo, whatever the source spells
    (a macro for a type: the regex over the source that read them did not see it)."""
    from hostarray._compute import launch as gen

    src = ("#define N_T ulong\n__kernel void g(__global float *x, const N_T n, const float a) "
           "{ size_t i = get_global_id(0); if (i < n) x[i] += a; }")
    knl = gen.compiled(cl_device, src, "g")
    rt = cl_device.runtime
    assert any(s == src for s, _ in rt.programs), "not in the one program cache"
    x = ha.asarray(np.zeros(300, np.float32), device=cl_device)
    arg = gen.array_arg(x, cl_device, "rw")
    assert arg is not None
    # typed: a Python int and float are packed as the declared ulong and float
    gen.enqueue(cl_device, knl, "g", x.size, [arg, 300, 1.5], [arg])
    np.testing.assert_array_equal(np.array(x, copy=True), np.full(300, 1.5, np.float32))
    prg = ha.Program(src, device=cl_device, options=list(gen._options(cl_device))[1:])
    assert prg._cl is rt.program(src, gen._options(cl_device))[0]  # the same build


def test_user_and_generated_launches_and_cl_buffer_share_the_records(cl_device) -> None:
    """One record type and registry: a user kernel's Launch, a generated kernel's record
    and a cl_buffer block on the same array, in order, give the values in order."""
    from hostarray import _launch, kernels

    prg = ha.Program("__kernel void twice(__global float *x) { x[get_global_id(0)] *= 2; }",
                     device=cl_device)
    x = ha.asarray(np.ones(64, np.float32), device=cl_device)
    launch = prg.twice(x.shape, x)
    assert isinstance(launch, kernels.Launch) and isinstance(launch, _launch.Launch)
    assert ha.Launch is kernels.Launch
    assert launch in _launch.pending(cl_device).launches
    import pyopencl as cl

    with hostptr.cl_buffer(x, cl_device, "rw") as buf:
        cl.enqueue_fill_buffer(hostptr.queue(cl_device), buf, np.float32(3.0), 0, x.nbytes)
    prg.twice(x.shape, x)
    assert np.array(x, copy=True).tolist() == [6.0] * 64
    launch.wait()
    assert launch.done and launch._keep == []
