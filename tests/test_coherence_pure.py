"""The coherence contract as pure bookkeeping: no device, no OpenCL."""

from __future__ import annotations

import sys

import pytest

from hostarray._coherence import Coherence


def test_module_does_not_import_opencl() -> None:
    import subprocess

    # A fresh interpreter: importing the module alone must not pull in OpenCL or numpy.
    code = ("import sys, importlib.util as u; s = u.spec_from_file_location('c', "
            "'hostarray/_coherence.py'); m = u.module_from_spec(s); s.loader.exec_module(m); "
            "print(sorted(k for k in sys.modules if k.startswith(('pyopencl', 'numpy'))))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=__file__.rsplit("/tests/", 1)[0])
    assert out.stdout.strip() == "[]"


def test_fresh_state_host_is_exclusive() -> None:
    c = Coherence()
    assert not c.host_stale and c.host_exclusive
    assert c.source_for_host() is None


def test_new_buffer_needs_publish_then_is_current() -> None:
    c = Coherence()
    c.add_device("d")
    assert c.plan_device_read("d") == (None, True)
    c.published("d")
    assert c.plan_device_read("d") == (None, False)
    assert not c.host_exclusive  # the device is current too


def test_device_write_makes_host_stale_and_acquire_restores() -> None:
    c = Coherence()
    c.add_device("d")
    c.published("d")
    c.device_written("d", "launch")
    assert c.host_stale and c.source_for_host() == "d"
    c.acquired("d")
    assert not c.host_stale and c.inflight == []
    assert c.source_for_host() is None


def test_host_write_waits_for_readers_and_writers() -> None:
    c = Coherence()
    c.add_device("d")
    c.published("d", token="publish")
    c.device_read_launched("d", "reader")
    assert c.hazards_for_host_write() == ["publish", "reader"]
    assert not c.host_stale  # readers don't make the host stale
    c.host_written()
    assert c.inflight == [] and c.plan_device_read("d") == (None, True)


def test_host_exclusive_means_further_writes_change_nothing() -> None:
    c = Coherence()
    c.add_device("d")
    c.published("d")
    c.host_written()
    v = c.latest
    assert c.host_exclusive
    # a second write would not need to bump: the device is already stale
    assert c.plan_device_read("d") == (None, True) and c.latest == v


def test_read_on_second_device_acquires_from_first() -> None:
    c = Coherence()
    c.add_device("a")
    c.add_device("b")
    c.published("a")
    c.device_written("a", "t")
    assert c.plan_device_read("b") == ("a", True)
    c.acquired("a")
    c.published("b")
    assert set(c.current_devices()) == {"a", "b"}


def test_escape_marks_host_written_and_end_marks_again() -> None:
    c = Coherence()
    c.add_device("d")
    c.published("d")
    c.escape_begins()
    assert c.escaped and c.plan_device_read("d") == (None, True)
    c.published("d")
    c.device_read_launched("d", "r")
    c.escape_ends()
    assert not c.escaped
    assert c.plan_device_read("d") == (None, True)  # writes through the view are published
    assert c.inflight  # the reader is still tracked: a host write must wait for it


def test_forget_newest_device_requires_acquire() -> None:
    c = Coherence()
    c.add_device("d")
    c.published("d")
    c.device_written("d", "t")
    assert c.must_acquire_before_forget("d")
    c.acquired("d")
    assert not c.must_acquire_before_forget("d")
    c.forget_device("d")
    assert c.devices == {} and c.host_exclusive


def test_device_write_waits_for_other_devices_only() -> None:
    c = Coherence()
    c.add_device("a")
    c.add_device("b")
    c.published("a", token="copy-a")
    c.device_read_launched("a", "read-a")
    c.published("b")
    c.device_read_launched("b", "read-b")
    assert c.hazards_for_device_write("b") == ["copy-a", "read-a"]
    assert c.hazards_for_device_write("a") == ["read-b"]


def test_failed_whole_write_keeps_the_device_newest() -> None:
    c = Coherence()
    c.add_device("d")
    c.published("d")
    c.device_written("d", "t")
    c.acquired("d")  # the launch finished; host and device current
    c.device_written("d", "t2")
    c.host_write_failed(skipped_acquire=True)
    assert c.host_stale and c.source_for_host() == "d"
    c.host_write_failed(skipped_acquire=False)  # the host may hold part of the write
    assert not c.host_stale and not c.is_current("d")


def test_invalidated_device_holds_no_version() -> None:
    c = Coherence()
    c.add_device("d")
    c.published("d", token="copy")
    assert c.is_current("d")
    c.device_invalidated("d")
    assert not c.is_current("d") and c.inflight == []
    assert c.plan_device_read("d") == (None, True)
    # the only current copy is never invalidated: that would lose the newest data
    c.published("d")
    c.device_written("d", "t")
    c.device_invalidated("d")
    assert c.is_current("d") and c.host_stale


def test_publish_from_stale_host_is_a_bug() -> None:
    c = Coherence()
    c.add_device("d")
    c.published("d")
    c.device_written("d", "t")
    c.add_device("e")
    with pytest.raises(AssertionError):
        c.published("e")
