"""dask.array with HostPtrArray chunks: the threaded scheduler and a two-process
``dask.distributed`` cluster on loopback, where pickling carries the chunks."""

from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

import hostarray as ha

dask = pytest.importorskip("dask")
da = pytest.importorskip("dask.array")

SRC = r"""
__kernel void affine(__global float *x, const float a, const float b) {
    int i = get_global_id(0); x[i] = a * x[i] + b;
}
"""

A = np.arange(48, dtype=np.float32).reshape(6, 8) / 7


def _check(got, want, rtol=1e-6) -> None:
    assert isinstance(got, ha.HostPtrArray), type(got)
    np.testing.assert_allclose(np.asarray(got), want, rtol=rtol)


def test_registered_as_a_chunk_type() -> None:
    from dask.array.chunk_types import is_valid_chunk_type

    assert is_valid_chunk_type(ha.HostPtrArray)
    d = da.from_array(ha.asarray(A), chunks=(3, 4))
    assert d._meta.__class__ is ha.HostPtrArray
    assert "chunktype=hostarray.HostPtrArray" in repr(d)


@pytest.mark.parametrize("order", ["hostarray first", "dask first"])
def test_registration_whatever_the_import_order(order) -> None:
    imports = ["import hostarray", "import dask.array"]
    if order == "dask first":
        imports.reverse()
    code = "; ".join([*imports, "from dask.array.chunk_types import is_valid_chunk_type",
                      "import dask.array as da",
                      "print(is_valid_chunk_type(hostarray.HostPtrArray), da.__loader__ is "
                      "da.__spec__.loader, type(da.__loader__).__name__)"])
    p = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.split() == ["True", "True", "SourceFileLoader"]


@pytest.fixture()
def threads():
    with dask.config.set(scheduler="threads", num_workers=2):
        yield


def test_elementwise_and_reductions_on_threads(threads) -> None:
    x = ha.asarray(A.copy())
    d = da.from_array(x, chunks=(3, 4))
    _check(d.compute(), A)
    _check((d * 2 + 1).compute(), A * 2 + 1)
    _check(np.sin(d).compute(), np.sin(A))
    _check((d + x).compute(), A + A)  # a HostPtrArray operand in dask arithmetic
    _check(np.add(d, x).compute(), A + A)
    _check(d.sum(axis=0).compute(), A.sum(axis=0), rtol=1e-5)
    _check(d.max(axis=1).compute(), A.max(axis=1))
    _check(d.mean(axis=1).compute(), A.mean(axis=1), rtol=1e-5)
    _check(d.T.compute(), A.T)
    _check(d[1:5, ::3].compute(), A[1:5, ::3])
    _check(da.concatenate([d, d], axis=0).compute(), np.concatenate([A, A]))
    _check((d @ d.T).compute(), A @ A.T, rtol=1e-5)
    np.testing.assert_allclose(float(d.std().compute()), A.std(), rtol=1e-5)
    # dask's percentile is approximate (it merges per-chunk percentiles): compare with
    # the same computation on numpy chunks
    np.testing.assert_allclose(da.percentile(d.ravel(), [25, 50]).compute(),
                               da.percentile(da.from_array(A, chunks=(3, 4)).ravel(),
                                             [25, 50]).compute(), rtol=1e-6)


DASK_OPS = {
    "argmax": lambda d: da.argmax(d, axis=0),
    "nanmean": lambda d: da.nanmean(d, axis=0),
    "cumsum": lambda d: d.cumsum(axis=1),
    "einsum": lambda d: da.einsum("ij,ij->i", d, d),
    "tensordot": lambda d: da.tensordot(d, d.T, axes=1),
    "rechunk": lambda d: d.rechunk((6, 1)),
    "where": lambda d: da.where(d > 3, d, 0),
    "astype": lambda d: d.astype(np.float64),
    "histogram": lambda d: da.histogram(d, bins=3, range=(0, 7))[0],
    "qr-r": lambda d: abs(da.linalg.qr(d.T.rechunk((8, 6)))[1]),
    "var": lambda d: d.var(axis=0),
    "clip": lambda d: da.clip(d, 1, 5),
}


@pytest.mark.parametrize("name", sorted(DASK_OPS))
def test_more_dask_operations_match_numpy_chunks(threads, name) -> None:
    f = DASK_OPS[name]
    want = f(da.from_array(A, chunks=(3, 4))).compute()
    got = f(da.from_array(ha.asarray(A.copy()), chunks=(3, 4))).compute()
    _check(got, want, rtol=1e-5)


def _launch_per_block(block):
    """One kernel launch per block, on the block's own device."""
    prg = ha.Program(SRC, device=block.device)
    out = ha.asarray(block, copy=True)
    prg.affine(out.size, out.reshape(-1), 3.0, 1.0)
    return out


@pytest.mark.device
def test_map_blocks_with_a_kernel_per_block_on_threads(threads, cl_device) -> None:
    x = ha.asarray(A.copy(), device=cl_device)
    d = da.from_array(x, chunks=(3, 4))
    ha.reset_stats()
    r = d.map_blocks(_launch_per_block, dtype=np.float32).compute()
    assert ha.stats().launches == 4  # one per block
    _check(r, 3 * A + 1)
    assert r.device == cl_device


@pytest.mark.device
def test_chunks_whose_newest_data_is_on_the_device(threads, cl_device) -> None:
    x = ha.asarray(A.copy(), device=cl_device)
    ha.Program(SRC, device=cl_device).affine(x.size, x.reshape(-1), 2.0, 0.0)
    d = da.from_array(x, chunks=(2, 8))
    _check(d.sum(axis=1).compute(), (2 * A).sum(axis=1), rtol=1e-5)


# -- dask.distributed: two worker processes on loopback ---------------------------------------

@pytest.fixture(scope="module")
def client():
    distributed = pytest.importorskip("distributed")
    cluster = distributed.LocalCluster(n_workers=2, processes=True, threads_per_worker=1,
                                       host="127.0.0.1", dashboard_address=None,
                                       worker_dashboard_address=None)
    c = distributed.Client(cluster)
    workers = c.scheduler_info()["workers"]
    assert cluster.scheduler_address.startswith("tcp://127.0.0.1:")
    assert all(w.startswith("tcp://127.0.0.1:") for w in workers), workers  # loopback only
    try:
        yield c
    finally:
        c.close(timeout=30)
        cluster.close(timeout=30)


def _remote_marker(block, parent_pid):
    """The block plus 1 where it ran in another process (it always should)."""
    return block + (1.0 if os.getpid() != parent_pid else 0.0)


def test_distributed_carries_chunks_by_pickle(client) -> None:
    x = ha.asarray(A.copy())
    d = da.from_array(x, chunks=(3, 4))
    r = client.compute(d.map_blocks(_remote_marker, os.getpid(), dtype=np.float32) * 2)
    _check(r.result(timeout=120), (A + 1) * 2)
    s = client.compute(d.sum(axis=0)).result(timeout=120)
    _check(s, A.sum(axis=0), rtol=1e-5)


@pytest.mark.device
def test_distributed_kernel_launches_on_the_workers_device(client, cl_device) -> None:
    have = client.run(lambda: [str(dev) for dev in ha.devices()])
    if not all(str(cl_device) in devs for devs in have.values()):
        pytest.skip(f"the workers do not all have {cl_device}: {have}")
    x = ha.asarray(A.copy(), device=cl_device)
    ha.Program(SRC, device=cl_device).affine(x.size, x.reshape(-1), 2.0, 0.0)
    assert x._s.host_stale  # the chunks are pickled from the device's newest data
    d = da.from_array(x, chunks=(3, 4))
    launched = d.map_blocks(_launch_per_block, dtype=np.float32)
    r = client.compute(launched.map_blocks(_remote_marker, os.getpid(), dtype=np.float32))
    got = r.result(timeout=120)
    _check(got, 3 * (2 * A) + 1 + 1)
    assert got.device == cl_device  # reattached by name in this process
