"""``hostarray.errors``, the public module of hostarray's typed errors (as
``numpy.exceptions`` is for numpy): one export list, the same objects in
``hostptr``, the builtin base ``docs/errors.md`` gives each class, a message built
by each class itself, and pickling with every attribute."""

from __future__ import annotations

import ast
import inspect
import pickle
import re
from pathlib import Path

import numpy as np
import pytest

import hostarray as ha
from hostarray import errors, hostptr

ROOT = Path(__file__).resolve().parents[2]
BUILTINS = {"Exception": Exception, "ValueError": ValueError, "TypeError": TypeError,
            "RuntimeError": RuntimeError, "MemoryError": MemoryError}

ERROR_CLASSES = [getattr(errors, n) for n in errors.__all__
                 if isinstance(getattr(errors, n), type)
                 and issubclass(getattr(errors, n), BaseException)
                 and not issubclass(getattr(errors, n), Warning)]  # PerformanceWarning

# one instance of each error with every attribute set, and a phrase of the advice its
# message must give (what to do next)
EXAMPLES: list[tuple[errors.HostPtrError, str]] = [
    (errors.HostPtrError("something went wrong"), "something went wrong"),
    (errors.Refused("opencl:0:0", errors.Refusal("alignment", address=0x1001, required=4)),
     "allocate with ha.empty(...)"),
    (errors.Refused("opencl:0:0", errors.Refusal(
        "alignment", address=0x1004, required=128, text="a view starting at byte 4; start it "
                                                        "at a multiple of 32 elements")),
     "start it at a multiple of 32 elements"),
    (errors.Refused("opencl:0:0", errors.Refusal("size", size=0, limit=1 << 31)),
     "give the array at least one element"),
    (errors.Refused("opencl:0:0", errors.Refusal("size", size=(1 << 31) + 1, limit=1 << 31)),
     "split the array into chunks"),
    (errors.Refused(ha.device("cpu"), errors.Refusal("device_type", device_type="host")),
     "pick an OpenCL device"),
    (errors.Refused("opencl:0:0", errors.Refusal("backend", code=-61, text="bad size")),
     "HOSTARRAY_LINK=copied"),
    (errors.UnknownFramework("cuda"), "see `hostarray devices`"),
    (errors.NotHostBacked(0x1234, "its memory is not one contiguous range"),
     "make a contiguous copy"),
    (errors.NotHostBacked(0x1234), "make a contiguous copy"),
    (errors.BufferExists(0x1234, "opencl:0:0"), "free it first with hostptr.free_buffer"),
    (errors.InvalidDevice("opencl:x:y", "expected 'cpu', 'opencl' or 'opencl:P:D'"),
     "as listed by `hostarray devices`"),
    (errors.DeviceUnavailable("opencl:1:0", "it failed a test build"),
     "pick another device"),
    (errors.BuildFailed("opencl:0:0", "error: <source>:1:2: no_such_name",
                        "warning: ...\nerror: <source>:1:2: no_such_name"), "fix the source"),
    (errors.BuildFailed("opencl:0:0", "Invalid build option: -bogus", "... INVALID_BUILD_OPTIONS",
                        options=("-DN=4", "-bogus")), "pass options the driver takes"),
    (errors.BadLaunch("k", "local size (8192,) is above 4096; pass a smaller local_size",
                      argument="tmp", declared="float*", dtype=np.dtype(np.float64),
                      limit=4096, requested=(8192,)), "pass a smaller local_size"),
    (errors.BadLaunch("set", "it takes 2 arguments (x, v), got 1"), "takes 2 arguments"),
    (errors.LaunchFailed("opencl:0:0", -5, kernel="add"), "launch again"),
    (errors.LaunchFailed("opencl:0:0", -77, what="a transfer"), "launch again"),
    (errors.TransferDisallowed("acquire", 4096, "opencl:0:0", "HostPtrArray.__float__ at x.py:3"),
     "hostptr.acquire_device_writes(x, device)"),
    (errors.TransferDisallowed("publish", 64, "opencl:0:0"), "hostptr.publish_host_writes"),
    (errors.BufferExists(0x1234, "opencl:0:0", "the memory belongs to another array"),
     "belongs to another array"),
    (errors.InUse("opencl:1:0", (0, 1024), "a host write"), "write after the block"),
    (errors.DeviceOutOfMemory("opencl:0:0", 1 << 30, 1 << 20, "MEM_OBJECT_ALLOCATION_FAILURE"),
     "drop arrays you no longer need"),
]


def _documented() -> dict[str, tuple[str, list[str]]]:
    """``{class: (builtin base, [attributes])}`` from the table in docs/errors.md."""
    doc = (ROOT / "docs" / "errors.md").read_text(encoding="utf-8")
    section = doc.split("## The error classes", 1)[1].split("\n## ", 1)[0]
    rows = {}
    for line in section.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if line.startswith("| `") and len(cells) == 4:
            attrs = re.findall(r"`(\w+)`", cells[2].split("(")[0])
            rows[cells[0].strip("`")] = (cells[1].strip("`"), attrs)
    return rows


# -- one export list; the same objects everywhere --------------------------------------------------

def test_every_name_is_exported_once_and_defined_here() -> None:
    assert len(errors.__all__) == len(set(errors.__all__))
    public = {n for n, v in vars(errors).items() if not n.startswith("_")
              and getattr(v, "__module__", None) == errors.__name__}
    assert set(errors.__all__) == public  # nothing defined here left out, nothing foreign
    assert ha.errors is errors and "errors" in ha.__all__


def test_hostptr_names_are_the_same_objects() -> None:
    for name in errors.__all__:
        assert getattr(hostptr, name) is getattr(errors, name), name
        assert hostptr.__all__.count(name) == 1, name
    # hostptr's list is its own functions plus errors' list, not a copy kept by hand
    assert hostptr.__all__[-len(errors.__all__):] == errors.__all__
    for name in hostptr.__all__[:-len(errors.__all__)]:
        assert getattr(hostptr, name).__module__ == hostptr.__name__, name


def test_every_class_derives_from_its_documented_builtin() -> None:
    doc = _documented()
    assert set(doc) == {c.__name__ for c in ERROR_CLASSES}
    assert errors.HostPtrError.__bases__ == (Exception,)
    for cls in ERROR_CLASSES:
        builtin = BUILTINS[doc[cls.__name__][0]]
        assert issubclass(cls, builtin), cls
        if cls is not errors.HostPtrError:
            assert cls.__bases__ == (errors.HostPtrError, builtin), cls
    for e, _ in EXAMPLES:
        assert isinstance(e, BUILTINS[doc[type(e).__name__][0]])


def test_documented_attributes_are_there() -> None:
    doc = _documented()
    for e, _ in EXAMPLES:
        for attr in doc[type(e).__name__][1]:
            assert hasattr(e, attr), (type(e).__name__, attr)
    refused = next(e for e, _ in EXAMPLES if isinstance(e, errors.Refused))
    for field in ("kind", "address", "required", "size", "limit", "code", "text",
                  "device_type"):
        assert hasattr(refused.reason, field)


# -- each error builds its own message -------------------------------------------------------------

def test_str_is_the_message_and_says_what_to_do() -> None:
    assert {type(e) for e, _ in EXAMPLES} == set(ERROR_CLASSES)
    for e, advice in EXAMPLES:
        msg = str(e)
        assert msg == errors.error_message(e) == hostptr.error_message(e)
        assert advice in msg, (type(e).__name__, msg)
        if type(e) is not errors.HostPtrError:
            assert msg != Exception.__str__(e)  # a sentence, not the tuple of arguments
            assert "__str__" in vars(type(e)), type(e)  # built by the class itself
    for e, _ in EXAMPLES:
        if isinstance(e, errors.Refused):
            assert errors.refusal_message(e.reason) == str(e.reason)
            # a buffer refused; or the host given where an OpenCL device is needed
            lead = "can't hold device buffers" if e.reason.kind == "device_type" else "refused"
            assert str(e).endswith(str(e.reason)) and str(e).startswith(f"{e.device} {lead}")
    assert "CL_OUT_OF_RESOURCES" in str(errors.LaunchFailed("opencl:0:0", -5, kernel="add"))
    assert errors.error_message(KeyError("k")) == str(KeyError("k"))  # any exception


def test_no_isinstance_chain_builds_messages() -> None:
    src = (ROOT / "hostarray" / "errors.py").read_text(encoding="utf-8")
    assert "isinstance(" not in src
    assert inspect.getsource(errors.error_message).rstrip().endswith("return str(err)")
    assert inspect.getsource(errors.refusal_message).rstrip().endswith("return str(reason)")
    assert not (ROOT / "hostarray" / "_errors.py").exists()  # one module, not two
    assert "def error_message" not in (ROOT / "hostarray" / "hostptr.py").read_text()


# -- pickling --------------------------------------------------------------------------------------

@pytest.mark.parametrize("protocol", range(2, pickle.HIGHEST_PROTOCOL + 1))
def test_every_error_pickles_with_its_data(protocol: int) -> None:
    for e, _ in EXAMPLES:
        again = pickle.loads(pickle.dumps(e, protocol=protocol))
        assert type(again) is type(e)
        assert again.args == e.args
        assert vars(again) == vars(e), type(e).__name__  # every attribute, with its value
        assert str(again) == str(e)


def test_an_error_naming_a_device_unpickles_where_that_device_is_not() -> None:
    # an error raised in a worker (dask, multiprocessing) reaches a process that may not
    # have the device: it must arrive as itself, not as an InvalidDevice from the lookup of
    # its device attribute (a Device is pickled by name and looked up again)
    gone = ha.Device("opencl", "opencl:7:0", "a device of another machine", "GPU", 128,
                     1 << 30, False)
    made = [errors.Refused(gone, errors.Refusal("size", size=0, limit=1)),
            errors.BufferExists(0x1000, gone), errors.DeviceUnavailable(gone, "it broke"),
            errors.BuildFailed(gone, "error: x"), errors.LaunchFailed(gone, -5, kernel="k"),
            errors.TransferDisallowed("acquire", 8, gone, "HostPtrArray.__float__")]
    for e in made:
        again = pickle.loads(pickle.dumps(e))
        assert type(again) is type(e) and str(again) == str(e)
        assert again.device == "opencl:7:0", type(e).__name__  # by its name
    assert gone == made[0].device  # in the process that raised it, still the Device itself


def _hostarray_imports(path: Path) -> list[str]:
    """Every import of a hostarray module anywhere in the file (a function's too)."""
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom):
            if node.level or (node.module or "").split(".")[0] == "hostarray":
                found.append(f"{path.name}:{node.lineno} {'.' * node.level}{node.module or ''}")
        elif isinstance(node, ast.Import):
            found += [f"{path.name}:{node.lineno} {a.name}" for a in node.names
                      if a.name.split(".")[0] == "hostarray"]
    return found


def test_errors_imports_nothing_of_hostarray() -> None:
    # as numpy.exceptions imports nothing of numpy: no circle errors -> _devices -> _storage
    # -> errors; a Device among an error's data is known by a class attribute instead
    assert _hostarray_imports(ROOT / "hostarray" / "errors.py") == []
    assert ha.Device._pickled_by_name_in_errors is True
    assert errors._by_name(ha.device("cpu")) == "cpu"
    assert errors._by_name("cpu") == "cpu" and errors._by_name(3) == 3


def test_a_refusal_pickles_and_rejects_unknown_kinds() -> None:
    r = errors.Refusal("size", size=3, limit=2)
    assert pickle.loads(pickle.dumps(r)) == r
    with pytest.raises(ValueError, match="unknown refusal kind"):
        errors.Refusal("nonsense")


# -- real errors, caught by their builtin ----------------------------------------------------------

@pytest.mark.device
def test_except_value_error_catches_a_real_refusal(cl_device) -> None:
    a = np.frombuffer(bytearray(65), np.float32, count=16, offset=1)  # float32, 1 byte off
    try:
        hostptr.of_numpy(cl_device, a)
    except ValueError as e:
        caught = e
    else:
        pytest.fail("of_numpy accepted memory one byte off the element size")
    assert type(caught) is errors.Refused
    assert caught.reason.kind == "alignment" and caught.reason.required >= 4
    assert caught.device == cl_device and "ha.empty(...)" in str(caught)
    again = pickle.loads(pickle.dumps(caught))  # a real Device pickles by name
    assert (again.device, again.reason, str(again)) == (cl_device, caught.reason, str(caught))


@pytest.mark.device
def test_except_value_error_catches_real_not_host_backed_and_buffer_exists(cl_device) -> None:
    with pytest.raises(ValueError) as info:
        hostptr.of_numpy(cl_device, np.zeros(64, np.float32)[::2])
    assert type(info.value) is errors.NotHostBacked
    x = ha.zeros(16, dtype=ha.float32)
    hostptr.attach(x, cl_device)
    with pytest.raises(ValueError) as info:
        hostptr.attach(x, cl_device)
    assert type(info.value) is errors.BufferExists and info.value.device == cl_device


@pytest.mark.device
def test_except_type_error_catches_a_real_bad_launch(cl_device) -> None:
    prg = ha.Program("__kernel void set(__global float *x) { x[get_global_id(0)] = 1; }",
                     device=cl_device)
    with pytest.raises(TypeError) as info:
        prg.set(4)  # one argument short
    assert type(info.value) is errors.BadLaunch and info.value.kernel == "set"
