"""Programs and kernels: building, caching, argument access and checking."""

from __future__ import annotations

import numpy as np
import pytest

import hostarray as ha
from hostarray import hostptr

pytestmark = pytest.mark.device

SRC = r"""
__kernel void axpy(const float a, __global const float *x, __global float *y) {
    int i = get_global_id(0); y[i] = a * x[i] + y[i];
}
__kernel void scalars(__global long *out, const char c, const uchar uc, const short s,
                      const int i, const uint u, const long l, const ulong ul,
                      const float f, const double d) {
    out[0] = c; out[1] = uc; out[2] = s; out[3] = i; out[4] = u; out[5] = l;
    out[6] = (long)ul; out[7] = (long)(f * 2); out[8] = (long)(d * 4);
}
__kernel void twod(__global int *x, const int width) {
    x[get_global_id(1) * width + get_global_id(0)] = get_global_id(0) + 10 * get_global_id(1);
}
__kernel void with_local(__global float *x, __local float *tmp) {
    int l = get_local_id(0); tmp[l] = x[get_global_id(0)];
    barrier(CLK_LOCAL_MEM_FENCE); x[get_global_id(0)] = tmp[get_local_size(0) - 1 - l];
}
"""


@pytest.fixture()
def prg(cl_device):
    return ha.Program(SRC, device=cl_device)


def test_access_comes_from_const_qualifiers(prg) -> None:
    args = {name: (kind, info) for name, kind, info in prg.axpy.args}
    assert args["x"] == ("buffer", "read")
    assert args["y"] == ("buffer", "readwrite")
    assert args["a"] == ("scalar", "float")


def test_axpy_matches_numpy(prg, cl_device) -> None:
    rng = np.random.default_rng(1)
    xn = rng.standard_normal(1000).astype(np.float32)
    yn = rng.standard_normal(1000).astype(np.float32)
    x = ha.asarray(xn, device=cl_device)
    y = ha.asarray(yn.copy(), device=cl_device)
    prg.axpy(1000, 3.0, x, y)
    np.testing.assert_allclose(np.array(y, copy=True), 3 * xn + yn, rtol=1e-5, atol=1e-6)


def test_scalars_are_passed_with_the_declared_type(prg, cl_device) -> None:
    out = ha.zeros(9, dtype=ha.int64, device=cl_device)
    prg.scalars(1, out, -3, 250, -30000, -(2**31), 2**32 - 1, -(2**62), 2**63 + 5, 1.5, 2.25)
    expected = [-3, 250, -30000, -(2**31), 2**32 - 1, -(2**62),
                np.uint64(2**63 + 5).astype(np.int64), 3, 9]
    assert np.array(out, copy=True).tolist() == [int(v) for v in expected]


def test_numpy_integer_sizes(prg, cl_device) -> None:
    x = ha.zeros((3, 4), dtype=ha.int32, device=cl_device)
    prg.twod(np.array([4, 3]), x, np.int64(4), local_size=(np.int8(2), np.int8(1)))
    assert np.array(x, copy=True).tolist() == [[c + 10 * r for c in range(4)] for r in range(3)]


def test_two_dimensional_global_size(prg, cl_device) -> None:
    x = ha.zeros((3, 4), dtype=ha.int32, device=cl_device)
    prg.twod((4, 3), x, 4)
    assert np.array(x, copy=True).tolist() == [[c + 10 * r for c in range(4)] for r in range(3)]


def test_local_memory_and_local_size(prg, cl_device) -> None:
    import pyopencl as cl

    x = ha.asarray(np.arange(8, dtype=np.float32), device=cl_device)
    prg.with_local(8, x, cl.LocalMemory(16), local_size=4)
    assert np.array(x, copy=True).tolist() == [3, 2, 1, 0, 7, 6, 5, 4]


def test_programs_and_kernels_are_cached(prg, cl_device) -> None:
    again = ha.Program(SRC, device=cl_device)
    assert again._cl is prg._cl
    assert again.axpy is prg.axpy
    other = ha.Program(SRC, device=cl_device, options=["-DUNUSED=1"])
    assert other._cl is not prg._cl
    assert set(prg.kernel_names) == {"axpy", "scalars", "twod", "with_local"}


def test_a_kernel_the_program_lacks_is_named_with_those_it_has(prg, cl_device) -> None:
    with pytest.raises(AttributeError, match=r"no kernel 'nosuch'; it has \['axpy', "):
        _ = prg.nosuch
    none = ha.Program("int twice(int a) { return 2 * a; }\n", device=cl_device)
    with pytest.raises(AttributeError, match="no kernel 'twice'; it has no kernels "
                                             r"\(a kernel is a function declared __kernel"):
        _ = none.twice
    assert none.kernel_names == []
    with pytest.raises(ValueError, match="source given as bytes must be UTF-8 text"):
        ha.Program(b"\xff", device=cl_device)


def test_the_probes_raw_builds_warn_nothing_and_fail_with_the_log(cl_device) -> None:
    # (NVIDIA's remark on every compile came out as pyopencl's CompilerWarning on stderr,
    # from the device probe, the bench's raw-pyopencl peer and the demo)
    import warnings

    import pyopencl as cl

    from hostarray.backends.opencl import quiet_build

    ctx = cl_device.runtime.context
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # a CompilerWarning would raise here
        prg = quiet_build(ctx, '#warning "a remark"\n__kernel void k(__global int *x) '
                               '{ x[0] = 1; }\n')
    assert prg.kernel_names == "k"
    # pyopencl's own error type (the probes catch cl.Error), with the compiler's log
    with pytest.raises(cl.Error, match="(?s)BUILD_PROGRAM_FAILURE.*undeclared_v") as info:
        quiet_build(ctx, "__kernel void k(__global int *x) { x[0] = undeclared_v; }\n")
    assert info.value.code == cl.status_code.BUILD_PROGRAM_FAILURE


def test_build_failure_carries_the_log(cl_device) -> None:
    with pytest.raises(hostptr.BuildFailed) as e:
        ha.Program("__kernel void broken(__global float *x) { x[0] = undefined_name; }",
                   device=cl_device)
    assert "undefined_name" in e.value.log
    assert "error" in e.value.log.lower()
    assert "fix the source" in str(e.value)


@pytest.mark.parametrize("call, match", [
    (lambda p, x, y: p.axpy(16, 1.0, x), "takes 3 arguments"),
    (lambda p, x, y: p.axpy(16, x, x, y), "scalar"),
    (lambda p, x, y: p.axpy(16, 1.0, 2.0, y), "pointer"),
    (lambda p, x, y: p.axpy(16, "one", x, y), "needs a float"),
    (lambda p, x, y: p.axpy(10, 1.0, x, y, local_size=4), "multiple of local size"),
    (lambda p, x, y: p.axpy(0, 1.0, x, y), "positive"),
    # a size that is not an int is refused, not truncated (16.5 work-items are not 16)
    (lambda p, x, y: p.axpy(16.5, 1.0, x, y), "positive integers"),
    (lambda p, x, y: p.axpy((16.0,), 1.0, x, y), "positive integers"),
    (lambda p, x, y: p.axpy("16", 1.0, x, y), "positive integers"),
    (lambda p, x, y: p.axpy(16, 1.0, x, y, local_size=4.0), "local size"),
])
def test_bad_launches_are_typed_and_change_nothing(prg, cl_device, call, match) -> None:
    x = ha.asarray(np.ones(16, dtype=np.float32), device=cl_device)
    y = ha.asarray(np.full(16, 2, dtype=np.float32), device=cl_device)
    with pytest.raises(hostptr.BadLaunch, match=match) as e:
        call(prg, x, y)
    assert e.value.kernel == "axpy"
    assert ha.stats().launches == 0
    assert (np.array(y, copy=True) == 2).all()


@pytest.mark.parametrize("view, error, match", [
    (lambda y: y[::2], hostptr.NotHostBacked, "argument 'y' of kernel 'axpy' is a non-contiguous"),
    (lambda y: y[::-1], hostptr.NotHostBacked, "non-contiguous.*contiguous copy"),
    (lambda y: y[1:9], hostptr.Refused, "starting at byte 4 .* multiple of"),
])
def test_views_the_device_cannot_use_have_one_type_everywhere(prg, cl_device, view, error,
                                                                match) -> None:
    """The same fault is the same error in a launch and in hostptr.cl_buffer."""
    x = ha.asarray(np.ones(16, dtype=np.float32), device=cl_device, copy=True)
    y = ha.asarray(np.full(16, 2, dtype=np.float32), device=cl_device, copy=True)
    with pytest.raises(error, match=match) as e:
        prg.axpy(8, 1.0, x[:8], view(y))
    if error is hostptr.Refused:
        assert e.value.reason.kind == "alignment"
        assert e.value.reason.required == cl_device.alignment  # a sub-buffer origin
    with pytest.raises(error):
        with hostptr.cl_buffer(view(y), cl_device, "rw"):
            pass
    assert (ha.stats().launches, ha.stats().publishes) == (0, 0)
    assert (np.array(y, copy=True) == 2).all()


def test_unknown_kernel_name(prg) -> None:
    with pytest.raises(AttributeError, match="no kernel 'nope'"):
        prg.nope  # noqa: B018


def test_read_only_numpy_can_be_read_not_written(prg, cl_device) -> None:
    base = np.asarray(ha.asarray(np.arange(16, dtype=np.float32), copy=True))
    base.flags.writeable = False
    x = ha.asarray(base, device=cl_device)
    y = ha.zeros(16, dtype=ha.float32, device=cl_device)
    prg.axpy(16, 1.0, x, y)
    assert np.array(y, copy=True).tolist() == list(range(16))
    with pytest.raises(hostptr.BadLaunch, match="read-only"):
        prg.axpy(16, 1.0, y, x)


def test_program_needs_an_opencl_device() -> None:
    # the one error class for the host where an OpenCL device is needed, as attach gives;
    # a Program's says what it needs (the host "can't use host memory" read as nonsense)
    with pytest.raises(hostptr.Refused) as e:
        ha.Program("__kernel void k() {}", device="cpu")
    assert e.value.reason.kind == "device_type"
    assert "cpu is the host; a Program needs an OpenCL device, e.g. 'opencl'" in str(e.value)
    for call in (lambda: hostptr.queue("cpu"), lambda: hostptr.attach(ha.zeros(4), "cpu")):
        with pytest.raises(hostptr.Refused) as e:
            call()
        assert e.value.reason.kind == "device_type" and "pick an OpenCL device" in str(e.value)


def test_overlapping_views_of_one_array_written_in_one_launch_are_refused(prg, cl_device) -> None:
    g = cl_device.alignment // 4  # float32 elements per alignment unit
    x = ha.asarray(np.arange(8 * g, dtype=np.float32), device=cl_device)
    with pytest.raises(hostptr.BadLaunch, match="overlaps"):
        prg.axpy(2 * g, 1.0, x[g:3 * g], x[:4 * g])  # y written over x's bytes
    assert ha.stats().launches == 0
    prg.axpy(2 * g, 1.0, x[:2 * g], x[4 * g:6 * g])  # disjoint parts: fine
    prg.axpy(4 * g, 1.0, x[:4 * g], x[:4 * g])  # the same part twice: one buffer, fine
    expected = np.arange(8 * g, dtype=np.float32)
    expected[4 * g:6 * g] += expected[:2 * g]
    expected[:4 * g] *= 2
    np.testing.assert_allclose(np.array(x, copy=True), expected)


# -- build options (issue 20 (8)) ---------------------------------------------------------------

OPTIONS_SRC = "__kernel void k(__global int *x) { x[get_global_id(0)] = V + W; }"


@pytest.mark.parametrize("options", ["-DV=4 -DW=3", " -DV=4\t-DW=3 ", "-DV='4' -D W=3",
                                     ["-DV=4", "-DW=3"], ("-DV=4", "-DW=3"), ["-DV=4 -DW=3"]],
                         ids=repr)
def test_build_options_as_a_string_or_a_sequence(cl_device, options) -> None:
    """A string of options was iterated character by character ("-", "D", "V" ...): the
    driver refused them (INVALID_BUILD_OPTIONS) and the message said "fix the source".
    A string is split as a shell would (shlex.split, as pyopencl does); a sequence is
    passed one option per item."""
    prg = ha.Program(OPTIONS_SRC, device=cl_device, options=options)
    assert all(isinstance(o, str) for o in prg.options) and len(prg.options) >= 1
    x = ha.zeros(4, dtype=ha.int32, device=cl_device)
    prg.k(4, x)
    assert np.array(x, copy=True).tolist() == [7] * 4


def test_a_string_of_options_is_the_program_of_its_split(cl_device) -> None:
    a = ha.Program(OPTIONS_SRC, device=cl_device, options="-DV=1 -DW=2")
    b = ha.Program(OPTIONS_SRC, device=cl_device, options=["-DV=1", "-DW=2"])
    assert a.options == b.options == ("-DV=1", "-DW=2")
    assert a._cl is b._cl  # one build, cached under the options themselves
    assert ha.Program("__kernel void k(__global int *x) { x[0] = 1; }", device=cl_device,
                      options=None).options == ()


@pytest.mark.parametrize("options", ["-DV=4 -DW=3 -no-such-option", ["-DV=4", "-DW=3", "-no"],
                                     "-DV=4 -DW=3 -cl-std=CL9.9"], ids=repr)
def test_options_the_driver_refuses_say_bad_build_options(cl_device, options) -> None:
    with pytest.raises(hostptr.BuildFailed) as info:
        ha.Program(OPTIONS_SRC, device=cl_device, options=options)
    e = info.value
    msg = str(e)
    assert "bad build options" in msg and "fix the source" not in msg, msg
    assert e.options == (tuple(options.split()) if isinstance(options, str) else tuple(options))
    assert repr(list(e.options)) in msg, msg  # names them, as split
    # PoCL names the one it refused; another driver may say nothing about it
    if "Portable Computing Language" in cl_device._cl_device.platform.name:
        assert e.options[-1] in e.log, e.log
    # a source that does not compile is still "fix the source", with no options named
    with pytest.raises(hostptr.BuildFailed) as info:
        ha.Program(OPTIONS_SRC, device=cl_device, options="-DV=4")
    assert "fix the source" in str(info.value) and info.value.options is None


@pytest.mark.parametrize(("options", "error"), [
    (5, TypeError), (b"-DV=4", TypeError), ([b"-DV=4"], TypeError), (["-DV=4", None], TypeError),
    ("-DV='4", ValueError),
], ids=repr)
def test_options_that_are_not_strings_are_refused_before_building(cl_device, options,
                                                                   error) -> None:
    with pytest.raises(error, match="build options"):
        ha.Program(OPTIONS_SRC, device=cl_device, options=options)
