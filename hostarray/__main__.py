"""The ``hostarray`` command: ``devices``, ``demo``, ``bench``, ``config`` and ``--version``.

``hostarray devices`` lists every device hostarray found (and every device it
left out, with why); ``hostarray demo`` runs a numpy -> kernel -> numpy
pipeline and prints the bytes hostarray did not move; ``hostarray bench``
measures attach, round trips and laziness (see the performance page);
``hostarray config`` prints the versions, devices and settings (as
``ha.show_config()``); ``hostarray --version`` prints the installed version.
Every line is at most 100 characters unless ``--wide``.

Every help text is plain text: no reStructuredText or Markdown markup.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any, NoReturn

# the report of what hostarray runs on lives below the command line (hostarray._config,
# which ha.show_config() shares): the command line imports it, never the other way
from ._config import _size, _version, device_report, left_out_lines
from ._text import error_lines

__all__ = ["main", "device_report", "device_table"]

def _table(header: list[str], rows: list[list[str]]) -> list[str]:
    widths = [max(len(h), *(len(r[i]) for r in rows)) for i, h in enumerate(header)]
    lines = ["  ".join(h.ljust(w) for h, w in zip(header, widths)).rstrip()]
    lines.append("  ".join("-" * w for w in widths))
    lines += ["  ".join(v.ljust(w) for v, w in zip(r, widths)).rstrip() for r in rows]
    return lines


_DEVICE_COLUMNS = ["device", "framework", "type", "link", "alignment", "host align",
                   "max alloc", "unified", "default"]


def device_table(report: dict[str, Any], wide: bool = False) -> list[str]:
    """The table ``hostarray devices`` prints for a :func:`device_report`, as lines.

    By default every line has at most 100 characters: the driver's name of each device
    goes on a line of its own under the device's row (``name: ...``), shortened with
    ``...`` where it would not fit, as the other names of an OpenCL device do
    (``also: ...``).  With ``wide``, the name is the last column, in full, and lines are
    as long as they need to be.

    Parameters
    ----------
    report : dict
        What :func:`device_report` returned (or its JSON, read back).
    wide : bool
        Print the names in full, in a last column.

    Returns
    -------
    list of str
        The lines, without newlines.

    Examples
    --------
    >>> from hostarray.__main__ import device_report, device_table
    >>> lines = device_table(device_report())
    >>> lines[0].split()[:4], max(len(line) for line in lines) <= 100
    (['device', 'framework', 'type', 'link'], True)
    """
    from ._text import WIDTH, shorten

    header = _DEVICE_COLUMNS + (["name"] if wide else [])
    rows = []
    for r in report["devices"]:
        link = r["link"] or ("error" if "link_error" in r else "-")
        host_align = "-" if r["host_alignment"] is None else f"{r['host_alignment']} B"
        rows.append([r["device"], r["framework"], r["type"], link, f"{r['alignment']} B",
                     host_align, _size(r["max_alloc"]), "yes" if r["host_unified"] else "no",
                     "*" if r["default"] else "", *([r["name"]] if wide else [])])
    if not wide:  # a long type ("CPU | ACCELERATOR"): shortened, so that the row fits
        others = sum(max(len(h), *(len(row[i]) for row in rows))
                     for i, h in enumerate(header) if i != 2) + 2 * (len(header) - 1)
        for row in rows:
            row[2] = shorten(row[2], max(4, WIDTH - others))
    lines = _table(header, rows)
    indent = " " * (len(lines[1].split("  ", 1)[0]) + 2)  # under the framework column
    for i, r in reversed(list(enumerate(report["devices"]))):
        under = [] if wide else [f"{indent}name: {shorten(r['name'], WIDTH - len(indent) - 6)}"]
        if r["framework"] == "opencl":  # its kind selectors, on a line of their own
            also = f"{indent}also: {', '.join(r['aliases'])}"
            under.append(also if wide else shorten(also, WIDTH))
        lines[i + 3:i + 3] = under
    return lines


def cmd_devices(args: argparse.Namespace) -> int:
    from ._text import WIDTH, wrap

    report = device_report()
    if args.json:
        print(json.dumps(report, indent=2))
        return 0 if report["default"] is not None and "link_forced_error" not in report else 2
    width = None if args.wide else WIDTH

    def say(text: str, indent: str = "      ") -> None:
        for line in text.split("\n"):
            print("\n".join(wrap(line, indent, width)))

    print("\n".join(device_table(report, wide=args.wide)))
    for r in report["devices"]:
        if "link_error" in r:
            say(f"link check failed on {r['device']}: {r['link_error']}", "  ")
    print()
    for text, indent in left_out_lines(report):
        say(text, indent)
    print("alignment: where a view passed to a kernel may start inside its array's buffer; "
          "host align:\n      what host memory needs for a buffer to use it in place (probed; "
          "an array also\n      needs its element size), else ha.asarray copies it")
    link_error = report.get("link_forced_error")
    if link_error:
        say(f"link: {link_error}")
    elif report["link_forced"]:
        print(f"link: forced to {report['link_forced']!r} by HOSTARRAY_LINK")
    else:
        print("link: found by a probe kernel; shared = the device works on the host bytes, "
              "mapped = the\n      driver mirrors them and copies on each publish/acquire")
    opencl = [r["device"] for r in report["devices"] if r["framework"] == "opencl"]
    if report["default"] is None:
        say(f"default: {report['default_error']}")  # it starts HOSTARRAY_DEVICE='...':
        return 2
    from ._settings import check

    setting_errors = check(skip=["HOSTARRAY_LINK"])  # (said on the link: line)
    if setting_errors:  # a wrong threshold or transfer-guard variable: said after the list
        for error in setting_errors:
            say(f"settings: {error}")
        return 2
    if link_error:
        return 2
    kernels = (report["default"] if report["default"] != "cpu"
               else (opencl[0] if opencl else "none"))
    say(f"default: {report['default']} (arrays); kernels and `hostarray demo`: {kernels}; "
        f"set HOSTARRAY_DEVICE to change")
    return 0


def cmd_demo(args: argparse.Namespace) -> int:
    from .demo import run_demo

    return run_demo(device=args.device, size=args.size, repeat=args.repeat, out=sys.stdout,
                    wide=args.wide)


def cmd_config(args: argparse.Namespace) -> int:
    from ._config import config_report, format_config, print_json

    if args.json:
        print_json()
    else:
        print("\n".join(format_config(config_report(), wide=args.wide)))
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    try:
        from .bench import run_bench
    except ImportError as e:
        print(error_lines("bench", f"not available: {e}"), file=sys.stderr)
        return 2
    return run_bench(args)


def _positive_int(text: str) -> int:
    try:
        n = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if n < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {n}")
    return n


def _size_arg(text: str) -> int:
    """An argparse type: bytes, read by :func:`hostarray.bench.parse_size`."""
    from .bench import parse_size

    try:
        return parse_size(text)
    except ValueError as e:
        raise argparse.ArgumentTypeError(str(e)) from None


_DESCRIPTION = ("hostarray: numpy arrays in host memory that OpenCL devices use in place. "
                "This command lists the devices, runs a demonstration, measures and prints "
                "the versions and settings in use (config, for a bug report). Every line is at "
                "most 100 characters; --wide prints names in full.")
_EPILOG = ("Environment: HOSTARRAY_DEVICE names the default device (for example opencl:0:0, "
           "gpu or opencl:cpu:0); "
           "HOSTARRAY_LINK forces the host-link kind (shared, mapped or copied). "
           "Run 'hostarray COMMAND --help' for the options of a command.")
_DEVICES = ("List the host and every OpenCL device that ran a probe kernel, with its host-link "
            "kind (shared: the device works on the host bytes; mapped: the driver mirrors them "
            "and copies on each publish and acquire), the alignment a view passed to a kernel "
            "needs, the alignment host memory needs to be used in place, the largest allocation "
            "and the default device; under each device its driver's name (shortened to fit 100 "
            "columns; --wide: in full, as a last column) and, under each OpenCL device, the "
            "other names it goes by (its kind selectors, such as opencl:gpu:0 or gpu); then "
            "every device the drivers listed but that failed the probe, with why.")
_DEMO = ("Run one pipeline three ways: through hostarray (numpy signal, smoothing kernel, "
         "np.quantile on the host, clipping kernel, result back to numpy), as an eager pyopencl "
         "program that copies around every kernel, and in pure numpy. Checks that the results "
         "agree and prints the publishes, acquires, bytes moved and time of each. Exit status: "
         "0, 1 if a check fails, 2 without an OpenCL device.")
_CONFIG = ("Print what hostarray runs on and with, as ha.show_config() does: the versions of "
           "hostarray, Python, the platform, numpy, pyopencl, array-api-compat and the optional "
           "packages; the OpenCL platforms; the devices with their host-link kind, alignment, "
           "host alignment, double precision and largest allocation, and the devices left out "
           "with why; every HOSTARRAY_ environment variable hostarray reads, with its value or "
           "unset; and what is in force: the default device, the transfer guard, the "
           "device-compute threshold and the pool. It works where pyopencl does not import, "
           "and says why. Exit status: 0.")
_BENCH = ("Measure on one OpenCL device what hostarray costs and saves against the pyopencl code "
          "a user would write instead: attach, round trip (host write, kernel, host read), "
          "publish and acquire against enqueue_copy, and a solver under lazy and eager "
          "synchronisation. Tables go to stdout, at most 100 characters wide, each followed "
          "by a legend of its columns and ratios (or JSON or CSV, with --json or --csv); "
          "progress goes to stderr, a numbered step each with an estimate of the time left. "
          "Every option is checked before measuring.")
_BENCH_EPILOG = ("Sizes are read as written: KB, MB, GB, TB are powers of 1000 and KiB, MiB, GiB, "
                 "TiB powers of 1024 (1GB = 1000000000 bytes, 1GiB = 1073741824 bytes); B or no "
                 "unit means bytes. Units are case-insensitive and may follow a space; a bare "
                 "k, M or G is refused as ambiguous. Every option is checked before measuring "
                 "(--plot needs matplotlib: pip install 'hostarray[bench]'). Exit status: 0, 1 "
                 "if a check or a result was wrong, 2 on a bad argument or without an OpenCL "
                 "device.")


class _Formatter(argparse.HelpFormatter):
    """argparse's help and usage, at most 100 columns wide (narrower in a narrow terminal)."""

    def __init__(self, prog: str, **kwargs: Any) -> None:
        import shutil

        from ._text import WIDTH

        kwargs["width"] = min(shutil.get_terminal_size().columns - 2, WIDTH)
        super().__init__(prog, **kwargs)


class _Parser(argparse.ArgumentParser):
    """argparse's parser, its errors wrapped at 100 columns as every other CLI error is,
    its usage and help too (its subcommands' parsers are of this class)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        kwargs.setdefault("formatter_class", _Formatter)
        super().__init__(*args, **kwargs)

    def error(self, message: str) -> NoReturn:
        from ._text import WIDTH, wrap

        self.print_usage(sys.stderr)
        self.exit(2, "\n".join(wrap(f"{self.prog}: error: {message}", "  ", WIDTH)) + "\n")


def _parser() -> argparse.ArgumentParser:
    p = _Parser(prog="hostarray", description=_DESCRIPTION, epilog=_EPILOG)
    p.add_argument("--version", action="version", version=f"hostarray {_version()}",
                   help="print the installed version of hostarray and exit")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND")
    d = sub.add_parser("devices", help="list devices, their host-link kind and alignment",
                       description=_DEVICES)
    d.add_argument("--json", action="store_true", help="print JSON instead of a table")
    d.add_argument("--wide", action="store_true", help="print each device's name in full, in "
                   "a last column, and long lines unwrapped (default: at most 100 columns)")
    d.set_defaults(func=cmd_devices)
    m = sub.add_parser("demo", help="numpy -> kernel -> numpy pipeline, with the bytes saved",
                       description=_DEMO)
    m.add_argument("--device", default=None, help="device to run on (default: "
                   "HOSTARRAY_DEVICE, else the first OpenCL device)")
    m.add_argument("--size", type=_positive_int, default=1 << 22, metavar="N",
                   help="signal length in float32 elements (default: 4194304 = 16 MiB)")
    m.add_argument("--repeat", type=_positive_int, default=3, metavar="K",
                   help="timed runs of each pipeline; the best is shown (default: 3)")
    m.add_argument("--wide", action="store_true", help="print the device's name in full and "
                   "long lines unwrapped (default: at most 100 columns)")
    m.set_defaults(func=cmd_demo)
    b = sub.add_parser("bench", help="measure attach, round trip and laziness on a device",
                       description=_BENCH, epilog=_BENCH_EPILOG)
    b.add_argument("--device", default=None, help="device to measure (default: "
                   "HOSTARRAY_DEVICE, else the first OpenCL device)")
    b.add_argument("--json", nargs="?", const="-", default=None, metavar="PATH",
                   help="print the numbers as JSON instead of the tables; with PATH, write "
                        "them there and print the tables")
    b.add_argument("--csv", nargs="?", const="-", default=None, metavar="PATH",
                   help="the same as one long-form CSV (a row per number: part, size, link, "
                        "method, quantity, value, unit), printed or written to PATH")
    b.add_argument("--max-size", type=_size_arg, default="64MiB", metavar="SIZE",
                   help="largest array size, for example 64MiB, 1GiB or 500MB (default: 64MiB); "
                        "sizes that do not fit in host memory or one device allocation are "
                        "skipped")
    b.add_argument("--repeat", type=_positive_int, default=None, metavar="N",
                   help="timed runs per measurement; medians are shown (default: 5; the solver: "
                        "at most 3)")
    b.add_argument("--plot", default=None, metavar="PNG",
                   help="also write a plot of time against size here (needs matplotlib: "
                        "pip install 'hostarray[bench]')")
    b.set_defaults(func=cmd_bench)
    c = sub.add_parser("config", help="versions, devices and settings, for a bug report",
                       description=_CONFIG)
    c.add_argument("--json", action="store_true", help="print JSON instead of text")
    c.add_argument("--wide", action="store_true", help="print long names and lines in full "
                   "(default: at most 100 columns)")
    c.set_defaults(func=cmd_config)
    return p


def main(argv: list[str] | None = None) -> int:
    """Entry point of the ``hostarray`` command; returns the exit status.

    Examples
    --------
    >>> from hostarray.__main__ import main
    >>> main(["devices"])  # doctest: +ELLIPSIS
    device  framework  type ...
    0
    """
    args = _parser().parse_args(argv)
    if args.command == "config":  # says what is wrong itself, pyopencl and settings too
        return int(args.func(args))
    from .backends._pyopencl import import_problem

    problem = import_problem(quiet=True)  # (numpy's banner on a build for numpy 1.x held back)
    if problem is not None:  # every command needs OpenCL: one sentence, no traceback
        print(error_lines(args.command, problem), file=sys.stderr)
        print("(arrays still work on the host, 'cpu'; OpenCL devices and kernels need "
              "pyopencl)", file=sys.stderr)
        return 2
    from ._settings import check
    from .errors import HostPtrError

    if args.command != "devices":  # (devices lists what is here, then says so itself)
        setting_errors = check()  # a wrong HOSTARRAY_* variable: one sentence, before any work
        if setting_errors:
            for error in setting_errors:
                print(error_lines(args.command, error), file=sys.stderr)
            return 2
    try:
        return args.func(args)
    except HostPtrError as e:  # a bad device name etc.: one sentence, no traceback
        print(error_lines(args.command, str(e)), file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
