"""Sphinx directives that build tables from hostarray's own code at build time.

* ``array-api-coverage``: every name of the array API standard (from
  ``array_api_tests/spec_signatures.py``), whether hostarray has it, whether
  its signature matches the spec's, whether it runs on the device (from
  ``hostarray._compute.device_functions()``, which each device-path module
  fills with the names it computes) and any documented deviation.
* ``device-functions``: every function the device path computes (the same
  registry), with what of it stays on the host.
* ``numpy-spellings``: the numpy functions, ufuncs and ufunc methods that are the
  namespace's calls (``hostarray._numpy_spelling.spellings()``), and the ndarray-style
  methods that follow them.
* ``refusal-table``: the kinds of :class:`hostarray.hostptr.Refusal` with the
  message :func:`hostarray.hostptr.refusal_message` gives for each.
* ``hostarray-operators``: a reference entry for every operator method of
  :class:`hostarray.HostPtrArray` (from ``hostarray._api.elementwise``'s table).
* ``hostarray-ndarray-methods``: a reference entry for every numpy-style method
  and attribute ``hostarray._methods`` attaches to the array (``x.sum``, ``x.real``).

The first three build docutils table nodes from the code itself, so the pages can
never drift from it; the last two write reST entries (``.. py:method:: HostPtrArray.NAME``) from
the code's own tables; use them in an ``eval-rst`` block after
``.. currentmodule:: hostarray``.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterable
from typing import Any

from docutils import nodes
from docutils.statemachine import StringList
from sphinx.application import Sphinx
from sphinx.util.docutils import SphinxDirective

# Deviations documented by hand (qualified name -> one sentence), merged with any
# ``DEVIATIONS`` mapping the namespace provides (``hostarray.DEVIATIONS`` or
# ``hostarray._api.DEVIATIONS``), which wins for a name both list.
HAND_KEPT_DEVIATIONS: dict[str, str] = {
    "HostPtrArray.to_device": (
        "The result shares x's memory (zero-copy) wherever the target device's alignment "
        "allows, where the standard describes a copy: a write through either is seen "
        "through both. stream must be None (hostarray has no streams)."),
    "HostPtrArray.__dlpack_device__": (
        "Always (kDLCPU, 0): the data is host memory, also for arrays attached to an "
        "OpenCL device (x.device says which)."),
    "HostPtrArray.__dlpack__": (
        "stream must be None and dl_device, if given, (kDLCPU, 0); otherwise BufferError. "
        "A zero-copy export is an escape (see the coherence model) while the consumer "
        "holds it."),
    "HostPtrArray.__iter__": (
        "Iterating a 1-D array gives numpy scalars, as numpy does; the standard defines "
        "iteration as x[i], a 0-D array."),
}


def _deviations() -> dict[str, str]:
    import hostarray

    merged = dict(HAND_KEPT_DEVIATIONS)
    for where in (hostarray, getattr(hostarray, "_api", None)):
        dev = getattr(where, "DEVIATIONS", None)
        if isinstance(dev, dict):
            merged.update({str(k): str(v) for k, v in dev.items()})
    return merged


def _bare_signature(obj: Any) -> str | None:
    """``obj``'s signature without annotations, as the spec writes it."""
    try:
        sig = inspect.signature(obj)
    except (TypeError, ValueError):
        return None
    params = [p.replace(annotation=inspect.Parameter.empty) for p in sig.parameters.values()]
    return str(sig.replace(parameters=params, return_annotation=inspect.Signature.empty))


def _normalise(sig: str) -> str:
    return sig.replace('"', "'").replace(" ", "")


def _cell(text: str) -> nodes.entry:
    """A table cell; ````...```` segments become inline literals."""
    para = nodes.paragraph()
    for i, part in enumerate(text.split("``")):
        if part:
            para += nodes.literal(part, part) if i % 2 else nodes.Text(part)
    return nodes.entry("", para)


def _table(title: str, header: list[str], rows: Iterable[list[str]],
           widths: list[int]) -> nodes.table:
    """A docutils table (built as nodes: MyST pages would read reST source as Markdown)."""
    table = nodes.table(classes=["hostarray-generated"])
    table += nodes.title(title, title)
    group = nodes.tgroup(cols=len(header))
    table += group
    for w in widths:
        group += nodes.colspec(colwidth=w)
    head = nodes.thead()
    head += nodes.row("", *[_cell(h) for h in header])
    group += head
    body = nodes.tbody()
    for r in rows:
        body += nodes.row("", *[_cell(c) for c in r])
    group += body
    return table


def device_functions() -> dict[str, str]:
    """The device path's functions (qualified names as the coverage table writes them:
    ``add``, ``linalg.matmul``) with their notes, plus the array's operator methods
    (``HostPtrArray.__add__``) of each, from the operator table."""
    from hostarray._api import elementwise as ew
    from hostarray._compute import device_functions as registered

    funcs = registered()
    out = dict(funcs)
    ops = [(name, o) for name, _, _, o, _ in ew.TABLE] + [(n, o) for n, _, o in
                                                          ew.OPERATOR_ONLY]
    for name, dunders in ops:
        if name in funcs:
            out.update({f"HostPtrArray.{d}": funcs[name] for d in dunders})
    return out


def _device_cell(qual: str, obj: Any, on_device: dict[str, str]) -> str:
    if obj is None or qual not in on_device:
        return "no"
    note = on_device[qual]
    return f"yes ({note})" if note else "yes"


def _coverage_rows(names: dict[str, str], lookup: Callable[[str], Any],
                   deviations: dict[str, str], prefix: str,
                   on_device: dict[str, str]) -> tuple[list[list[str]], int]:
    rows, present = [], 0
    for name, spec_sig in sorted(names.items()):
        obj = lookup(name)
        qual = prefix + name
        if obj is None:
            status = "missing"
            note = deviations.get(qual, "")
        else:
            present += 1
            actual = _bare_signature(obj)
            note = deviations.get(qual, "")
            if actual is None or _normalise(actual) == _normalise(spec_sig):
                status = "yes"
            else:
                status = "yes, signature differs"
                note = (note + " " if note else "") + f"hostarray: ``{actual}``"
            if qual in deviations and status == "yes":
                status = "yes, with a deviation"
        rows.append([f"``{name}``", f"``{spec_sig}``", status,
                     _device_cell(qual, obj, on_device), note])
    return rows, present


class ArrayApiCoverage(SphinxDirective):
    """Tables of the array API standard's names and hostarray's coverage."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        import hostarray as ha
        from array_api_tests import spec_signatures as spec

        deviations = _deviations()
        on_device = device_functions()

        def attr(module: Any) -> Callable[[str], Any]:
            return lambda name: getattr(module, name, None) if module is not None else None

        def submodule(name: str) -> Any:
            try:
                return importlib.import_module(f"hostarray.{name}")
            except ImportError:
                return None

        info_obj = None
        if hasattr(ha, "__array_namespace_info__"):
            info_obj = ha.__array_namespace_info__()

        sections: list[tuple[str, dict[str, str], Callable[[str], Any], str]] = []
        for section, names in spec.MAIN_NAMESPACE.items():
            sections.append((section.replace("_", " "), names, attr(ha), ""))
        sections.append(("linalg extension", spec.LINALG, attr(submodule("linalg")), "linalg."))
        sections.append(("fft extension", spec.FFT, attr(submodule("fft")), "fft."))
        sections.append(("inspection: __array_namespace_info__()", spec.INFO, attr(info_obj),
                         "info."))
        sections.append(("array object methods", spec.ARRAY_METHODS, attr(ha.HostPtrArray),
                         "HostPtrArray."))

        tables: list[nodes.table] = []
        summary: list[list[str]] = []
        total_all = present_all = differ = device_all = 0
        for title, names, lookup, prefix in sections:
            rows, present = _coverage_rows(names, lookup, deviations, prefix, on_device)
            total_all += len(rows)
            present_all += present
            differ += sum(r[2] == "yes, signature differs" for r in rows)
            on_dev = sum(r[3] != "no" for r in rows)
            device_all += on_dev
            summary.append([title, str(present), str(on_dev), str(len(rows))])
            tables.append(_table(title, ["name", "signature in the standard", "hostarray",
                                         "runs on the device", "notes"], rows,
                                 [18, 34, 12, 14, 22]))
        attrs = [[f"``{a}``", "yes" if hasattr(ha.HostPtrArray, a) else "missing"]
                 for a in spec.ARRAY_ATTRIBUTES]
        dtypes = [[f"``{d}``", "yes" if hasattr(ha, d) else "missing"] for d in spec.DTYPES]
        consts = [[f"``{c}``", "yes" if hasattr(ha, c) else "missing"] for c in spec.CONSTANTS]
        tables.append(_table("array object attributes", ["attribute", "hostarray"], attrs,
                             [50, 50]))
        tables.append(_table("data types", ["name", "hostarray"], dtypes, [50, 50]))
        tables.append(_table("constants", ["name", "hostarray"], consts, [50, 50]))
        summary.append(["all functions and methods", str(present_all), str(device_all),
                        str(total_all)])
        summary.append(["signatures that differ from the standard", str(differ), "", ""])
        summary.append(["documented deviations", str(len(deviations)), "", ""])
        head = _table("summary (generated when these docs were built)",
                      ["section", "present", "runs on the device", "in the standard"],
                      summary, [52, 16, 16, 16])
        every = _table("every documented deviation (hostarray._api.DEVIATIONS and the docs' "
                       "own list)", ["name", "deviation"],
                       [[f"``{k}``", v] for k, v in sorted(deviations.items())], [25, 75])
        return [head, every, *tables]


class DeviceFunctionsTable(SphinxDirective):
    """The namespace functions the device path computes (``hostarray._compute``'s
    registry, operator methods left out: they follow their function)."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        from hostarray._compute import device_functions as registered

        funcs = registered()
        by_note: dict[str, list[str]] = {}
        for name, note in sorted(funcs.items()):
            by_note.setdefault(note, []).append(name)
        # one row per note: most functions share one ("float16, complex on host")
        rows = [[", ".join(f"``{n}``" for n in names), note or "nothing"]
                for note, names in sorted(by_note.items(), key=lambda kv: -len(kv[1]))]
        title = (f"the {len(funcs)} functions the device path computes (generated from "
                 f"hostarray._compute.DEVICE_FUNCTIONS)")
        return [_table(title, ["functions", "what stays on the host"], rows, [70, 30])]


class NumpySpellingsTable(SphinxDirective):
    """numpy's spellings that are the namespace's calls (``hostarray._numpy_spelling``),
    and the array's methods of the same names, which follow their function."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        from hostarray._methods import METHODS
        from hostarray._numpy_spelling import spellings

        sp = spellings()
        methods = sorted(n for n, f in METHODS.items()
                         if getattr(f, "__name__", None) in sp["functions"]
                         or n in ("astype", "clip", "copy", "reshape", "transpose"))
        rows = [
            ["numpy functions", ", ".join(f"``np.{n}``" for n in sp["functions"])],
            ["ufuncs, called", ", ".join(f"``np.{n}``" for n in sp["ufuncs"])],
            ["``ufunc.reduce``", ", ".join(f"``np.{n}.reduce``" for n in sp["reduce"])],
            ["``ufunc.accumulate``", ", ".join(f"``np.{n}.accumulate``"
                                               for n in sp["accumulate"])],
            ["the array's methods", ", ".join(f"``x.{n}()``" for n in methods)],
        ]
        title = ("numpy's spellings that are the namespace's calls (generated from "
                 "hostarray._numpy_spelling)")
        return [_table(title, ["kind", "spellings"], rows, [20, 80])]


class RefusalTable(SphinxDirective):
    """The refusal kinds with the message hostarray gives for an example of each."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        from hostarray.hostptr import Refusal, refusal_message

        examples = [
            ("device_type", "the device can't use host memory (``attach`` to ``\"cpu\"``)",
             "``device_type``", Refusal("device_type", device_type="host")),
            ("alignment", "host memory below ``max(dev.host_alignment, itemsize)`` (the "
             "device's host-pointer alignment, found by a probe: never less than the element "
             "size), or a view given to a kernel or ``cl_buffer`` that starts off a sub-buffer "
             "origin (``dev.alignment``, ``CL_DEVICE_MEM_BASE_ADDR_ALIGN``)",
             "``address``, ``required``", Refusal("alignment", address=0x7F3A12345005,
                                                  required=4)),
            ("size", "zero bytes, or more than ``CL_DEVICE_MAX_MEM_ALLOC_SIZE``",
             "``size``, ``limit``", Refusal("size", size=3 * 2**30, limit=2**31)),
            ("size", "(zero bytes)", "``size``, ``limit``", Refusal("size", size=0, limit=2**31)),
            ("backend", "the driver refused the buffer", "``code``, ``text``",
             Refusal("backend", code=-61, text="CL_INVALID_BUFFER_SIZE")),
        ]
        rows = [[f"``{kind}``", when, fields, refusal_message(r)]
                for kind, when, fields, r in examples]
        return [_table("Refused: reason.kind, when, fields, and the message (generated from "
                       "refusal_message)", ["kind", "when", "fields", "message"], rows,
                       [12, 30, 16, 42])]


# -- reference entries of the array's operators and numpy-style members ----------------------

# Python's spelling of each binary operator, by the namespace function behind it.
_SYMBOLS = {
    "add": "+", "subtract": "-", "multiply": "*", "divide": "/", "floor_divide": "//",
    "remainder": "%", "pow": "**", "matmul": "@", "bitwise_and": "&", "bitwise_or": "|",
    "bitwise_xor": "^", "bitwise_left_shift": "<<", "bitwise_right_shift": ">>",
    "equal": "==", "not_equal": "!=", "less": "<", "less_equal": "<=", "greater": ">",
    "greater_equal": ">=",
}
_UNARY_SPELLING = {"abs": "abs(x)", "negative": "-x", "positive": "+x", "bitwise_invert": "~x"}


def operator_entries() -> list[tuple[str, str, str]]:
    """``(dunder, signature, text)`` for every operator method of ``HostPtrArray``, from
    the table the operators are built from (``hostarray._api.elementwise``)."""
    from hostarray._api import elementwise as ew

    rows = [(name, ops, params) for name, _, params, ops, _ in ew.TABLE if ops]
    rows += [(name, ops, ew.BINARY) for name, _, ops in ew.OPERATOR_ONLY]
    out = []
    for name, ops, params in rows:
        def call(args: str, name: str = name) -> str:
            return f"``ha.{name}({args})``"
        if params == ew.UNARY:
            out.append((ops[0], "()",
                        f"``{_UNARY_SPELLING[name]}``: {call('x')}, a new array on ``x``'s "
                        f"device."))
            continue
        sym = _SYMBOLS[name]
        if len(ops) == 1:  # a comparison
            out.append((ops[0], "(other, /)",
                        f"``x {sym} other``: {call('x, other')}, a ``bool`` array. "
                        f"``other`` is an array (broadcast) or a Python scalar; for other "
                        f"types it returns ``NotImplemented``."))
            continue
        op, rop, iop = ops
        out.append((op, "(other, /)",
                    f"``x {sym} other``: {call('x, other')}. ``other`` is a "
                    f"``HostPtrArray`` (broadcast; on the same device, or on the host), a "
                    f"Python scalar (weak: it does not widen ``x``'s data type) or a numpy "
                    f"array or scalar; for other types it returns ``NotImplemented``, so "
                    f"the other operand's own operator can answer. The result is a new "
                    f"array with the promoted data type, on the operands' device."))
        out.append((rop, "(other, /)",
                    f"``other {sym} x``, where ``other`` is a Python scalar or a numpy array "
                    f"or scalar: {call('other, x')}."))
        out.append((iop, "(other, /)",
                    f"``x {sym}= other``: {call('x, other')} written into ``x``'s own "
                    f"memory (a host write: a device that used ``x`` gets the new bytes "
                    f"before its next launch) and returns ``x``. The result keeps ``x``'s "
                    f"data type and shape: a result numpy can't cast to it under "
                    f"``same_kind`` casting (``int_x += 1.5``) raises numpy's "
                    f"``UFuncTypeError`` (a ``TypeError``), one that would broadcast ``x`` "
                    f"to a larger shape raises ``ValueError``, and so does a read-only "
                    f"``x`` (read-only memory, a broadcast view)."))
    return out


# What each numpy-style member does on a HostPtrArray (hand-kept: the notes that matter
# for hostarray, views and copies, scalars and in-place writes); members of hostarray's
# tables that are missing here still get an entry with the generic sentence.
_NDARRAY_NOTES = {
    "reshape": ("(*shape, order='C')", "``np.reshape``: the same elements in ``shape`` "
                "(``x.reshape(2, 3)`` or ``x.reshape((2, 3))``); a view of ``x``'s memory "
                "where numpy can make one, else a copy."),
    "transpose": ("(*axes)", "``np.transpose``: the axes permuted (reversed if none are "
                  "given); a view."),
    "swapaxes": ("(axis1, axis2)", "``np.swapaxes``: two axes interchanged; a view."),
    "squeeze": ("(axis=None)", "``np.squeeze``: axes of length one removed; a view."),
    "ravel": ("(order='C')", "``np.ravel``: the elements in one dimension; a view of a "
              "contiguous array, a copy otherwise."),
    "flatten": ("()", "The elements in one dimension, always a copy (new memory on ``x``'s "
                "device)."),
    "astype": ("(dtype, *args, copy=True, **kwargs)", "``np.astype``: a copy converted to "
               "``dtype`` (numpy's casting rules); ``x`` itself when ``dtype`` is "
               "``x.dtype`` and ``copy=False``."),
    "copy": ("(order='C')", "A copy of the data in new page-aligned memory, on ``x``'s "
             "device (C order whatever ``order`` says)."),
    "view": ("(dtype=None)", "A view of the same memory, its bytes read as ``dtype`` if "
             "given (as ``ndarray.view``)."),
    "sort": ("(axis=-1, kind=None, order=None)", "Sorts ``x`` in place along ``axis`` "
             "(a host write of ``x``'s memory) and returns ``None``."),
    "fill": ("(value)", "Sets every element to ``value`` in place; a whole overwrite, so "
             "data a kernel wrote is not copied back first."),
    "sum": ("(*args, **kwargs)", "``np.sum``: a numpy scalar for a full reduction, a "
            "``HostPtrArray`` with ``axis=``."),
    "prod": ("(*args, **kwargs)", "``np.prod``: a numpy scalar for a full reduction, a "
             "``HostPtrArray`` with ``axis=``."),
    "mean": ("(*args, **kwargs)", "``np.mean``: a numpy scalar for a full reduction, a "
             "``HostPtrArray`` with ``axis=``."),
    "std": ("(*args, **kwargs)", "``np.std`` (``ddof=`` as numpy's): a numpy scalar for a "
            "full reduction, a ``HostPtrArray`` with ``axis=``."),
    "var": ("(*args, **kwargs)", "``np.var`` (``ddof=`` as numpy's): a numpy scalar for a "
            "full reduction, a ``HostPtrArray`` with ``axis=``."),
    "min": ("(*args, **kwargs)", "``np.min``: a numpy scalar for a full reduction, a "
            "``HostPtrArray`` with ``axis=``."),
    "max": ("(*args, **kwargs)", "``np.max``: a numpy scalar for a full reduction, a "
            "``HostPtrArray`` with ``axis=``."),
    "argmin": ("(*args, **kwargs)", "``np.argmin``: the flat index (a numpy integer), or a "
               "``HostPtrArray`` of indices with ``axis=``."),
    "argmax": ("(*args, **kwargs)", "``np.argmax``: the flat index (a numpy integer), or a "
               "``HostPtrArray`` of indices with ``axis=``."),
    "any": ("(*args, **kwargs)", "``np.any``: a numpy ``bool_`` for a full reduction, a "
            "``HostPtrArray`` with ``axis=``."),
    "all": ("(*args, **kwargs)", "``np.all``: a numpy ``bool_`` for a full reduction, a "
            "``HostPtrArray`` with ``axis=``."),
    "cumsum": ("(*args, **kwargs)", "``np.cumsum``: running sums, a new array (flattened "
               "without ``axis=``)."),
    "cumprod": ("(*args, **kwargs)", "``np.cumprod``: running products, a new array "
                "(flattened without ``axis=``)."),
    "clip": ("(min=None, max=None, **kwargs)", "``np.clip``: values limited to "
             "``[min, max]``, a new array."),
    "round": ("(decimals=0)", "``np.round``: rounded to ``decimals`` places (halves to "
              "even), a new array."),
    "dot": ("(b)", "``np.dot(x, b)``: the dot product, a new array (a numpy scalar for "
            "two 1-D arrays)."),
    "nonzero": ("()", "``np.nonzero``: a tuple with one index array per dimension "
                "(``HostPtrArray`` objects)."),
    "argsort": ("(*args, **kwargs)", "``np.argsort``: the indices that sort ``x``, a new "
                "array."),
    "searchsorted": ("(v, side='left', sorter=None)", "``np.searchsorted`` on a sorted 1-D "
                     "``x``: insertion indices (a numpy integer for a scalar ``v``)."),
    "take": ("(indices, axis=None, **kwargs)", "``np.take``: the elements at ``indices``, a "
             "new array."),
    "repeat": ("(repeats, axis=None)", "``np.repeat``: each element repeated, a new "
               "array."),
    "diagonal": ("(offset=0, axis1=0, axis2=1)", "``np.diagonal``: the diagonal, a "
                 "read-only view (as numpy's)."),
    "trace": ("(*args, **kwargs)", "``np.trace``: the sum along the diagonal, a numpy "
              "scalar for a 2-D ``x``."),
    "compress": ("(condition, axis=None, **kwargs)", "``np.compress(condition, x)``: the "
                 "slices where ``condition`` is true, a new array."),
    "conj": ("()", "``np.conjugate``: the complex conjugate, a new array."),
    "conjugate": ("()", "``np.conjugate``: the complex conjugate, a new array (same as "
                  "``conj``)."),
}
_NDARRAY_ATTRIBUTE_NOTES = {
    "real": "``np.real``: the real part; a view of ``x``'s memory (``x`` itself viewed "
            "for a real ``x``).",
    "imag": "``np.imag``: the imaginary part; a view of ``x``'s memory for a complex "
            "``x``, new zeros for a real one.",
    "itemsize": "Bytes per element (an ``int``), as ``x.dtype.itemsize``.",
    "strides": "Bytes to step in each dimension (a tuple of ``int``), as "
               "``ndarray.strides``.",
}
_GENERIC = ("numpy's ``ndarray.{0}`` on the host data; array results are ``HostPtrArray`` "
            "objects on ``x``'s device.")


def ndarray_entries() -> list[tuple[str, str, str | None, str]]:
    """``(kind, name, signature or None, text)`` for every numpy-style method and
    attribute ``hostarray._methods`` attaches to ``HostPtrArray``."""
    import hostarray as ha
    from hostarray import _methods

    out: list[tuple[str, str, str | None, str]] = []
    for name in _methods.METHODS:
        if name in ha.HostPtrArray.__dict__ and not getattr(
                ha.HostPtrArray.__dict__[name], "_ndarray_method", False):
            continue  # the class defines it itself (autodoc documents it)
        sig, text = _NDARRAY_NOTES.get(name, ("(*args, **kwargs)", _GENERIC.format(name)))
        out.append(("method", name, sig, text))
    for name in _methods.ATTRIBUTES:
        out.append(("attribute", name, None,
                    _NDARRAY_ATTRIBUTE_NOTES.get(name, _GENERIC.format(name))))
    return out


class _ReSTEntries(SphinxDirective):
    """Writes reST entries and parses them in place (in an ``eval-rst`` block)."""

    has_content = False

    def lines(self) -> list[str]:
        raise NotImplementedError

    def run(self) -> list[nodes.Node]:
        node = nodes.container()
        source = self.get_source_info()[0]
        self.state.nested_parse(StringList(self.lines(), source=source), self.content_offset,
                                node)
        return node.children


class OperatorReference(_ReSTEntries):
    def lines(self) -> list[str]:
        out: list[str] = []
        for dunder, sig, text in operator_entries():
            out += [f".. py:method:: HostPtrArray.{dunder}{sig}", "", f"   {text}", ""]
        return out


class NdarrayMethodsReference(_ReSTEntries):
    def lines(self) -> list[str]:
        out: list[str] = []
        from hostarray import _methods

        for kind, name, sig, text in ndarray_entries():
            head = f".. py:{kind}:: HostPtrArray.{name}{sig or ''}"
            out += [head, "", f"   {text}", "", "   >>> import hostarray as ha"]
            for src, result in _methods.EXAMPLES[name]:
                out += [f"   >>> {src}", f"   {result}"]
            out.append("")
        return out


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("array-api-coverage", ArrayApiCoverage)
    app.add_directive("device-functions", DeviceFunctionsTable)
    app.add_directive("numpy-spellings", NumpySpellingsTable)
    app.add_directive("refusal-table", RefusalTable)
    app.add_directive("hostarray-operators", OperatorReference)
    app.add_directive("hostarray-ndarray-methods", NdarrayMethodsReference)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
