"""The device-compute pool (``hostarray._compute.pool``): buffers reused by device, size
class and kind, a limit on idle bytes, ``clear_pool``, and what happens when memory runs
out: the pool gives its idle buffers back and tries once more, then raises
:class:`~hostarray.errors.DeviceOutOfMemory` (checked for real, under an address-space
limit in a subprocess)."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import numpy as np
import pytest

import hostarray as ha
from hostarray._compute import pool
from hostarray._storage import PAGE_SIZE

pytestmark = pytest.mark.device

ROOT = Path(__file__).resolve().parents[2]
MIB = 1 << 20
U8 = np.dtype(np.uint8)


@pytest.fixture
def dev(off_shared: ha.Device) -> Iterator[ha.Device]:
    ha.clear_pool()
    yield off_shared
    ha.clear_pool()


def _dead(dev: ha.Device, nbytes: int) -> None:
    r = pool.result(dev, (nbytes,), U8)
    del r
    gc.collect()


def test_results_reuse_idle_buffers_of_their_size_class(dev: ha.Device) -> None:
    info = pool.pool_info()
    _dead(dev, 3 * PAGE_SIZE - 5)
    assert pool.pool_bytes() == 3 * PAGE_SIZE  # whole pages
    r = pool.result(dev, (3 * PAGE_SIZE,), U8)  # the same class: reused
    now = pool.pool_info()
    assert now["hits"] == info["hits"] + 1 and now["misses"] == info["misses"] + 1
    assert pool.pool_bytes() == 0
    other = pool.result(dev, (4 * PAGE_SIZE,), U8)  # another class: a new buffer
    assert pool.pool_info()["misses"] == now["misses"] + 1
    assert r._s.buffers[dev].link == "copied"  # off a shared link: device memory of its own
    del r, other


def test_the_kind_of_buffer_is_part_of_the_key(cl_device: ha.Device) -> None:
    """A buffer made under a forced copied link is never handed out on the device's own
    shared link (its host memory is not the device's there), nor the other way round."""
    from hostarray.bench import forced_link

    if cl_device.link != "shared":
        pytest.skip("the device's own link is not shared (HOSTARRAY_LINK=copied): the "
                    "README's first run, on the shared link, runs this")
    ha.clear_pool()
    with forced_link(cl_device, "copied"):
        _dead(cl_device, 2 * PAGE_SIZE)
    r = pool.result(cl_device, (2 * PAGE_SIZE,), U8)
    assert r._s.buffers[cl_device].link == "shared" and pool.pool_bytes() == 2 * PAGE_SIZE
    del r
    ha.clear_pool()


def test_the_limit_trims_the_least_recently_returned(dev: ha.Device) -> None:
    old = pool.pool_limit(3 * PAGE_SIZE)
    try:
        _dead(dev, 2 * PAGE_SIZE)
        _dead(dev, PAGE_SIZE)
        assert pool.pool_bytes() == 3 * PAGE_SIZE
        _dead(dev, 2 * PAGE_SIZE)  # over the limit: the oldest goes
        assert pool.pool_bytes() == 3 * PAGE_SIZE
        _dead(dev, 4 * PAGE_SIZE)  # above the limit on its own: not kept
        assert pool.pool_bytes() <= 3 * PAGE_SIZE
        assert pool.pool_limit(0) == 3 * PAGE_SIZE
        assert pool.pool_bytes() == 0
    finally:
        pool.pool_limit(old)
    with pytest.raises(ValueError, match=">= 0"):
        pool.pool_limit(-1)


def test_clear_pool_frees_the_idle_bytes(dev: ha.Device) -> None:
    _dead(dev, MIB)
    _dead(dev, 2 * MIB)  # (the first one is reused for... no: another class)
    assert ha.clear_pool() == pool.pool_info()["idle_bytes"] + 3 * MIB
    assert ha.clear_pool() == 0 and pool.pool_info()["idle_buffers"] == 0


_OUT_OF_MEMORY = r"""
import gc, resource
import numpy as np
import hostarray as ha
from hostarray._compute import pool
from hostarray.bench import forced_link

MIB = 1 << 20
dev = ha.device("opencl")
with forced_link(dev, "copied" if dev.link == "shared" else None):
    keep = [pool.result(dev, (64 * MIB,), np.dtype(np.uint8)) for _ in range(4)]
    del keep
    gc.collect()
    assert pool.pool_bytes() == 256 * MIB
    status = open("/proc/self/status").read()
    vm = int(status.split("VmSize:")[1].split()[0]) * 1024
    # room for 200 MiB more address space: a 300 MiB result fits once the idle buffers'
    # memory is given back, a 1 GiB one never
    resource.setrlimit(resource.RLIMIT_AS, (vm + 200 * MIB, resource.RLIM_INFINITY))
    r = pool.result(dev, (300 * MIB,), np.dtype(np.uint8))
    assert pool.pool_bytes() == 0, pool.pool_bytes()  # emptied, then it fitted
    print("retried", r.nbytes // MIB, flush=True)
    try:
        pool.result(dev, (1024 * MIB,), np.dtype(np.uint8))
    except ha.errors.DeviceOutOfMemory as e:
        assert isinstance(e, MemoryError) and e.nbytes == 1024 * MIB
        assert "drop arrays you no longer need" in str(e)
        print("typed", type(e).__name__, flush=True)
    print("done", flush=True)
"""


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="RLIMIT_AS and /proc")
def test_out_of_memory_empties_the_pool_retries_once_then_raises_typed() -> None:
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    r = subprocess.run([sys.executable, "-c", _OUT_OF_MEMORY], cwd=ROOT, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]
    assert r.stdout.split() == ["retried", "300", "typed", "DeviceOutOfMemory", "done"], r.stdout
