"""Device discovery and naming."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
import threading

import numpy as np
import pytest

import hostarray as ha
from hostarray import _devices, hostptr


def test_host_is_first_and_round_trips() -> None:
    devs = ha.devices()
    assert devs[0] == ha.device("cpu") and devs[0].framework == "host"
    for d in devs:
        assert ha.device(str(d)) == d
        assert hash(ha.device(str(d))) == hash(d)


@pytest.mark.device
def test_opencl_device_attributes(cl_device: ha.Device) -> None:
    d = cl_device
    assert str(d).startswith("opencl:") and d.framework == "opencl"
    assert d.alignment > 0 and d.alignment & (d.alignment - 1) == 0  # bytes, a power of two
    assert d.alignment <= 4096  # bits were converted to bytes
    assert d.max_alloc > 0 and isinstance(d.host_unified, bool) and d.name
    assert d.link in ("shared", "mapped", "copied")
    if os.environ.get("HOSTARRAY_LINK") == "copied":
        assert d.link == "copied"
    assert ha.device("opencl") == ha.devices()[1]


def test_unknown_framework_is_typed() -> None:
    with pytest.raises(hostptr.UnknownFramework) as e:
        ha.device("cuda:0")
    assert e.value.framework == "cuda"
    assert "cuda" in hostptr.error_message(e.value)


@pytest.mark.parametrize("spec", ["", "opencl:x", ":1", "cpu:3", "opencl:99:0", 42])
def test_bad_device_strings_are_typed(spec) -> None:
    with pytest.raises(hostptr.HostPtrError) as e:
        ha.device(spec)
    assert isinstance(e.value, ValueError)
    assert "hostarray devices" in str(e.value)


def test_default_device_from_environment() -> None:
    code = "import hostarray as ha; print(ha.default_device())"
    env = dict(os.environ)
    env.pop("HOSTARRAY_DEVICE", None)
    out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                         text=True, check=True)
    assert out.stdout.strip() == "cpu"
    if len(ha.devices()) > 1:
        env["HOSTARRAY_DEVICE"] = str(ha.devices()[1])
        out = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                             text=True, check=True)
        assert out.stdout.strip() == str(ha.devices()[1])


# -- devices by kind ----------------------------------------------------------------------------

def _fake(key: str, type_: str, name: str) -> ha.Device:
    return ha.Device("opencl", key, name, type_, 128, 1 << 30, False)


@pytest.fixture
def registry(monkeypatch: pytest.MonkeyPatch) -> list[ha.Device]:
    """A machine with two platforms of GPUs around a CPU device (records only: nothing here
    builds or runs), and a GPU that failed its probe."""
    devs = [_fake("opencl:0:0", "CPU", "a CPU"), _fake("opencl:1:0", "GPU", "GPU A"),
            _fake("opencl:1:1", "GPU", "GPU B"), _fake("opencl:2:0", "CPU | GPU", "both"),
            _fake("opencl:3:0", "ACCELERATOR", "an FPGA")]
    monkeypatch.setattr(_devices, "_OPENCL", devs)
    monkeypatch.setattr(_devices, "_LEFT_OUT", [("opencl:4:0", "broken GPU", "it failed")])
    return devs


def test_kinds_count_over_every_platform_in_the_listed_order(registry) -> None:
    cpu0, gpu_a, gpu_b, both, fpga = registry
    named = {
        "gpu": gpu_a, "opencl:gpu": gpu_a, "opencl:gpu:0": gpu_a, "gpu:1": gpu_b,
        "opencl:gpu:1": gpu_b, "opencl:gpu:2": both, " OpenCL : GPU : 2 ": both,
        "opencl:cpu": cpu0, "opencl:cpu:0": cpu0, "opencl:cpu:1": both, "OPENCL:CPU": cpu0,
        "accelerator": fpga, "opencl:accelerator": fpga, "opencl:accelerator:0": fpga,
        "opencl": cpu0, "opencl:1": gpu_a, "opencl:1:1": gpu_b,
    }
    for spec, dev in named.items():
        assert ha.device(spec) is dev, spec
    assert ha.device("cpu") is ha.device("host") is ha.devices()[0]  # "cpu" stays the host
    assert _devices.aliases(cpu0) == ["opencl:cpu:0", "opencl:cpu", "opencl"]
    assert _devices.aliases(gpu_b) == ["opencl:gpu:1"]
    assert _devices.aliases(both) == ["opencl:cpu:1", "opencl:gpu:2"]
    assert _devices.aliases(fpga) == ["opencl:accelerator:0", "opencl:accelerator",
                                      "accelerator"]
    for d in ha.devices():
        assert all(ha.device(name) is d for name in _devices.aliases(d)), d


def test_a_kind_not_present_says_what_is_here(registry, monkeypatch: pytest.MonkeyPatch) -> None:
    with pytest.raises(hostptr.InvalidDevice) as e:
        ha.device("opencl:custom")
    msg = str(e.value)
    assert msg.startswith("'opencl:custom' is not a device here: no OpenCL custom device; the "
                          "devices are cpu, opencl:0:0 (CPU, a CPU), opencl:1:0 (GPU, GPU A), ")
    assert "use one of those or 'opencl:cpu' or 'opencl:gpu' or 'opencl:accelerator'" in msg
    assert "left out as not working: opencl:4:0 (broken GPU)" in msg
    assert "hostarray devices" in msg and e.value.setting is None
    with pytest.raises(hostptr.InvalidDevice, match=r"no OpenCL GPU 3: counted from 0, there are "
                       r"3 \(opencl:gpu:0 = opencl:1:0, opencl:gpu:1 = opencl:1:1, "
                       r"opencl:gpu:2 = opencl:2:0\)"):
        ha.device("gpu:3")
    # the case: only a CPU device
    monkeypatch.setattr(_devices, "_OPENCL", registry[:1])
    monkeypatch.setattr(_devices, "_LEFT_OUT", [])
    for spec in ("gpu", "opencl:gpu", "opencl:gpu:1"):
        with pytest.raises(hostptr.InvalidDevice) as e:
            ha.device(spec)
        # one suggestion, no parentheses around the reason (issue 24's review)
        assert str(e.value) == (f"{spec!r} is not a device here: no OpenCL GPU; the devices "
                                f"are cpu, opencl:0:0 (CPU, a CPU); use one of those or "
                                f"'opencl:cpu'; `hostarray devices` lists them.")
    monkeypatch.setattr(_devices, "_OPENCL", [])  # no OpenCL at all
    with pytest.raises(hostptr.InvalidDevice, match=r"no OpenCL accelerator; the devices are "
                                                    r"cpu; use one of those;"):
        ha.device("accelerator")


@pytest.mark.parametrize("spec", ["opencl:gpu:x", "gpu:1:2", "opencl:cpu:-1", "opencl:gpus",
                                  "cpu:0", "host:1", "opencl:", "gpu:", "", "opencl:cpu:0:0",
                                  "opencl:x:y:z"])
def test_bad_kind_selectors_are_refused(spec: str) -> None:
    with pytest.raises(hostptr.InvalidDevice) as e:
        ha.device(spec)
    assert "hostarray devices" in str(e.value)
    if not spec.startswith(("cpu", "host")):  # (a malformed name listed no device)
        assert "the devices are cpu" in str(e.value), str(e.value)


def test_unknown_words_are_unknown_frameworks() -> None:
    for spec, fw in (("bogus", "bogus"), ("GPUS:0", "gpus"), ("cuda:0", "cuda")):
        with pytest.raises(hostptr.UnknownFramework) as e:
            ha.device(spec)
        assert e.value.framework == fw
        assert "a kind such as 'gpu'" in str(e.value)


@pytest.mark.device
def test_kind_names_work_wherever_a_device_is_taken(cl_device: ha.Device) -> None:
    kind = _devices._kinds(cl_device)[0]
    first = _devices._of_kind(kind)[0]
    spec = f"opencl:{kind}:0"
    assert ha.device(spec) is first and ha.device(f"opencl:{kind}") is first
    x = ha.asarray([1.0, 2.0], device=spec)
    assert x.device is first and ha.zeros(2, device=spec).device is first
    assert ha.asarray([1.0]).to_device(spec).device is first
    assert ha.Program("__kernel void f(__global float *x) { x[0] = 1; }",
                      device=spec).device is first
    info = ha.__array_namespace_info__()
    assert info.dtypes(device=spec) == info.dtypes(device=first)


@pytest.mark.device
def test_devices_command_shows_each_devices_names(cl_device: ha.Device) -> None:
    r = subprocess.run([sys.executable, "-m", "hostarray", "devices"], capture_output=True,
                       text=True, timeout=300, check=True)
    lines = r.stdout.splitlines()
    row = next(i for i, ln in enumerate(lines) if ln.startswith(f"{cl_device} "))
    # under the row: the device's name line, then its other names
    also = next(ln for ln in lines[row + 1:row + 3] if ln.strip().startswith("also:"))
    assert also.strip() == f"also: {', '.join(_devices.aliases(cl_device))}"
    assert also.index("also:") == lines[0].index("framework")  # under the framework column
    assert len(also) <= 100
    r = subprocess.run([sys.executable, "-m", "hostarray", "devices", "--json"],
                       capture_output=True, text=True, timeout=300, check=True)
    by_name = {d["device"]: d for d in json.loads(r.stdout)["devices"]}
    assert by_name["cpu"]["aliases"] == ["host"]
    assert by_name[str(cl_device)]["aliases"] == _devices.aliases(cl_device)


# -- the default device of a block --------------------------------------------------------------

def test_a_block_sets_the_default_nests_and_restores(registry) -> None:
    outside = ha.default_device()
    cpu0, gpu_a, gpu_b = registry[:3]
    with ha.default_device("gpu") as d:
        assert d is gpu_a and ha.default_device() is gpu_a and ha.device(None) is gpu_a
        assert ha.__array_namespace_info__().default_device() is gpu_a
        with ha.default_device(gpu_b):
            assert ha.default_device() is gpu_b
            with gpu_a:  # a Device is the context manager itself
                assert ha.default_device() is gpu_a
            assert ha.default_device() is gpu_b
        assert ha.default_device() is gpu_a
        with pytest.raises(KeyError):
            with ha.default_device("opencl:cpu"):
                assert ha.default_device() is cpu0
                raise KeyError("out")
        assert ha.default_device() is gpu_a  # restored by the exception too
    assert ha.default_device() is outside
    assert ha.default_device(None) is outside and ha.default_device("gpu:1") is gpu_b
    assert ha.default_device() is outside  # outside a with statement nothing changes
    with pytest.raises(hostptr.InvalidDevice):
        with ha.default_device("opencl:custom"):  # refused before the block: nothing set
            pass  # pragma: no cover
    assert ha.default_device() is outside
    with pytest.raises(RuntimeError, match="did not start"):
        gpu_b.__exit__(None, None, None)


def test_blocks_ending_out_of_order_end_their_own_device(registry) -> None:
    # a generator's block that ends inside another block (it was resumed there)
    outside = ha.default_device()
    cpu0, gpu_a = registry[:2]

    def gen():
        with cpu0:
            yield

    g = gen()
    next(g)
    with gpu_a:
        assert ha.default_device() is gpu_a
        next(g, None)  # the generator's cpu0 block ends: gpu_a's stays
        assert ha.default_device() is gpu_a
    assert ha.default_device() is outside


def test_blocks_belong_to_their_thread(registry) -> None:
    outside = ha.default_device()
    cpu0, gpu_a, gpu_b = registry[:3]
    inside, ended = threading.Barrier(3), threading.Barrier(3)
    seen: dict[str, list[ha.Device]] = {}
    failed: list[BaseException] = []

    def worker(name: str, spec: ha.Device | str | None) -> None:
        try:
            if spec is None:  # no block of its own: what the others' blocks leave it
                inside.wait(10)
                seen[name] = [ha.default_device()]
                ended.wait(10)
                seen[name].append(ha.default_device())
                return
            with ha.default_device(spec):
                inside.wait(10)  # every worker is inside its block (or has none) now
                seen[name] = [ha.default_device()]
            ended.wait(10)
            seen[name].append(ha.default_device())
        except BaseException as e:  # pragma: no cover - reported below
            failed.append(e)

    with ha.default_device(gpu_a):  # the main thread's block: not the workers'
        threads = [threading.Thread(target=worker, args=args)
                   for args in (("device", gpu_b), ("name", "opencl:cpu"), ("none", None))]
        for t in threads:
            t.start()
        for t in threads:
            t.join(20)
        assert ha.default_device() is gpu_a  # the workers' blocks did not touch it
    assert not failed, failed
    assert seen == {"device": [gpu_b, outside], "name": [cpu0, outside],
                    "none": [outside, outside]}


def test_blocks_belong_to_their_asyncio_task(registry) -> None:
    outside = ha.default_device()
    gpu_a, gpu_b = registry[1:3]

    async def task(dev: ha.Device, other: asyncio.Event, mine: asyncio.Event) -> list:
        with ha.default_device(dev):
            mine.set()
            await other.wait()  # the other task is inside its block now
            got = [ha.default_device()]
        return got + [ha.default_device()]

    async def main() -> list:
        a, b = asyncio.Event(), asyncio.Event()
        return await asyncio.gather(task(gpu_a, b, a), task(gpu_b, a, b))

    assert asyncio.run(main()) == [[gpu_a, outside], [gpu_b, outside]]


@pytest.mark.device
def test_creation_without_device_follows_the_block(cl_device: ha.Device) -> None:
    outside = ha.default_device()
    host = ha.device("cpu")
    for dev, other in ((cl_device, host), (host, cl_device)):
        with ha.default_device(str(dev)):
            made = {
                "asarray": ha.asarray([1.0, 2.0]), "asarray(numpy)": ha.asarray(np.ones(3)),
                "empty": ha.empty(3), "zeros": ha.zeros((2, 2)), "ones": ha.ones(3),
                "full": ha.full(3, 7.0), "arange": ha.arange(4), "linspace": ha.linspace(0, 1, 5),
                "eye": ha.eye(3), "fftfreq": ha.fft.fftfreq(8), "rfftfreq": ha.fft.rfftfreq(8),
            }
            for name, x in made.items():
                assert x.device == dev, name
            assert ha.zeros(2, device=other).device == other  # device= still wins
            # *_like follow their input, as the standard says
            src = ha.zeros(3, device=other)
            for like in (ha.empty_like(src), ha.zeros_like(src), ha.ones_like(src),
                         ha.full_like(src, 1)):
                assert like.device == other
            info = ha.__array_namespace_info__()
            assert info.default_device() == dev
            assert info.dtypes() == info.dtypes(device=dev)
            prg = ha.Program("__kernel void f(__global float *x) { x[0] = 1; }")
            # kernels build on the default device where it is an OpenCL one
            assert prg.device == (dev if dev.framework == "opencl" else
                                  next(d for d in ha.devices() if d.framework == "opencl"))
    assert ha.default_device() is outside


# -- HOSTARRAY_DEVICE ----------------------------------------------------------------------------

def _run(code: str, value: str | None) -> subprocess.CompletedProcess[str]:
    env = dict(os.environ)
    env.pop("HOSTARRAY_DEVICE", None)
    if value is not None:
        env["HOSTARRAY_DEVICE"] = value
    return subprocess.run([sys.executable, "-c", code], env=env, capture_output=True,
                          text=True, timeout=120)


def test_a_wrong_environment_value_names_the_variable() -> None:
    r = _run("import hostarray as ha; ha.asarray([1])", "bogus")
    assert r.returncode == 1
    assert ("hostarray.errors.UnknownFramework: HOSTARRAY_DEVICE='bogus': no backend for "
            "framework 'bogus'; use 'cpu', 'opencl', 'opencl:P:D' or a kind such as 'gpu' "
            "(see `hostarray devices`).") in r.stderr
    code = ("import pickle, hostarray as ha\n"
            "try:\n    ha.zeros(2)\nexcept ha.errors.HostPtrError as e:\n"
            "    again = pickle.loads(pickle.dumps(e))\n"
            "    print(type(e).__name__, e.setting, str(again) == str(e))\n    print(e)\n")
    r = _run(code, "opencl:custom:7")
    assert r.returncode == 0, r.stderr
    first, msg = r.stdout.splitlines()
    assert first == "InvalidDevice HOSTARRAY_DEVICE='opencl:custom:7' True"
    assert msg.startswith("HOSTARRAY_DEVICE='opencl:custom:7': 'opencl:custom:7' is not a "
                          "device here: no OpenCL custom device; the devices are cpu")
    # a wrong argument says nothing about the variable
    r = _run("import hostarray as ha\ntry:\n    ha.device('bogus')\n"
             "except ValueError as e:\n    print(e)", "cpu")
    assert r.returncode == 0 and r.stdout.startswith("no backend for framework 'bogus'")


def test_the_environment_takes_kind_names_and_blocks_override_it() -> None:
    code = ("import hostarray as ha\n"
            "print(ha.default_device(), ha.asarray([1]).device)\n"
            "with ha.default_device('cpu'):\n"
            "    print(ha.zeros(1).device, ha.__array_namespace_info__().default_device())\n"
            "print(ha.default_device())\n")
    opencl = [d for d in ha.devices() if d.framework == "opencl"]
    if not opencl:
        r = _run(code, "opencl:cpu")
        assert r.returncode == 1 and "HOSTARRAY_DEVICE='opencl:cpu': " in r.stderr
        return
    kind = _devices.aliases(opencl[0])[1]  # "opencl:cpu" (or "opencl:gpu", ...)
    r = _run(code, kind)
    assert r.returncode == 0, r.stderr
    first = str(opencl[0])
    assert r.stdout.split() == [first, first, "cpu", "cpu", first]
