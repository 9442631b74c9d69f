"""Sphinx directives that build tables from hostarray's own code at build time.

* ``array-api-coverage``: every name of the array API standard (from
  ``array_api_tests/spec_signatures.py``), whether hostarray has it, whether
  its signature matches the spec's, and any documented deviation.
* ``refusal-table``: the kinds of :class:`hostarray.hostptr.Refusal` with the
  message :func:`hostarray.hostptr.refusal_message` gives for each.

Both build docutils table nodes from the code itself, so the pages can never
drift from it.
"""

from __future__ import annotations

import importlib
import inspect
from collections.abc import Callable, Iterable
from typing import Any

from docutils import nodes
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


def _coverage_rows(names: dict[str, str], lookup: Callable[[str], Any],
                   deviations: dict[str, str], prefix: str) -> tuple[list[list[str]], int]:
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
        rows.append([f"``{name}``", f"``{spec_sig}``", status, note])
    return rows, present


class ArrayApiCoverage(SphinxDirective):
    """Tables of the array API standard's names and hostarray's coverage."""

    has_content = False

    def run(self) -> list[nodes.Node]:
        import hostarray as ha
        from array_api_tests import spec_signatures as spec

        deviations = _deviations()

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
        total_all = present_all = differ = 0
        for title, names, lookup, prefix in sections:
            rows, present = _coverage_rows(names, lookup, deviations, prefix)
            total_all += len(rows)
            present_all += present
            differ += sum(r[2] == "yes, signature differs" for r in rows)
            summary.append([title, str(present), str(len(rows))])
            tables.append(_table(title, ["name", "signature in the standard", "hostarray",
                                         "notes"], rows, [20, 40, 15, 25]))
        attrs = [[f"``{a}``", "yes" if hasattr(ha.HostPtrArray, a) else "missing"]
                 for a in spec.ARRAY_ATTRIBUTES]
        dtypes = [[f"``{d}``", "yes" if hasattr(ha, d) else "missing"] for d in spec.DTYPES]
        consts = [[f"``{c}``", "yes" if hasattr(ha, c) else "missing"] for c in spec.CONSTANTS]
        tables.append(_table("array object attributes", ["attribute", "hostarray"], attrs,
                             [50, 50]))
        tables.append(_table("data types", ["name", "hostarray"], dtypes, [50, 50]))
        tables.append(_table("constants", ["name", "hostarray"], consts, [50, 50]))
        summary.append(["all functions and methods", str(present_all), str(total_all)])
        summary.append(["signatures that differ from the standard", str(differ), ""])
        summary.append(["documented deviations", str(len(deviations)), ""])
        head = _table("summary (generated when these docs were built)",
                      ["section", "present", "in the standard"], summary, [60, 20, 20])
        every = _table("every documented deviation (hostarray._api.DEVIATIONS and the docs' "
                       "own list)", ["name", "deviation"],
                       [[f"``{k}``", v] for k, v in sorted(deviations.items())], [25, 75])
        return [head, every, *tables]


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


def setup(app: Sphinx) -> dict[str, Any]:
    app.add_directive("array-api-coverage", ArrayApiCoverage)
    app.add_directive("refusal-table", RefusalTable)
    return {"version": "1", "parallel_read_safe": True, "parallel_write_safe": True}
