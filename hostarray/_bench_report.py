"""What ``hostarray bench`` measured, as text: sizes, tables, CSV, JSON and plots.

:mod:`hostarray.bench` measures; this module reads and writes what it measured:

* :func:`parse_size` and :func:`format_size`: sizes as written (``GB`` is 10**9 bytes,
  ``GiB`` 2**30), for the command line and the tables;
* :func:`format_tables`: lines of at most 100 characters, each table followed by a
  legend of its columns (also for the scripts in ``benchmarks/``, through ``_table``,
  ``_legend`` and ``_wrap``);
* :func:`format_csv`: one long-form CSV of every number, a row each;
* :func:`format_json`, :func:`plot`, and :func:`check_outputs`, which refuses an output
  that can't be written (a missing folder, ``--plot`` without matplotlib) before any
  measuring.

The public names are also :mod:`hostarray.bench`'s.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import sys
import textwrap
from decimal import Decimal
from typing import Any

from . import _text

__all__ = ["parse_size", "format_size", "format_tables", "print_tables", "format_csv",
           "format_json", "plot", "check_outputs", "CSV_COLUMNS", "WIDTH"]

KiB, MiB, GiB = 1 << 10, 1 << 20, 1 << 30

_DECIMAL = {"kb": 10**3, "mb": 10**6, "gb": 10**9, "tb": 10**12}
_BINARY = {"kib": 2**10, "mib": 2**20, "gib": 2**30, "tib": 2**40}
_UNITS = {"": 1, "b": 1, **_DECIMAL, **_BINARY}
_UNIT_HELP = "B, KB, MB, GB, TB (powers of 1000) or KiB, MiB, GiB, TiB (powers of 1024)"


def parse_size(text: str | int) -> int:
    """Bytes named by ``text``, read as written: ``"1GB"`` is 10**9, ``"1GiB"`` 2**30.

    ``KB``, ``MB``, ``GB`` and ``TB`` are powers of 1000 and ``KiB``, ``MiB``,
    ``GiB`` and ``TiB`` powers of 1024; ``B`` or no unit means bytes.  Units are
    case-insensitive (``"1gb"`` is ``"1GB"``) and a space may separate the number
    from its unit (``"1 GiB"``).  A fraction is allowed where it names whole bytes
    (``"1.5KiB"`` is 1536).  A bare ``k``, ``M``, ``G`` or ``T`` is refused: it could
    mean either power.

    Parameters
    ----------
    text : str or int
        The size; an ``int`` is a number of bytes already.

    Returns
    -------
    int
        The number of bytes.

    Raises
    ------
    ValueError
        If ``text`` is not a number followed by one of the units above, names a
        fraction of a byte, or is negative.

    Examples
    --------
    >>> from hostarray.bench import parse_size
    >>> parse_size("64MiB"), parse_size("1GB"), parse_size("1 GiB"), parse_size("4096")
    (67108864, 1000000000, 1073741824, 4096)
    >>> parse_size("2g")
    Traceback (most recent call last):
    ...
    ValueError: ambiguous size '2g': write 2GB (2000000000 bytes) or 2GiB (2147483648 bytes)
    """
    if isinstance(text, int) and not isinstance(text, bool):
        if text < 0:
            raise ValueError(f"a size cannot be negative: {text}")
        return text
    m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([A-Za-z]*)\s*", str(text))
    if not m:
        raise ValueError(f"not a size: {text!r} (write e.g. 64MiB, 1GB or 4096; units: "
                         f"{_UNIT_HELP})")
    number, unit = Decimal(m.group(1)), m.group(2)
    key = unit.lower()
    if key in ("k", "m", "g", "t"):
        dec, binary = number * _DECIMAL[key + "b"], number * _BINARY[key + "ib"]
        raise ValueError(f"ambiguous size {text!r}: write {m.group(1)}{key.upper()}B "
                         f"({dec:.0f} bytes) or {m.group(1)}{key.upper()}iB ({binary:.0f} bytes)")
    if key not in _UNITS:
        raise ValueError(f"unknown size unit {unit!r} in {text!r}: use {_UNIT_HELP}")
    n = number * _UNITS[key]
    if n != n.to_integral_value():
        raise ValueError(f"{text!r} is not a whole number of bytes ({n.normalize():f} B)")
    return int(n)


def format_size(n: int) -> str:
    """``n`` bytes as a short string in powers of 1024, named so (``KiB``, ``MiB``, ...).

    The output reads back through :func:`parse_size` (to 6 significant digits).

    Examples
    --------
    >>> from hostarray.bench import format_size
    >>> format_size(4096), format_size(3 * 2**30), format_size(1000)
    ('4 KiB', '3 GiB', '1000 B')
    """
    for unit, f in (("TiB", 1 << 40), ("GiB", GiB), ("MiB", MiB), ("KiB", KiB)):
        if n >= f:
            return f"{n / f:g} {unit}"
    return f"{n} B"


WIDTH = _text.WIDTH
"""The widest line :func:`format_tables` writes, in characters (100)."""

_FASTER = "> 1: hostarray is faster, by that factor; < 1: hostarray is slower"


def _fmt_t(t: float) -> str:
    if t < 1e-3:
        return f"{t * 1e6:.1f} us"
    if t < 1:
        return f"{t * 1e3:.2f} ms"
    return f"{t:.2f} s"


def _fmt_ratio(x: float) -> str:
    if x >= 100:
        return f"{x:.0f}x"
    return f"{x:.2f}x" if x >= 0.01 else f"{x:.2g}x"


def _wrap(text: str, indent: str = "") -> list[str]:
    """``text`` wrapped to :data:`WIDTH` columns, later lines indented by ``indent``."""
    return textwrap.wrap(text, WIDTH, subsequent_indent=indent) or [""]


Row = list[str] | tuple[str, str]  # cells, or (first cell, a note across the other columns)


def _table(header: list[str], rows: list[Row], align: str | None = None,
           keep: int = 1) -> list[str]:
    """A plain-text table: two spaces between columns, a rule under the header.

    ``align`` has one letter per column, ``l`` or ``r`` (default: the first column
    left, the others right).  A row given as ``(first, note)`` writes ``note``
    across the other columns, wrapped.  A table wider than :data:`WIDTH` is split
    into several, each repeating the first ``keep`` columns.
    """
    align = align or "l" + "r" * (len(header) - 1)
    cells = [r for r in rows if isinstance(r, list)]
    widths = [max([len(h), *(len(r[i]) for r in cells)]) for i, h in enumerate(header)]
    if sum(widths) + 2 * (len(widths) - 1) > WIDTH and len(header) > keep + 1:
        groups: list[list[int]] = [[]]
        used = sum(widths[:keep]) + 2 * keep
        for i in range(keep, len(header)):
            if groups[-1] and used + widths[i] > WIDTH:
                groups.append([])
                used = sum(widths[:keep]) + 2 * keep
            groups[-1].append(i)
            used += widths[i] + 2
        if len(groups) > 1:
            out: list[str] = []
            for g in groups:
                cols = [*range(keep), *g]
                sub = [[r[i] for i in cols] if isinstance(r, list) else r for r in rows]
                out += _table([header[i] for i in cols], sub, "".join(align[i] for i in cols),
                              keep) + [""]
            return out[:-1]

    def line(values: list[str]) -> str:
        return "  ".join(v.rjust(w) if a == "r" else v.ljust(w)
                         for v, w, a in zip(values, widths, align)).rstrip()

    lines = [line(header), "  ".join("-" * w for w in widths)]
    for r in rows:
        if isinstance(r, list):
            lines.append(line(r))
        else:
            first = r[0].ljust(widths[0]) + "  "
            lines += textwrap.wrap(r[1], WIDTH, initial_indent=first,
                                   subsequent_indent=" " * len(first))
    return lines


def _legend(entries: list[tuple[str, str]]) -> list[str]:
    """``name  meaning`` lines under a table, the meanings aligned and wrapped."""
    w = max(len(k) for k, _ in entries)
    lines = []
    for k, text in entries:
        first = f"  {k.ljust(w)}  "
        # "> 1" and "< 1" stay on one line
        text = re.sub(r"([<>]=?) (\d)", "\\1\0\\2", text)
        lines += [ln.replace("\0", " ") for ln in textwrap.wrap(
            text, WIDTH, initial_indent=first, subsequent_indent=" " * len(first))]
    return lines


def _skipped(r: dict[str, Any]) -> tuple[str, str]:
    return (format_size(r["size"]), f"skipped: {r['skipped']}")


def _times_table(rows: list[dict[str, Any]], methods: list[tuple[str, str]]) -> list[str]:
    """Median times of ``methods`` (``(key in the result, column name)``) per size, then
    each method's time over the first method's (hostarray's)."""
    if not any("times" in r for r in rows):
        return ["(nothing measured)"]
    (base, bname), others = methods[0], methods[1:]
    header = ["size", *(name for _, name in methods), *(f"{n}/{bname}" for _, n in others)]
    out: list[Row] = []
    for r in rows:
        if "skipped" in r:
            out.append(_skipped(r))
            continue
        t = r["times"]
        out.append([format_size(r["size"]), *(_fmt_t(t[k]) for k, _ in methods),
                    *(_fmt_ratio(t[k] / t[base]) for k, _ in others)])
    return _table(header, out)


def _ratio_legend(methods: list[tuple[str, str]], verdict: str = _FASTER
                  ) -> list[tuple[str, str]]:
    (_, bname), others = methods[0], methods[1:]
    return [(f"{n}/{bname}", f"{n} time / {bname} time ({verdict})") for _, n in others]


_ATTACH = [("ha of_numpy", "ha"), ("ha to_device (lazy)", "lazy"),
           ("cl.Buffer COPY_HOST_PTR", "cl.Buffer"), ("cla.to_device", "cla")]
_ATTACH_USED = [("ha of_numpy + kernel", "ha"), ("cl.Buffer COPY_HOST_PTR + kernel", "cl.Buffer"),
                ("cla.to_device + kernel", "cla")]
_ROUNDTRIP = [("ha", "ha"), ("cl enqueue_copy", "cl copy"), ("cla set/get", "cla")]


def _attach_parts(rows: list[dict[str, Any]]) -> list[str]:
    lazy_verdict = ("< 1: the lazy attach is faster than creating the buffer now, > 1: slower; "
                    "both are hostarray")
    legend = [("ha", "ha.hostptr.of_numpy(dev, a): hostarray creates the device buffer over "
                     "the numpy memory"),
              ("lazy", "x.to_device(dev) of a hostarray array: hostarray's lazy attach, the "
                       "buffer is made at the first launch"),
              ("cl.Buffer", "cl.Buffer(ctx, READ_ONLY | COPY_HOST_PTR, hostbuf=a): pyopencl "
                            "copies the data into a new buffer"),
              ("cla", "pyopencl.array.to_device(queue, a)")]
    legend += [("lazy/ha", f"lazy time / ha time ({lazy_verdict})")]
    legend += _ratio_legend(_ATTACH[:1] + _ATTACH[2:])
    used = [("ha, cl.Buffer, cla", "as above, each followed by a one-work-item kernel that "
                                   "reads the data, waited for")]
    used += _ratio_legend(_ATTACH_USED)
    return ["", "attach vs copy: time until the data is usable on the device",
            *_times_table(rows, _ATTACH), *_legend(legend),
            "", "attach vs copy, then a first kernel that reads the data, finished",
            *_times_table(rows, _ATTACH_USED), *_legend(used)]


def _roundtrip_parts(rows: list[dict[str, Any]]) -> list[str]:
    legend = [("ha", "x[...] = src; kernel; np.asarray(x): hostarray publishes and acquires x"),
              ("cl copy", "enqueue_copy to a plain device buffer, kernel, enqueue_copy back "
                          "(pyopencl)"),
              ("cla", "pyopencl.array set(src), kernel, get()"),
              *_ratio_legend(_ROUNDTRIP)]
    bad = [(format_size(r["size"]), k) for r in rows for k, ok in r.get("correct", {}).items()
           if not ok]
    return ["", "round trip: host write -> kernel x = 2x + 1 -> host read",
            *_times_table(rows, _ROUNDTRIP), *_legend(legend),
            *_wrap(f"all results correct: {not bad}" + (f" (wrong: {bad})" if bad else ""),
                   "  ")]


def _sync_parts(rows: list[dict[str, Any]]) -> list[str]:
    times: list[Row] = []
    rates: list[Row] = []
    for r in rows:
        if "skipped" in r:
            times.append(_skipped(r))
            rates.append(_skipped(r))
            continue
        t, bw = r["times"], r["bandwidth_GBps"]
        times.append([format_size(r["size"]), r["link"], _fmt_t(t["publish"]),
                      _fmt_t(t["acquire"]), _fmt_t(t["copy pinned H->D"]),
                      _fmt_t(t["copy pinned D->H"]), _fmt_t(t["copy pageable H->D"]),
                      _fmt_t(t["copy pageable D->H"]), f"{100 * r['fraction_of_pinned']:.0f}%"])
        rates.append([format_size(r["size"]), r["link"], f"{bw['publish']:.1f}",
                      f"{bw['acquire']:.1f}", f"{bw['copy pinned H->D']:.1f}",
                      f"{bw['copy pageable H->D']:.1f}", _fmt_t(t["second read x[-1]"]),
                      _fmt_t(t["second acquire_device_writes"]), str(r["second_read_bytes"])])
    hdr1 = ["size", "link", "publish", "acquire", "pin H>D", "pin D>H", "page H>D", "page D>H",
            "pin/ha"]
    hdr2 = ["size", "link", "pub GB/s", "acq GB/s", "pin GB/s", "page GB/s", "2nd read",
            "2nd acq", "2nd bytes"]
    legend1 = [("link", "host-link kind of the array's buffer: shared, mapped or copied"),
               ("publish", "ha.hostptr.publish_host_writes(x, dev) of the whole array, finished"),
               ("acquire", "ha.hostptr.acquire_device_writes(x, dev) after a kernel wrote x"),
               ("pin H>D", "enqueue_copy from pinned host memory (CL_MEM_ALLOC_HOST_PTR, "
                           "mapped) to a device buffer; D>H: back"),
               ("page H>D", "the same from ordinary (pageable) numpy memory; D>H: back"),
               ("pin/ha", "(pin H>D + pin D>H) / (publish + acquire), in percent: above 100% "
                          "hostarray is faster than the pinned copies, below 100% slower; "
                          "target >= 90% on a mapped link")]
    legend2 = [("GB/s", "size / median time, in 10^9 bytes per second, of publish (pub), "
                        "acquire (acq), pinned H>D (pin) and pageable H>D (page)"),
               ("2nd read", "x[-1] read on the host right after an acquire, nothing launched "
                            "in between"),
               ("2nd acq", "acquire_device_writes(x, dev) again, nothing launched in between"),
               ("2nd bytes", "bytes moved by those second reads and acquires (must be 0)")]
    return ["", "sync: publish/acquire vs enqueue_copy, median times",
            *_table(hdr1, times, "ll" + "r" * 7, keep=2), *_legend(legend1),
            "", "sync: bandwidth, and a second host read with nothing launched since",
            *_table(hdr2, rates, "ll" + "r" * 7, keep=2), *_legend(legend2)]


def _laziness_parts(rows: list[dict[str, Any]], repeat: int) -> list[str]:
    hdr = ["size", "link", "policy", "moved", "x min", "syncs", "time", "t/lazy", "same"]
    out: list[Row] = []
    for r in rows:
        if "skipped" in r:
            out.append(_skipped(r))
            continue
        pol = r["policies"]
        base = pol["ha lazy"]["median_s"]
        for name, p in pol.items():
            syncs = (f"{p['publishes']}p/{p['acquires']}a" if "publishes" in p else "by hand")
            out.append([format_size(r["size"]), r["link"], name,
                        format_size(p["bytes_moved"]) if p["bytes_moved"] else "0",
                        f"{p['bytes_moved'] / r['minimum_bytes']:.2f}", syncs,
                        _fmt_t(p["median_s"]), _fmt_ratio(p["median_s"] / base),
                        str(r["agree"][name])])
    r0 = next((r for r in rows if "policies" in r), None)
    title = "laziness: a Jacobi solver"
    if r0 is not None:
        title += (f", {r0['iterations']} iterations, residual summed on the host every "
                  f"{r0['check_every']}; medians of {max(1, min(3, repeat))}")
    legend = [("policy", "ha lazy: hostarray decides, the arrays attached before; ha eager: "
                         "publish and acquire of every argument around each launch; ha lazy + "
                         "attach: ha lazy, creating the buffers inside the timing; cl minimal: "
                         "hand-written pyopencl copying only what the data dependencies need"),
              ("link", "host-link kind of the buffers (copied: forced, so that bytes move)"),
              ("moved", "bytes copied between host and device, from ha.stats() (cl minimal: "
                        "the minimum, by construction)"),
              ("x min", "moved / the minimum (u and f in once, the partial sums out at each "
                        "check, u out at the end)"),
              ("syncs", "publishes p / acquires a, from ha.stats()"),
              ("time", "median time of the whole solve"),
              ("t/lazy", "this policy's time / ha lazy's time at the same size and link; "
                         "> 1: this policy is slower than hostarray's lazy one, < 1: faster"),
              ("same", "the final u equals cl minimal's, bit for bit")]
    return ["", *_wrap(title), *_table(hdr, out, "lllrrlrrl", keep=3), *_legend(legend)]


def format_tables(result: dict[str, Any]) -> str:
    """The human-readable tables of a :func:`collect` result.

    Every line is at most :data:`WIDTH` (100) characters: wide tables are split,
    column names abbreviated, and each table is followed by a legend naming what
    each column measures and what each ratio divides.

    Parameters
    ----------
    result : dict
        What :func:`collect` returned (or its JSON, read back).

    Returns
    -------
    str
        The tables, lines joined by newlines.
    """
    d = result["device"]
    lines = _wrap(f"hostarray bench -- {d['spec']} ({d['name']}, {d['platform']}), link "
                  f"{d['link']}, {result['date']}; times are medians of {result['repeat']} "
                  f"run{'s' if result['repeat'] != 1 else ''} after a warm-up (us = "
                  f"microseconds, ms = milliseconds, s = seconds)")
    if "checks" in result:
        c = result["checks"]
        lines += ["", *_wrap(
            f"checks: publish map flags {c['publish_map_flags']}, bytes read back by a publish "
            f"{c['publish_acquired_bytes']}, kernel saw the host's bytes "
            f"{c['publish_keeps_host_bytes']} -> {'OK' if c['publish_ok'] else 'FAIL'}")]
    if result.get("attach"):
        lines += _attach_parts(result["attach"])
    if result.get("roundtrip"):
        lines += _roundtrip_parts(result["roundtrip"])
    if result.get("sync"):
        lines += _sync_parts(result["sync"])
    if result.get("laziness"):
        lines += _laziness_parts(result["laziness"], result["repeat"])
    return "\n".join(lines)


def print_tables(result: dict[str, Any], file: Any = None) -> None:
    """Print :func:`format_tables` of ``result`` (to stdout by default)."""
    print(format_tables(result), file=file or sys.stdout)


# The plot's panels: (part, title, which of its methods), at most four series each, so that
# a panel stays readable at page width (docs/performance.md shows the PNG ~700 px wide).
_PANELS: tuple[tuple[str, str, Any], ...] = (
    ("attach", "attach vs copy (no kernel)", lambda m: "kernel" not in m),
    ("attach", "attach vs copy, then one kernel", lambda m: "kernel" in m),
    ("roundtrip", "round trip", lambda m: True),
    ("sync", "publish vs host-to-device copies",
     lambda m: m == "publish" or ("H->D" in m and m.startswith("copy"))),
    ("sync", "acquire vs device-to-host copies",
     lambda m: m == "acquire" or ("D->H" in m and m.startswith("copy"))),
)


def plot(result: dict[str, Any], path: str) -> None:
    """Write a PNG of time against size to ``path``: one panel per comparison (attach,
    attach with a kernel, round trip, publish, acquire), stacked, at most four series
    each, with fonts sized for a page-width view (7.5 inches at 110 dpi: about 800
    pixels wide)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = []
    for key, title, keep in _PANELS:
        rows = [r for r in result.get(key) or () if "times" in r]
        methods = [m for m in rows[0]["times"] if not m.startswith("second") and keep(m)] \
            if rows else []
        if methods:
            panels.append((title, rows, methods))
    with plt.rc_context({"font.size": 10, "axes.titlesize": 11, "axes.labelsize": 10,
                         "legend.fontsize": 9, "xtick.labelsize": 9, "ytick.labelsize": 9}):
        fig, axes = plt.subplots(max(1, len(panels)), 1, squeeze=False, layout="constrained",
                                 figsize=(7.5, 0.6 + 3.1 * max(1, len(panels))))
        for ax, (title, rows, methods) in zip(axes[:, 0], panels):
            for m in methods:
                ours = m.startswith(("ha", "publish", "acquire"))
                ax.loglog([r["size"] for r in rows], [r["times"][m] for r in rows],
                          marker="o", markersize=4, label=m, linewidth=2 if ours else 1.3,
                          linestyle="-" if ours else "--")
            ax.set_xlabel("bytes")
            ax.set_ylabel("seconds (median)")
            ax.set_title(title)
            ax.grid(True, which="both", alpha=0.3)
            ax.legend(loc="upper left", framealpha=0.85)
        d = result["device"]
        # two lines: a long driver name ("pthread-skylake-avx512-Intel(R) Xeon(R) ...")
        # on one line with the date would run off the figure
        fig.suptitle(f"hostarray bench, {result['date']}\n{d['name']} ({d['link']} link)",
                     fontsize=11)
        fig.savefig(path, dpi=110)
        plt.close(fig)


# -- CSV and JSON -------------------------------------------------------------------------------

CSV_COLUMNS = ("part", "size", "link", "method", "quantity", "value", "unit")
"""The columns of :func:`format_csv`, in order."""

# per-method dicts of a measured row: key -> (quantity, unit)
_PER_METHOD = {"times": ("time", "s"), "bandwidth_GBps": ("bandwidth", "GB/s"),
               "correct": ("correct", ""), "agree": ("agree", "")}


def _unit(key: str, value: Any = 0) -> str:
    if isinstance(value, (bool, str)):
        return ""
    if "bytes" in key or key in ("max_alloc", "max_size", "alignment"):
        return "B"
    if key.endswith("_s"):
        return "s"
    return ""


def _csv_rows(result: dict[str, Any]) -> list[tuple[Any, ...]]:
    rows: list[tuple[Any, ...]] = []
    run = {**{k: v for k, v in result.items() if not isinstance(v, (dict, list))},
           **{f"device {k}": v for k, v in result.get("device", {}).items()},
           **{f"host {k}": v for k, v in result.get("host", {}).items()}}
    for k, v in run.items():
        rows.append(("run", "", "", "", k, v, _unit(k.split()[-1], v)))
    own = result.get("device", {}).get("link", "")  # the device's link, where a part has none
    checks = result.get("checks", {})
    for k, v in checks.items():
        if k != "link":
            rows.append(("checks", "", checks.get("link", own), "", k,
                         ";".join(v) if isinstance(v, list) else v, _unit(k, v)))
    for part in ("attach", "roundtrip", "sync", "laziness"):
        for r in result.get(part, []):
            size, link = r["size"], r.get("link", own)

            def add(method: str, quantity: str, value: Any, unit: str = "",
                    part: str = part, size: int = size, link: str = link) -> None:
                rows.append((part, size, link, method, quantity, value, unit))

            for k, v in r.items():
                if k in ("size", "link"):
                    continue
                if k in _PER_METHOD:
                    quantity, unit = _PER_METHOD[k]
                    for m, x in v.items():
                        # the second reads are times even where the other keys are rates
                        add(m, quantity, x, unit)
                elif k == "ha_stats":
                    for q, x in v.items():
                        add("ha", q, x, _unit(q, x))
                elif k == "policies":
                    for m, p in v.items():
                        for q, x in p.items():
                            if q == "median_s":
                                add(m, "time", x, "s")
                            elif not isinstance(x, list):  # (the residuals: JSON only)
                                add(m, q, x, _unit(q, x))
                elif not isinstance(v, (dict, list)):
                    add("", k, v, _unit(k, v))
    return rows


def format_csv(result: dict[str, Any]) -> str:
    """Every number of a :func:`~hostarray.bench.collect` result as one long-form CSV.

    One row per number, in the columns :data:`CSV_COLUMNS`: ``part`` (``run`` for the
    device, versions and options; ``checks``, ``attach``, ``roundtrip``, ``sync``,
    ``laziness``), ``size`` (bytes; empty for ``run`` and ``checks``), ``link`` (the
    host-link kind the row was measured on: the device's own where the part does not
    say), ``method`` (the
    timed method or policy, as in the JSON: ``ha``, ``cl enqueue_copy``, ``ha lazy``,
    ...; empty for a number of the size itself), ``quantity`` (``time``, ``bandwidth``,
    ``correct``, ``agree`` (the solver's result is the same as ``cl minimal``'s),
    ``bytes_moved``, ``publishes``, ``skipped`` ...), ``value`` and ``unit``
    (``s``, ``B``, ``GB/s`` or empty).  A skipped size is one row, quantity ``skipped``,
    the reason as its value.  Only the laziness residuals are left out (they are in the
    JSON).

    Parameters
    ----------
    result : dict
        What :func:`~hostarray.bench.collect` returned (or its JSON, read back).

    Returns
    -------
    str
        The CSV text, a header row first (``\\n`` line ends).

    Examples
    --------
    >>> from hostarray.bench import format_csv
    >>> r = {"repeat": 5, "roundtrip": [{"size": 4096, "times": {"ha": 2.5e-05}}]}
    >>> print(format_csv(r), end="")
    part,size,link,method,quantity,value,unit
    run,,,,repeat,5,
    roundtrip,4096,,ha,time,2.5e-05,s
    """
    out = io.StringIO()
    w = csv.writer(out, lineterminator="\n")
    w.writerow(CSV_COLUMNS)
    w.writerows(("" if v is None else v for v in row) for row in _csv_rows(result))
    return out.getvalue()


def format_json(result: dict[str, Any]) -> str:
    """A :func:`~hostarray.bench.collect` result as the JSON ``hostarray bench --json``
    writes (numpy numbers as floats).

    Examples
    --------
    >>> from hostarray.bench import format_json
    >>> format_json({"repeat": 5})
    '{\\n "repeat": 5\\n}'
    """
    return json.dumps(result, indent=1, default=float)


def _folder_error(option: str, path: str) -> str | None:
    if not path.strip():
        return f"{option} {path!r}: give a file name" + (" (or - for stdout)"
                                                         if option != "--plot" else "")
    folder = os.path.dirname(os.path.abspath(path))
    if not os.path.isdir(folder):
        return f"{option} {path}: there is no folder {folder}"
    if os.path.isdir(path):
        return f"{option} {path}: that is a folder; give a file name"
    existed = os.path.lexists(path)  # (a dangling symlink is the user's: never removed)
    try:  # opened as the write will open it (nothing written; a file made here is removed)
        with open(path, "a"):
            pass
    except OSError as e:
        return f"{option} {path}: can't be written ({e.strerror or e})"
    if not existed:
        try:
            os.remove(path)
        except OSError:
            pass
    return None


def check_outputs(json_path: str | None = None, csv_path: str | None = None,
                  plot_path: str | None = None) -> str | None:
    """Why one of the outputs asked for can't be written, or ``None``: checked before
    measuring, so that a bad option costs no minutes.

    ``"-"`` is stdout (for one of ``json_path`` and ``csv_path`` at most); a path needs
    an existing folder; ``plot_path`` needs matplotlib (the ``bench`` extra:
    ``pip install 'hostarray[bench]'``).

    Examples
    --------
    >>> from hostarray.bench import check_outputs
    >>> check_outputs(json_path="-", csv_path="-")
    "--json and --csv can't both go to stdout: give one of them a file (--csv PATH)"
    >>> check_outputs(csv_path="/no/such/folder/bench.csv")
    '--csv /no/such/folder/bench.csv: there is no folder /no/such/folder'
    """
    if json_path == "-" and csv_path == "-":
        return "--json and --csv can't both go to stdout: give one of them a file (--csv PATH)"
    files: list[tuple[str, str]] = [
        (o, f) for o, f in (("--json", json_path), ("--csv", csv_path), ("--plot", plot_path))
        if f is not None and f != "-"]
    for k, (option, name) in enumerate(files):
        for other, there in files[k + 1:]:
            if os.path.realpath(name) == os.path.realpath(there):
                return (f"{option} and {other} name one file, {name}: give each its own "
                        f"(one would overwrite the other)")
    for option, name in files:
        said = _folder_error(option, name)
        if said:
            return said
    if plot_path is not None:
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot  # noqa: F401
            from matplotlib.backend_bases import FigureCanvasBase
        except ImportError as e:
            return (f"--plot needs matplotlib, which does not import here "
                    f"({type(e).__name__}: {e}); install it with pip install "
                    f"'hostarray[bench]'")
        # matplotlib takes the format from the name (and, without a suffix, adds .png)
        suffix = os.path.splitext(plot_path)[1].lower().lstrip(".")
        if suffix not in FigureCanvasBase.get_supported_filetypes():
            return (f"--plot {plot_path}: matplotlib writes no "
                    f"{'.' + suffix if suffix else 'file without a suffix'}; give a name "
                    f"ending in .png (or .svg, .pdf)")
    return None
