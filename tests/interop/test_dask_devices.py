"""``hostarray.dask``: a ``LocalDeviceCluster`` with one worker process per OpenCL device.

The two-device tests run a client in a subprocess whose drivers are the machine's own
and the test-only second driver (``tests.reliability._support.two_devices_env``: the PyPI
PoCL, or Oclgrind where that PoCL does not work on this CPU), once as the devices'
links are and once with ``HOSTARRAY_LINK=copied`` in the workers' environment; the
scenario is ``interop/_dask_support.py``.  The others start a cluster on this process's
own device, or none.
"""

from __future__ import annotations

import json
import multiprocessing
import pickle
import subprocess
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import hostarray as ha
from hostarray import _devices
from hostarray.errors import DeviceUnavailable, InvalidDevice, LaunchFailed

pytest.importorskip("distributed")
hd = pytest.importorskip("hostarray.dask")

from tests.reliability._support import (  # noqa: E402 - after the importorskip
    ROOT,
    run_python,
    second_driver,
    two_devices_env,
    vendors_dir,
)

from ._dask_support import CHUNK, N  # noqa: E402

SCENARIO = "from tests.interop._dask_support import main; main()"


def _scenario(tmp_path: Path, link: str) -> dict[str, Any]:
    env = {**two_devices_env(tmp_path), "PYTHONPATH": str(ROOT)}
    if link:
        env["HOSTARRAY_LINK"] = link  # the scenario passes it to the workers' environment
    r = run_python(SCENARIO, env=env, timeout=200)
    line = next((ln for ln in r.stdout.splitlines() if ln.startswith("FACTS ")), None)
    assert r.returncode == 0 and line, _why(r)
    facts: dict[str, Any] = json.loads(line[6:])
    return facts


def _why(r: subprocess.CompletedProcess[str]) -> str:
    return f"second device: {second_driver()}\n{r.stdout[-3000:]}\n{r.stderr[-5000:]}"


@pytest.mark.device
@pytest.mark.parametrize("link", [
    pytest.param("", id="default-link"),
    # sets its link: the copied pass, whose default-link case is this one, leaves it out
    pytest.param("copied", id="copied-link", marks=pytest.mark.link_fixed),
])
def test_two_workers_compute_on_their_own_devices(tmp_path: Path, link: str) -> None:
    f = _scenario(tmp_path, link)
    a, b = f["a"], f["b"]
    addr = f["address"]
    assert a != b and sorted(f["devices"].values()) == sorted([a, b]), f
    assert f["devices"] == {addr[a]: a, addr[b]: b}
    # each worker holds its device, as its default, on the link asked for
    for dev in (a, b):
        held, held_link, default = f["held"][addr[dev]]
        assert held == default == dev
        if link:
            assert held_link == link
    # half the chunks pinned to a's worker, half to b's, made and computed there
    per = N // CHUNK // 2
    assert f["chunks_at"] == {a: [addr[a]], b: [addr[b]]}, f["chunks_at"]
    for dev in (a, b):
        assert f["placed"][addr[dev]] == [["HostPtrArray", dev, True]] * per
        assert f["launches"][addr[dev]] == per  # one kernel per chunk
        assert f["programs"][addr[dev]] == [dev]  # built once per worker
    # results equal numpy's; partial results combine as HostPtrArrays on the combining
    # worker's device (those sent from the other worker moved onto it)
    kind, got, want = f["sum"]
    # a full reduction numpy spells is a 0-d HostPtrArray (docs/device-compute.md's results
    # rule: the sum's value moves only when it is looked at)
    assert kind == "HostPtrArray" and got == pytest.approx(want, rel=1e-6)
    assert f["mean"][0] == "HostPtrArray" and f["mean"][1] in (a, b) and f["mean"][2]
    assert f["compute"][0] == "HostPtrArray" and f["compute"][1] in (a, b) and f["compute"][2]
    assert f["tree_sum"][1]
    for address, seen in f["seen"].items():
        assert seen and all(s == ["HostPtrArray", f["devices"][address],
                                  f["devices"][address]] for s in seen), seen
    # sending one device-newest chunk acquires only that chunk, once
    assert f["newest_on_device"] is True
    assert f["chunk"] == ["HostPtrArray", b, CHUNK * 4, True]
    moved = 0 if f["held"][addr[b]][1] == "shared" else CHUNK * 4  # a real copy off shared
    assert f["stats_after_send"] == {addr[b]: [1, moved],
                                     addr[a]: [0, 0]}, f["stats_after_send"]
    # a launch that fails in a task: LaunchFailed in the client, naming worker and device,
    # raised by the task (device_task) or by the chunk's transfer to the client
    for how in ("failed", "failed_unsettled"):
        e = f[how]
        assert e is not None, f"{how}: the failing launch raised nothing in the client"
        assert e["type"] == "LaunchFailed" and e["kernel"] == "affine"
        assert e["worker"] == addr[a] and e["device"] == a
        assert e["notes"] == [f"raised on the dask worker {addr[a]}, which holds {a}"]
        assert e["message"].startswith(f"kernel 'affine' failed on {a} ")
    # a lost worker: its chunks are computed again, on its restarted worker and device
    assert f["lost"]
    assert f["after_loss"][0] == pytest.approx(f["after_loss"][1], rel=1e-6)
    new_b = next(k for k, v in f["devices_after_loss"].items() if v == b)
    assert f["b_restarted"] == [True, True, b]
    assert f["chunks_at_after_loss"] == {a: [addr[a]], b: [new_b]}


@pytest.mark.device
def test_a_device_that_failed_its_probe_starts_no_worker(monkeypatch: pytest.MonkeyPatch,
                                                         cl_device: ha.Device) -> None:
    # the entry discovery makes for a device whose probe kernel failed (as for a damaged
    # driver install: tests/reliability/test_bad_input.py)
    monkeypatch.setattr(_devices, "_LEFT_OUT", [*_devices._LEFT_OUT, (
        "opencl:7:0", "broken device", "it failed a test build (error: damaged)")])
    before = multiprocessing.active_children()
    with pytest.raises(DeviceUnavailable, match=r"opencl:7:0 \(broken device\).*damaged"):
        hd.LocalDeviceCluster([cl_device, "opencl:7:0"], dashboard_address=None)
    with pytest.raises(InvalidDevice, match="opencl:9:0"):
        hd.LocalDeviceCluster(["opencl:9:0"], dashboard_address=None)
    assert multiprocessing.active_children() == before  # nothing started


@pytest.mark.device
def test_a_worker_that_cannot_use_its_device_is_not_left_running(
        tmp_path: Path, cl_device: ha.Device) -> None:
    # the worker's environment hides every driver: its device is not there
    env = {"OCL_ICD_VENDORS": str(tmp_path / "none"), "OCL_ICD_FILENAMES": ""}
    with pytest.raises(DeviceUnavailable) as info:
        hd.LocalDeviceCluster([cl_device], env=env, dashboard_address=None,
                              silence_logs=50)
    msg = str(info.value)
    assert msg.startswith(f"{cl_device} does not work")
    assert "the dask worker cannot use it" in msg and "no worker is left running" in msg
    assert not multiprocessing.active_children()


@pytest.mark.device
def test_a_worker_that_sees_another_device_under_the_name_is_refused(
        tmp_path: Path, cl_device: ha.Device) -> None:
    # the worker sees only the test-only driver: its opencl:0:0 is another device
    if str(cl_device) != "opencl:0:0":
        pytest.skip(f"the machine's first device is {cl_device}, not opencl:0:0")
    env = {"OCL_ICD_VENDORS": str(vendors_dir(tmp_path, [second_driver().library]))}
    with pytest.raises(DeviceUnavailable, match="the dask worker sees .* under that name, "
                                                "the cluster's process .*OCL_ICD_VENDORS"):
        hd.LocalDeviceCluster([cl_device], env=env, dashboard_address=None, silence_logs=50)
    assert not multiprocessing.active_children()


@pytest.mark.device
def test_arguments_it_refuses(cl_device: ha.Device) -> None:
    for devices, error, match in [
            (["cpu"], ValueError, "not an OpenCL device"),
            ([cl_device, str(cl_device)], ValueError, "named twice"),
            ([], ValueError, "no OpenCL device")]:
        with pytest.raises(error, match=match):
            hd.LocalDeviceCluster(devices, dashboard_address=None)
    with pytest.raises(TypeError, match="n_workers"):
        hd.LocalDeviceCluster([cl_device], n_workers=2)
    with pytest.raises(ValueError, match="HOSTARRAY_DEVICE"):
        hd.LocalDeviceCluster([cl_device], env={"HOSTARRAY_DEVICE": "cpu"})
    assert not multiprocessing.active_children()


@pytest.mark.device
def test_one_device_cluster_and_its_helpers(cl_device: ha.Device) -> None:
    import dask.array as da
    from distributed import Client

    with hd.LocalDeviceCluster([cl_device], dashboard_address=None,
                               silence_logs=50) as cluster, Client(cluster) as client:
        address = cluster.worker_address(cl_device)
        assert cluster.devices == {address: cl_device}
        assert client.run(hd.worker_device) == {address: cl_device}
        assert client.run(lambda: ha.default_device()) == {address: cl_device}
        with pytest.raises(ValueError, match="scales to at most 1"):
            cluster.scale(2)
        x = da.from_array(np.arange(12.0).reshape(3, 4), chunks=2,
                          meta=ha.empty((0,), dtype=np.float64))
        y = x.map_blocks(hd.to_worker_device)
        got = y.mean(axis=0).compute()
        assert isinstance(got, ha.HostPtrArray) and got.device == cl_device
        np.testing.assert_allclose(np.asarray(got), np.arange(12.0).reshape(3, 4).mean(0))
        assert client.submit(hd.worker_device, resources={hd.resource(cl_device): 1}
                             ).result() == cl_device
    assert hd.worker_device() == ha.default_device()  # here: not a worker


def test_errors_pickle_with_the_worker_named() -> None:
    """What a device worker adds to a hostarray error survives the way Dask pickles a
    task's exception (tblib's reducer, then distributed's pickle)."""
    import tblib.pickling_support
    from distributed.protocol import pickle as dask_pickle

    e = LaunchFailed("opencl:1:0", -5, kernel="affine")
    e.worker = "tcp://127.0.0.1:1234"  # type: ignore[attr-defined]
    e.add_note("raised on the dask worker tcp://127.0.0.1:1234, which holds opencl:1:0")
    for again in (pickle.loads(pickle.dumps(e)), _via_dask(e, tblib.pickling_support,
                                                           dask_pickle)):
        assert type(again) is LaunchFailed
        assert (again.worker, again.device, again.kernel, again.status) == (
            "tcp://127.0.0.1:1234", "opencl:1:0", "affine", -5)
        assert again.__notes__ == e.__notes__ and str(again) == str(e)


def _via_dask(e: BaseException, support: Any, dask_pickle: Any) -> Any:
    try:
        raise e
    except LaunchFailed as raised:
        support.install(raised)
        return dask_pickle.loads(dask_pickle.dumps(raised))
