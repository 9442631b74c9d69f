"""The two-device scenario of ``tests/interop/test_dask_devices.py``, run in a subprocess
whose OpenCL drivers are the machine's own and the test-only second driver
(``tests.reliability._support.two_devices_env``): a :class:`hostarray.dask.LocalDeviceCluster`
with one worker on each device.  The worker functions live here, in a module the workers
import by name (a function pickled by value would lose the module-level ``_KEEP`` and
``_SEEN`` that must stay in the worker process).

``python3 -c "from tests.interop._dask_support import main; main()"`` (with the repository
root on the path and the two-device environment) prints one line ``FACTS {json}``;
``HOSTARRAY_LINK`` in this process's environment is passed to the workers' environment.

Oclgrind (the second device where the PyPI PoCL does not work) is not thread-safe: two
threads of one process calling it at once crash it (a segfault in clEnqueueReadBuffer),
and a Dask worker calls OpenCL from its task thread and, to send a device-newest chunk,
from its event loop.  The steps below keep the second device's worker to one of the two
at a time: its chunks are sent while it runs nothing, and its reductions acquire them in
tasks before anything sends them.
"""

from __future__ import annotations

import json
import logging
import os
import signal
import sys
import time
from typing import Any

import numpy as np

import hostarray as ha
import hostarray.dask as hd

SRC = r"""
__kernel void affine(__global float *x, const float a, const float b) {
    int i = get_global_id(0); x[i] = a * x[i] + b;
}
"""
T = 60  # seconds for any one step: a hang says where it was
N, CHUNK = 2048, 256  # 8 chunks, 4 on each device (Oclgrind interprets its kernels: small)
A_HOST = np.arange(N, dtype=np.float32) / 7

_KEEP: list[Any] = []  # user events of the failing launch: PoCL aborts if they die too soon
_SEEN: list[tuple[str, str, str]] = []  # (type, device, worker's device) of reduction inputs


@hd.device_task
def affine(block: Any) -> ha.HostPtrArray:
    """``2 x + 1`` by a kernel of the worker's cached program, on a private copy."""
    out = ha.asarray(block, copy=True)  # on the worker's device (its default)
    hd.program(SRC).affine(out.size, out, 2.0, 1.0)
    return out


def _failing_launch(block: Any) -> ha.HostPtrArray:
    """A launch the device fails (behind a user event set to CL_OUT_OF_RESOURCES, as
    tests/kernels/test_kernel_checks.py does), not waited for."""
    import pyopencl as cl

    from hostarray import hostptr

    dev = hd.worker_device()
    prg = hd.program(SRC)
    out = ha.asarray(block, copy=True)
    prg.affine(out.size, out, 1.0, 0.0)  # published now: nothing below waits on the gate
    q = hostptr.queue(dev)
    gate = cl.UserEvent(q.context)
    marker = cl.enqueue_marker(q, wait_for=[gate])
    prg.affine(out.size, out, 2.0, 1.0)
    gate.set_status(-5)
    _KEEP.append((gate, marker))
    return out


@hd.device_task
def failing(block: Any) -> ha.HostPtrArray:
    """The failing launch in a task that ends when its launches do: the task fails."""
    return _failing_launch(block)


def failing_unsettled(block: Any) -> ha.HostPtrArray:
    """The failing launch in a task that returns at once: the chunk carries the failure."""
    return _failing_launch(block)


def _record(x: Any) -> None:
    _SEEN.append((type(x).__name__, str(getattr(x, "device", None)), str(hd.worker_device())))


def partial_sum(x: Any, axis: Any = None, keepdims: bool = False) -> Any:
    _record(x)
    return np.sum(x, axis=axis, keepdims=keepdims)


def seen() -> list[tuple[str, str, str]]:
    return list(_SEEN)


def placed(keys: list[Any], dask_worker: Any = None) -> list[tuple[str, str, bool]]:
    """(type, device, device holds the newest data) of the chunks of ``keys`` this worker
    holds."""
    return sorted((type(v).__name__, str(getattr(v, "device", None)),
                   bool(getattr(getattr(v, "_s", None), "host_stale", False)))
                  for k, v in dask_worker.data.items() if k in keys)


def newest_on_device(key: Any, dask_worker: Any = None) -> bool:
    return bool(dask_worker.data[key]._s.host_stale)


def programs() -> list[str]:
    return [k[1] for k in hd._PROGRAMS]


def _phase(facts: dict[str, Any], name: str, t0: float) -> None:
    """Note the time a phase ended (in the facts, and on stderr: where a run hangs)."""
    facts[name] = round(time.perf_counter() - t0, 3)
    print(f"phase {name} done at {facts[name]} s", file=sys.stderr, flush=True)


def _raised(compute: Any) -> dict[str, Any] | None:
    """What ``compute()`` raised (``None``: nothing)."""
    from hostarray.errors import LaunchFailed

    try:
        compute()
    except LaunchFailed as e:
        return {"type": type(e).__name__, "worker": getattr(e, "worker", None),
                "device": str(e.device), "kernel": e.kernel,
                "notes": getattr(e, "__notes__", []), "message": str(e)}
    return None


def two_devices() -> tuple[ha.Device, ha.Device]:
    from tests.reliability._support import own_devices_first

    devs = own_devices_first([d for d in ha.devices() if d.framework == "opencl"],
                             os.environ["HOSTARRAY_TEST_SECOND_PLATFORM"])
    assert len(devs) >= 2, f"two OpenCL devices expected: {devs}"
    return devs[0], devs[-1]


def main() -> None:
    import dask
    import dask.array as da
    from distributed import Client, wait

    facts: dict[str, Any] = {}
    a, b = two_devices()
    link = os.environ.get("HOSTARRAY_LINK", "")
    env = {"HOSTARRAY_LINK": link} if link else {}
    t0 = time.perf_counter()
    with hd.LocalDeviceCluster([a, b], env=env, dashboard_address=None,
                               silence_logs=logging.CRITICAL) as cluster, \
            Client(cluster) as client:
        facts["start_s"] = time.perf_counter() - t0

        def get(collection: Any) -> Any:
            return client.compute(collection).result(timeout=T)

        facts["devices"] = {k: str(v) for k, v in cluster.devices.items()}
        facts["a"], facts["b"] = str(a), str(b)
        facts["address"] = {str(d): cluster.worker_address(d) for d in (a, b)}
        facts["held"] = {k: [str(v[0]), v[1], str(v[2])] for k, v in client.run(
            lambda: (hd.worker_device(), hd.worker_device().link, ha.default_device())
        ).items()}

        # half the chunks pinned to each device through its worker resource (optimizing the
        # graph would drop the annotations), each half persisted there
        meta = ha.empty((0,), dtype=np.float32)
        halves = []
        for dev, piece in zip((a, b), np.split(A_HOST, 2)):
            with dask.annotate(resources={hd.resource(dev): 1}):
                halves.append(da.from_array(piece, chunks=CHUNK, meta=meta)
                              .map_blocks(ha.asarray, meta=meta)
                              .map_blocks(affine, meta=meta).persist(optimize_graph=False))
        wait(halves, timeout=T)
        y = da.concatenate(halves)
        want = 2 * A_HOST + 1
        facts["chunks_at"] = {str(dev): sorted({w for v in client.who_has(h).values() for w in v})
                              for dev, h in zip((a, b), halves)}
        facts["placed"] = client.run(placed, [f.key for h in halves
                                              for f in client.futures_of(h)])
        facts["launches"] = client.run(lambda: ha.stats().launches)
        facts["programs"] = client.run(programs)

        _phase(facts, "t_placed", t0)
        # serialising one device-newest chunk: only its bytes acquired, once
        addr_b = facts["address"][str(b)]
        f = client.futures_of(halves[1])[0]
        facts["newest_on_device"] = client.run(newest_on_device, f.key, workers=[addr_b])[addr_b]
        client.run(ha.reset_stats)
        first = f.result(timeout=T)
        second = f.result(timeout=T)
        facts["chunk"] = [type(first).__name__, str(first.device), first.nbytes,
                          bool(np.array_equal(np.asarray(first), np.asarray(second)))]
        facts["stats_after_send"] = {k: [v.acquires, v.bytes_acquired] for k, v in
                                     client.run(ha.stats).items()}

        _phase(facts, "t_sent", t0)
        # reductions and compute: partial results cross from one worker to the other
        s = get(y.sum())
        facts["sum"] = [type(s).__name__, float(s), float(want.astype(np.float64).sum())]
        m = get(y.reshape(N // CHUNK, CHUNK).mean(axis=0))
        facts["mean"] = [type(m).__name__, str(m.device),
                         bool(np.allclose(np.asarray(m), want.reshape(-1, CHUNK).mean(axis=0),
                                          rtol=1e-5))]
        r = get(y)
        facts["compute"] = [type(r).__name__, str(r.device), bool(np.array_equal(
            np.asarray(r), want))]
        t = get(da.reduction(y, partial_sum, partial_sum, combine=partial_sum,
                             dtype=np.float32, split_every=2))
        facts["tree_sum"] = [type(t).__name__, bool(np.isclose(float(t), want.sum(),
                                                                rtol=1e-5))]
        facts["seen"] = client.run(seen)

        _phase(facts, "t_reduced", t0)
        # a launch that fails in a task: the task's error (device_task), or, where the task
        # returned at once, the error of the chunk's transfer to the client
        x = da.from_array(A_HOST[:CHUNK], chunks=CHUNK, meta=meta).map_blocks(ha.asarray,
                                                                            meta=meta)
        with dask.annotate(resources={hd.resource(a): 1}):
            bad = x.map_blocks(failing, meta=meta)
        facts["failed"] = _raised(lambda: client.compute(bad, optimize_graph=False)
                                  .result(timeout=T))
        facts["failed_unsettled"] = _raised(lambda: client.submit(
            failing_unsettled, A_HOST[:CHUNK], resources={hd.resource(a): 1}).result(timeout=T))

        _phase(facts, "t_failed", t0)
        # a lost worker: its chunks are computed again (on its restarted worker: they are
        # pinned to its device)
        pid_b = client.run(os.getpid, workers=[addr_b])[addr_b]
        os.kill(pid_b, signal.SIGKILL)
        deadline = time.monotonic() + 60
        while addr_b in client.scheduler_info()["workers"] and time.monotonic() < deadline:
            time.sleep(0.05)  # the scheduler has seen it go: its chunks are lost
        facts["lost"] = addr_b not in client.scheduler_info()["workers"]
        s2 = get(y.sum())
        facts["after_loss"] = [float(s2), float(want.astype(np.float64).sum())]
        facts["chunks_at_after_loss"] = {
            str(dev): sorted({w for v in client.who_has(h).values() for w in v})
            for dev, h in zip((a, b), halves)}
        while (addr_b in cluster.devices or len(client.scheduler_info()["workers"]) < 2) \
                and time.monotonic() < deadline:
            time.sleep(0.05)  # its nanny starts it again (the chunks may be done already)
        facts["devices_after_loss"] = {k: str(v) for k, v in cluster.devices.items()}
        new_b = cluster.worker_address(b)
        facts["b_restarted"] = [new_b != addr_b, client.run(os.getpid, workers=[new_b])[new_b]
                                != pid_b, str(client.run(hd.worker_device, workers=[new_b])[new_b])]
        _phase(facts, "t_lost", t0)
    _phase(facts, "t_closed", t0)
    print("FACTS " + json.dumps(facts))
    sys.stdout.flush()
