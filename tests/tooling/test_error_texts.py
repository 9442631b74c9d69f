"""What a new user reads when a kernel goes wrong (issue 24, 4): a build failure quotes the
failing source line with a caret under the column and no temporary path, prints nothing
to stderr behind the exception; pyopencl's call form gets hostarray's; the sentences are
English; ``BadLaunch.limit`` and ``.requested`` have one type."""

from __future__ import annotations

import itertools
import os
import re
import threading

import numpy as np
import pyopencl as cl
import pytest

import hostarray as ha
from hostarray import errors
from hostarray._buildlog import compiler_stderr_dropped, source_errors

pytestmark = pytest.mark.device

_unique = itertools.count()


def _fresh(src: str) -> str:
    """``src`` with a comment no other build had: the program cache can't answer it."""
    return f"{src}\n// build {os.getpid()} {next(_unique)} {threading.get_ident()}\n"


BROKEN = """__kernel void k(__global float *x)
{
\tx[0] = nope + 1.0f;
    int z = 1
}"""


def test_a_build_failure_quotes_the_source_with_a_caret(cl_device, capfd) -> None:
    capfd.readouterr()
    with pytest.raises(errors.BuildFailed) as info:
        ha.Program(_fresh(BROKEN), device=cl_device)
    e = info.value
    msg = str(e)
    assert "fix the source" in msg and e.options is None
    # each error: where, what, the line itself and a caret under the column (tabs kept)
    assert "error at line 3, column 9: use of undeclared identifier 'nope'" in msg, msg
    lines = msg.splitlines()
    at = lines.index("    3 | \tx[0] = nope + 1.0f;")
    assert lines[at + 1] == "      | \t       ^", lines[at + 1]
    assert re.search(r"error at line 4, column \d+: expected ';'", msg), msg
    # no temporary file, no cache folder, in the message or the log it quotes
    for text in (msg, e.log):
        assert not re.search(r"tempfile|kcache|/tmp/|\.cl:\d", text), text
    assert "nope" in e.full_log  # the driver's whole log stays on the exception
    # and nothing on stderr behind it (PoCL's compiler printed "1 error generated." there)
    out, err = capfd.readouterr()
    assert "generated" not in err and err.strip() == "", err


def test_a_build_prints_nothing_but_other_writes_to_stderr_survive(cl_device, capfd) -> None:
    capfd.readouterr()
    with compiler_stderr_dropped():
        os.write(2, b"3 errors generated.\n")
        os.write(2, b"a line of someone else's\n")
        with pytest.raises(errors.BuildFailed):
            ha.Program(_fresh(BROKEN), device=cl_device)
    _, err = capfd.readouterr()
    assert err == "a line of someone else's\n", err
    # stderr is fd 2 again: a write now shows at once
    os.write(2, b"after\n")
    assert capfd.readouterr().err == "after\n"


def test_source_errors_reads_both_log_orders_and_keeps_headers() -> None:
    src = "kernel void k(global int *x) {\n  x[0] = y;\n}"
    pocl = "error: /root/.cache/pocl/kcache/tempfile_ab.cl:2:10: use of undeclared identifier 'y'"
    clang = ("<kernel>:2:10: error: use of undeclared identifier 'y'\n"
             "<kernel>:2:3: warning: unused\n1 error generated.")
    for log in (pocl, clang):
        got = source_errors(log, src)
        assert got == ("error at line 2, column 10: use of undeclared identifier 'y'\n"
                       "    2 |   x[0] = y;\n"
                       "      |          ^"), got
    header = ("In file included from /tmp/x.cl:1:\n"
              "/home/me/inc/a.h:7:2: error: unknown type name 'flot'\n"
              "/tmp/x.cl:2:10: error: use of undeclared identifier 'y'")
    got = source_errors(header, src)
    assert got.splitlines()[0] == ("error at /home/me/inc/a.h, line 7, column 2: unknown type "
                                   "name 'flot'"), got
    assert got.splitlines()[1].startswith("error at line 2"), got  # (no excerpt: not readable)
    assert "error at line 2, column 10" in got and "/tmp/x.cl" not in got, got
    assert source_errors("something else went wrong", src) is None


def test_an_option_without_its_argument_says_so(cl_device) -> None:
    for options, name in (("-I", "-I"), (["-DX=1", "-D"], "-D")):
        with pytest.raises(ValueError) as info:
            ha.Program("__kernel void k(__global int *x) { x[0] = X; }", device=cl_device,
                       options=options)
        msg = str(info.value)
        assert f"build option {name!r} at the end" in msg and "has no argument" in msg, msg
    # with its argument it builds
    assert ha.Program("__kernel void k(__global int *x) { x[0] = X; }", device=cl_device,
                      options=["-D", "X=1"]).options == ("-D", "X=1")


SCALE = "__kernel void scale(__global float *x, const float a) { x[get_global_id(0)] *= a; }"


@pytest.fixture(scope="module")
def scale(cl_device):
    return ha.Program(SCALE, device=cl_device).scale


def test_the_pyopencl_call_form_gets_hostarrays(scale, cl_device) -> None:
    x = ha.zeros(4, dtype=ha.float32, device=cl_device)
    queue = cl.CommandQueue(cl.Context([cl_device._cl_device]))
    ha.reset_stats()
    for call in (lambda: scale(queue, x.shape, None, x, 2.0),  # a count that differs
                 lambda: scale(queue, x, 2.0)):                # the same count
        with pytest.raises(errors.BadLaunch) as info:
            call()
        msg = str(info.value)
        assert "pyopencl's" in msg and "take no queue" in msg, msg
        assert "call scale(global_size, x, a, local_size=None)" in msg, msg
    with pytest.raises(errors.BadLaunch, match="local size; here it is a keyword"):
        scale(x.shape, None, x, 2.0)
    with pytest.raises(errors.BadLaunch, match=r"it takes 2 arguments \(x, a\) after the "
                                               r"global size, got 1$"):
        scale(x.shape, x)
    assert ha.stats().launches == 0 and ha.stats().publishes == 0


def test_articles_and_plurals_are_english(scale, cl_device) -> None:
    x = ha.zeros(4, dtype=ha.float32, device=cl_device)
    prg = ha.Program("__kernel void k(__global int *x, const int n, const uint m) "
                     "{ x[0] = n + m; }", device=cl_device)
    y = ha.zeros(1, dtype=ha.int32, device=cl_device)
    cases = [(lambda: prg.k(1, y, "seven", 1), "needs an int: 'seven' is not an int32 value"),
             (lambda: prg.k(1, y, 1, "x"), "needs a uint: 'x' is not a uint32 value"),
             (lambda: prg.k(1, y, y, 1), "is an int scalar, not an array"),
             (lambda: scale(0, x, 2.0), "the global size must be positive integers (one, "
                                        "or a sequence of 1 to 3); got 0"),
             (lambda: scale((8, 0), x, 2.0), "1 to 3); got (8, 0)"),
             (lambda: scale(4, x, 2.0, local_size=0), "the local size must be positive "
                                                      "integers, one per dimension of the "
                                                      "global size (4,); got 0")]
    for call, text in cases:
        with pytest.raises(errors.BadLaunch) as info:
            call()
        assert text in str(info.value), str(info.value)
        assert not re.search(r"\ba int|\ba uint8? scalar\b|\bints\b", str(info.value))


def test_limit_and_requested_are_tuples(cl_device) -> None:
    prg = ha.Program("__kernel void k(__global float *x) { x[get_global_id(0)] = 1; }",
                     device=cl_device)
    x = ha.zeros(8, dtype=ha.float32, device=cl_device)
    most = int(cl_device._cl_device.max_work_group_size)
    kinds = []
    for call in (lambda: prg.k((2**32, 2**32), x),          # work-items: one count
                 lambda: prg.k(2 * most, x, local_size=2 * most)):  # a work-group: one count
        with pytest.raises(errors.BadLaunch) as info:
            call()
        e = info.value
        assert type(e.limit) is tuple and type(e.requested) is tuple, (e.limit, e.requested)
        assert all(type(v) is int for v in e.limit + e.requested)
        assert e.requested[0] > e.limit[0]
        kinds.append(len(e.requested))
    # PoCL refuses the work-items as one count; NVIDIA per dimension (the size of each)
    assert kinds[1] == 1 and kinds[0] in (1, 2), kinds
    # a refusal without a limit has neither
    e = errors.BadLaunch("k", "why")
    assert e.limit is None and e.requested is None
    assert errors.BadLaunch("k", "w", limit=np.int64(4), requested=[2, 8]).requested == (2, 8)


def test_what_a_driver_prints_before_it_aborts_still_reaches_stderr() -> None:
    """stderr is forwarded as it comes, not kept to the end of the build: a driver that
    prints why and then kills the process (PoCL's failed assertions) is still heard."""
    import subprocess
    import sys

    code = ("import os, time\n"
            "from hostarray._buildlog import compiler_stderr_dropped\n"
            "with compiler_stderr_dropped():\n"
            "    os.write(2, b'1 error generated.\\nAssertion max_wgs > 0 failed.\\n')\n"
            "    time.sleep(0.5)\n"  # (the forwarding thread's turn; a driver takes longer)
            "    os.abort()\n")
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60,
                       cwd=os.path.dirname(os.path.dirname(os.path.dirname(
                           os.path.abspath(__file__)))))
    assert r.returncode != 0
    assert b"Assertion max_wgs > 0 failed." in r.stderr and b"generated" not in r.stderr, r.stderr


# -- issue 24's review: headers, macros, -D values, warnings, the source's type -------------
_TEMP = re.compile(r"tempfile|kcache|pocl|<Spelling|<command line>|\.cl:\d")


def test_an_error_in_a_header_names_the_header_and_quotes_its_line(cl_device, tmp_path) -> None:
    # (it was shown against line 2 of the user's source, with that line's excerpt)
    (tmp_path / "my.h").write_text("#define G 2\nfloat h(float a) { return a + undefined_h; }\n")
    src = _fresh('#include "my.h"\n__kernel void k(__global float *x) { x[0] = h(1); }')
    with pytest.raises(errors.BuildFailed) as info:
        ha.Program(src, device=cl_device, options=["-I", str(tmp_path)])
    msg = str(info.value)
    header = str(tmp_path / "my.h")
    assert (f"error at {header}, line 2, column 31: use of undeclared identifier "
            f"'undefined_h'") in msg, msg
    assert "    2 | float h(float a) { return a + undefined_h; }" in msg, msg
    assert "__kernel" not in msg, msg  # no excerpt of the user's line 2
    assert not re.search(r"tempfile|kcache", msg), msg


def test_a_macro_and_a_d_value_are_shown_where_they_were_written(cl_device) -> None:
    # (PoCL's "<Spelling=...tempfile_X.cl:1:19>" and "<Spelling=<command line>:5:11>" were
    # shown as they came, temp path and all)
    macro = _fresh("#define F(a) (a + undefined_v)\n__kernel void k(__global float *x) {\n"
                   "  x[0] = F(1);\n}")
    with pytest.raises(errors.BuildFailed) as info:
        ha.Program(macro, device=cl_device)
    msg = str(info.value)
    assert not _TEMP.search(msg), msg
    lines = msg.splitlines()
    at = lines.index("    3 |   x[0] = F(1);")
    assert lines[at + 1] == "      |          ^"
    if "note at line 1" not in msg:  # PoCL: the macro's place in the error's own line
        assert ("error at line 3, column 10 (in the macro at line 1, column 19): use of "
                "undeclared identifier 'undefined_v'") in msg, msg
        assert lines[at + 2] == "macro | #define F(a) (a + undefined_v)"
        assert lines[at + 3] == "      |                   ^"
    else:  # NVIDIA's compiler: the macro is a note of its own, with its line and caret
        assert "error at line 3, column 10: use of undeclared identifier 'undefined_v'" in msg
        assert lines[at + 2] == "note at line 1, column 19: expanded from macro 'F'", msg
        assert lines[at + 3] == "    1 | #define F(a) (a + undefined_v)"
        assert lines[at + 4] == "      |                   ^"
    for options in ("-DM=1 -DN=undefined_thing", ["-DM=1", "-D", "N=undefined_thing"]):
        with pytest.raises(errors.BuildFailed) as info:
            ha.Program(_fresh("__kernel void k(__global float *x) { x[0] = N + M; }"),
                       device=cl_device, options=options)
        msg = str(info.value)
        assert not _TEMP.search(msg), msg
        given = "-DN=undefined_thing" if isinstance(options, str) else "-D N=undefined_thing"
        assert "undeclared identifier 'undefined_thing'" in msg, msg
        if "(from the value of the build option" not in msg \
                and "Portable" not in cl_device._cl_device.platform.name:
            continue  # (not PoCL: a compiler that may not say where a -D value came from)
        assert (f"error at line 1, column 45 (from the value of the build option {given}): "
                f"use of undeclared identifier 'undefined_thing'") in msg, msg
        lines = msg.splitlines()
        at = lines.index(f"   -D | {given}")
        assert lines[at + 1] == "      | " + " " * given.index("u") + "^", lines[at + 1]


def test_columns_count_characters_as_the_caret_does(cl_device) -> None:
    with pytest.raises(errors.BuildFailed) as info:
        ha.Program(_fresh("__kernel void k(__global float *x) {\n  /* ééééé */ x[0] = yy;\n}"),
                   device=cl_device)
    msg = str(info.value)
    assert "error at line 2, column 22: use of undeclared identifier 'yy'" in msg, msg
    caret = msg.splitlines()[-1]
    assert caret.index("^") - caret.index("|") - 2 == 21, msg


def test_a_build_with_warnings_never_raises_and_keeps_them(cl_device, capfd) -> None:
    # (pyopencl's CompilerWarning went to stderr, and under -W error it raised: no program)
    import warnings

    src = _fresh('__kernel void k(__global float *x) {\n#warning "check this"\n'
                 "  x[get_global_id(0)] = 3;\n}")
    capfd.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        prg = ha.Program(src, device=cl_device)
        x = ha.zeros(4, dtype=ha.float32, device=cl_device)
        prg.k(x.shape, x).wait()
    np.testing.assert_array_equal(np.asarray(x), np.full(4, 3, np.float32))
    assert prg.warnings == ('warning at line 2, column 2: "check this"\n'
                            '    2 | #warning "check this"\n'
                            "      |  ^",), prg.warnings
    assert "check this" in prg.build_log
    _, err = capfd.readouterr()
    assert err == "", err
    clean = ha.Program(_fresh("__kernel void k(__global float *x) { x[0] = 1; }"),
                       device=cl_device)
    assert clean.warnings == ()


@pytest.mark.parametrize("source", [5, None, ["__kernel void k() {}"]])
def test_a_source_that_is_not_text_is_hostarrays_type_error(cl_device, source) -> None:
    with pytest.raises(TypeError, match=r"source must be OpenCL C source as a str, not "):
        ha.Program(source, device=cl_device)


def test_bytes_source_builds(cl_device) -> None:
    prg = ha.Program(_fresh("__kernel void k(__global float *x) { x[0] = 1; }").encode(),
                     device=cl_device)
    assert prg.kernel_names == ["k"]


def test_the_host_is_refused_with_what_a_program_needs() -> None:
    with pytest.raises(errors.Refused) as info:
        ha.Program("__kernel void k() {}", device="cpu")
    assert info.value.reason.kind == "device_type"
    assert "cpu is the host; a Program needs an OpenCL device, e.g. 'opencl'" in str(info.value)
    assert "can't use host memory" not in str(info.value)


def test_program_without_pyopencl_is_device_unavailable(tmp_path) -> None:
    # (ha.Program raised a raw ImportError)
    import subprocess
    import sys

    (tmp_path / "pyopencl").mkdir()
    (tmp_path / "pyopencl" / "__init__.py").write_text(
        "raise ImportError('numpy.core.multiarray failed to import')\n")
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
    code = ("import hostarray as ha\n"
            "from hostarray.errors import DeviceUnavailable\n"
            "try:\n"
            "    ha.Program('__kernel void k() {}')\n"
            "except DeviceUnavailable as e:\n"
            "    print('refused:', e)\n"
            "print(isinstance(1, ha.Kernel))\n")
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), root]),
           "HOSTARRAY_DEVICE": ""}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                       timeout=120, env=env, cwd=root)
    assert r.returncode == 0, r.stderr
    out = r.stdout
    assert out.startswith("refused: opencl does not work (hostarray.Program needs OpenCL"), out
    assert "numpy.core.multiarray failed to import" in out and "pip install" in out, out
    assert out.strip().endswith("False"), out


def test_a_type_mismatch_names_the_argument_at_fault(cl_device) -> None:
    # (it said ha.astype(x, ...) for argument y)
    prg = ha.Program("__kernel void f(__global float *x, __global float *y) { }",
                     device=cl_device)
    x = ha.ones(8, dtype=ha.float32, device=cl_device)
    y = ha.ones(8, dtype=ha.float64, device=cl_device)
    ha.reset_stats()
    with pytest.raises(errors.BadLaunch) as info:
        prg.f((8,), x, y)
    assert info.value.argument == "y"
    assert "pass ha.astype(y, ha.float32) or declare it double*" in str(info.value)
    assert ha.stats().launches == 0 and ha.stats().publishes == 0


def test_a_struct_by_value_says_what_to_do_whatever_is_passed(cl_device) -> None:
    prg = ha.Program("typedef struct {int a; float b;} S;\n__kernel void k(S s) { }",
                     device=cl_device)
    for value in (1, "s", ha.ones(2, dtype=ha.float32, device=cl_device)):
        with pytest.raises(errors.BadLaunch) as info:
            prg.k((1,), value)
        msg = str(info.value)
        assert "argument 's' is passed by value as S, a type hostarray can't pass" in msg, msg
        assert "a S scalar" not in msg


def test_limit_and_requested_have_one_length_per_rule(cl_device) -> None:
    # (local_size=(1, 1, 8192) gave limit=(4096,), requested=(8192,); a required
    # work-group size gave tuples of different lengths)
    prg = ha.Program("__kernel void k(__global float *x) { }\n"
                     "__attribute__((reqd_work_group_size(4, 1, 1)))\n"
                     "__kernel void r(__global float *x) { }\n"
                     "__attribute__((reqd_work_group_size(2, 2, 1)))\n"
                     "__kernel void r2(__global float *x) { }", device=cl_device)
    x = ha.zeros(8, dtype=ha.float32, device=cl_device)
    items = tuple(int(v) for v in cl_device._cl_device.max_work_item_sizes)
    big = items[2] * 2
    with pytest.raises(errors.BadLaunch) as info:
        prg.k((1, 1, big), x, local_size=(1, 1, big))
    assert info.value.limit == items and info.value.requested == (1, 1, big), info.value
    with pytest.raises(errors.BadLaunch) as info:
        prg.r((8,), x, local_size=(8,))
    assert info.value.limit == (4,) and info.value.requested == (8,), info.value
    with pytest.raises(errors.BadLaunch) as info:
        prg.r2((8,), x)
    assert info.value.limit == (2, 2, 1) and info.value.requested == (8, 1, 1), info.value


def test_calls_python_would_refuse_are_bad_launches_with_the_signature(scale, cl_device) -> None:
    # (Python's bare TypeError: a missing global size, keyword arguments)
    x = ha.zeros(4, dtype=ha.float32, device=cl_device)
    ha.reset_stats()
    call = "call scale(global_size, x, a, local_size=None)"
    for f, text in ((lambda: scale(), "without a global size"),
                    (lambda: scale(x.shape, x=x, a=2.0), "not as keywords (x=, a=)"),
                    (lambda: scale(x.shape, x, a=2.0), "not as keywords (a=)"),
                    # a positional local size, pyopencl's habit, with no queue
                    (lambda: scale(x.shape, (4,), x, 2.0),
                     "the (4,) after the global size looks like pyopencl's local size"),
                    # (a plain int could be the first argument too: both readings)
                    (lambda: scale(x.shape, 4, x, 2.0),
                     "one too many; if the 4 after the global size is pyopencl's local size")):
        with pytest.raises(errors.BadLaunch) as info:
            f()
        assert text in str(info.value) and call in str(info.value), str(info.value)
    assert ha.stats().launches == 0 and ha.stats().publishes == 0
    np.testing.assert_array_equal(np.asarray(x), np.zeros(4, np.float32))


def test_copy_false_says_why_it_needs_a_copy() -> None:
    # (it said "a ndarray can't be shared without a copy; pass copy=None")
    with pytest.raises(ValueError) as info:
        ha.asarray(np.arange(3), dtype=ha.float32, copy=False)
    assert str(info.value) == ("an ndarray can't be shared without a copy (converting its int64 "
                               "elements to float32 makes new ones); pass copy=None")
    with pytest.raises(ValueError, match=r"^a list can't be shared without a copy \(it exposes"):
        ha.asarray([1.0, 2.0], copy=False)


def test_scalars_convert_as_kernel_call_documents(cl_device) -> None:
    # (the docstring said every scalar converts "exactly or refused"; floats round)
    doc = ha.Kernel.__call__.__doc__
    assert "rounded to the nearest value of that type" in doc and "1e300" in doc
    prg = ha.Program("__kernel void c(__global float *y, const float a, const int i) "
                     "{ y[0] = a; y[1] = i; }", device=cl_device)
    y = ha.zeros(2, dtype=ha.float32, device=cl_device)
    for a, i, want in ((0.1, 1, [np.float32(0.1), 1]), (16777217, 2.0, [16777216.0, 2]),
                       (float("inf"), True, [np.inf, 1])):
        prg.c((1,), y, a, i).wait()
        assert np.asarray(y).tolist() == [float(w) for w in want]
    for a, i in ((1e300, 1), (True, 1), (1j, 1), (None, 1), (1.0, 1.5), (1.0, 2**31)):
        with pytest.raises(errors.BadLaunch):
            prg.c((1,), y, a, i)


def test_the_reference_pages_say_what_was_missing() -> None:
    # (issue 24's review: devices() said list, the dunders had no sections, Device did not
    # list link and runtime, show_config pointed at a private function, no Raises for inv
    # and reshape)
    assert ha.devices.__doc__ and "tuple of Device" in ha.devices.__doc__
    assert isinstance(ha.devices(), tuple)
    for name in ("__dlpack__", "__getitem__", "__setitem__", "__array_namespace__"):
        doc = getattr(ha.HostPtrArray, name).__doc__
        assert "Parameters\n" in doc and "Examples\n" in doc, name
    assert "api_version" in ha.HostPtrArray.__array_namespace__.__doc__
    for p in ("stream", "max_version", "dl_device", "copy"):
        assert f"{p} :" in ha.HostPtrArray.__dlpack__.__doc__, p
    assert "link : str or None" in ha.Device.__doc__ and "runtime : " in ha.Device.__doc__
    assert "hostarray._config" not in ha.show_config.__doc__
    assert "LinAlgError" in ha.linalg.inv.__doc__.split("Raises")[1]
    assert "ValueError" in ha.reshape.__doc__.split("Raises")[1]


def test_full_refuses_a_fill_value_of_a_type_hostarray_does_not_hold() -> None:
    # (ha.full(2, "a") made a str array that asarray would have refused)
    with pytest.raises(TypeError, match="hostarray holds bool and numeric data only"):
        ha.full(2, "a")
    assert "Raises" in ha.full.__doc__ and "Raises" in ha.zeros.__doc__
    assert ha.full(2, 7).tolist() == [7, 7]
