"""Device discovery and naming."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import hostarray as ha
from hostarray import hostptr


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
