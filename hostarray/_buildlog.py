"""What a failed OpenCL build tells its user: the compiler's errors as excerpts of the
program's own source with a caret under the failing column, and nothing on stderr.

Drivers write the compiler's diagnostics into the build log against a temporary file
(PoCL: ``error: /root/.cache/pocl/kcache/tempfile_X.cl:3:12: ...``; clang, NVIDIA and
Intel put the path first: ``<kernel>:3:12: error: ...``); :func:`source_errors` turns
them into ``line 3, column 12: ...`` and the line itself, so that no temporary path
reaches a message.  PoCL's compiler also prints its own summary ("1 error generated.")
to the process's stderr, behind the exception: :func:`compiler_stderr_dropped` keeps
file descriptor 2 away from it for the length of a build.  Only the standard library
here (the kernels layer imports it).
"""

from __future__ import annotations

import os
import re
import sys
import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

__all__ = ["source_errors", "source_warnings", "without_temporary_paths",
           "compiler_stderr_dropped"]

_KIND = r"fatal error|error|warning|note"
# One diagnostic, in either order of kind and place; the path is whatever comes before the
# first ":LINE:COLUMN" (a Windows drive letter's colon is not followed by digits).  A
# diagnostic inside a macro's expansion carries where the offending text was spelled too
# (PoCL: ``tempfile_X.cl:3:10 <Spelling=tempfile_X.cl:1:19>:``; a ``-D`` value's text is
# ``<Spelling=<command line>:5:11>``).
_DIAGNOSTIC = re.compile(rf"^\s*(?:(?P<k1>{_KIND}): )?(?P<path>.*?):(?P<line>\d+):(?P<col>\d+)"
                         r"(?:\s*<Spelling=(?P<spath>.*?):(?P<sline>\d+):(?P<scol>\d+)>)?:"
                         rf"\s*(?:(?P<k2>{_KIND}):\s*)?(?P<msg>.*?)\s*$")
_INCLUDED = re.compile(r"^\s*In file included from (?P<path>.*?):\d+:")
# a path no user wrote: a driver's temporary file or cache (PoCL's kcache/tempfile_X.cl,
# clang's and NVIDIA's ``<kernel>``, ``<source>``); never shown in a message
_TEMPORARY = re.compile(r"kcache|tempfile|^<(?!command line>|built-in>)[^>]*>$")
_TEMPORARY_IN_TEXT = re.compile(r"""[^\s:<>'"()]*(?:kcache|tempfile)[^\s:<>'"()]*""")
_COMMAND_LINE = "<command line>"
_HEADER_LIMIT = 1 << 22  # bytes: a header longer than this is named, not read for an excerpt
# what the compiler itself prints to stderr: its count of diagnostics
_SUMMARY = re.compile(rb"^\s*\d+ (?:errors?|warnings?)(?: and \d+ (?:errors?|warnings?))? "
                      rb"generated\.\s*$")


def without_temporary_paths(text: str) -> str:
    """``text`` with every path of a driver's temporary file or cache replaced by
    ``source`` (the program's source is what was compiled from it).

    Examples
    --------
    >>> from hostarray._buildlog import without_temporary_paths
    >>> without_temporary_paths("error: /root/.cache/pocl/kcache/tempfile_a.cl:2:5: x")
    'error: source:2:5: x'
    """
    return _TEMPORARY_IN_TEXT.sub("source", text)


def _char_column(text: str, col: int) -> int:
    """The 1-based column, in characters, of byte column ``col`` (1-based, as compilers
    count) of ``text``: what a reader counts, and where the caret stands."""
    return len(text.encode("utf-8")[:max(col - 1, 0)].decode("utf-8", errors="ignore")) + 1


def _excerpt(source_lines: list[str], line: int, col: int, label: str | None = None
             ) -> list[str]:
    """The source line ``line`` (1-based) and a caret under column ``col`` (1-based, in
    bytes as compilers count them), indented as a block; ``[]`` where ``line`` is not in
    the lines.  ``label`` stands in the margin instead of the line's number."""
    if not 1 <= line <= len(source_lines):
        return []
    text = source_lines[line - 1].rstrip("\r")
    before = text[:_char_column(text, col) - 1]
    # the caret's indent keeps the line's tabs, so that it stands under the column
    pad = "".join(c if c == "\t" else " " for c in before)
    number = f"{label or line:>5} | "
    return [f"{number}{text}", f"{' ' * (len(number) - 2)}| {pad}^"]


def _header_lines(path: str) -> list[str]:
    """The lines of the user's header ``path``, or ``[]`` where it can't be read."""
    try:
        if os.path.getsize(path) > _HEADER_LIMIT:
            return []
        with open(path, encoding="utf-8", errors="replace") as f:
            return f.read().split("\n")
    except OSError:
        return []


def _definitions(options: Sequence[str]) -> list[tuple[str, str]]:
    """The ``-D`` options among ``options`` as (the option as given, ``#define`` line the
    compiler made of it)."""
    out: list[tuple[str, str]] = []
    items = list(options)
    for i, item in enumerate(items):
        if item == "-D" and i + 1 < len(items):
            given, body = f"-D {items[i + 1]}", items[i + 1]
        elif item.startswith("-D") and item != "-D":
            given, body = item, item[2:]
        else:
            continue
        name, eq, value = body.partition("=")
        out.append((given, f"#define {name.strip()} {value if eq else '1'}"))
    return out


def _in_definition(options: Sequence[str], col: int, msg: str) -> tuple[str, int] | None:
    """The ``-D`` option whose value the compiler's column ``col`` of ``<command line>``
    points into, and the 1-based column in that option; ``None`` where no single option
    fits (the message then names them all)."""
    quoted = re.findall(r"'([^']+)'", msg)
    fits = []
    for given, line in _definitions(options):
        if col > len(line):
            continue
        at = line[col - 1:]
        if quoted and not any(at.startswith(q) for q in quoted):
            continue
        value_start = len(line) - len(line.partition(" ")[2].partition(" ")[2])
        in_value = col - 1 - value_start
        eq = given.find("=")
        fits.append((given, (eq + 1 if eq >= 0 else len(given)) + max(in_value, 0) + 1))
    return fits[0] if len(fits) == 1 else None


def _blocks(log: str, source: str, options: Sequence[str], kinds: tuple[str, ...]
            ) -> list[str]:
    """The diagnostics of ``log`` whose kind is in ``kinds``, each with the notes that
    follow it, as blocks of text (see :func:`source_errors`)."""
    lines = log.splitlines()
    found = [(m, m.group("k1") or m.group("k2") or "error")
             for m in map(_DIAGNOSTIC.match, lines) if m]
    # the program's own source: the file a header was included from, else whatever path
    # no user wrote (a header given with -I is a file the user has)
    main = next((m.group("path") for m in map(_INCLUDED.match, lines) if m), None)
    if main is None:
        main = next((m.group("path") for m, _ in found
                     if m.group("path") != _COMMAND_LINE
                     and (_TEMPORARY.search(m.group("path"))
                          or not os.path.isfile(m.group("path")))), None)
    src = source.split("\n")
    blocks: list[list[str]] = []
    keep = False  # a note follows the diagnostic it belongs to
    for m, kind in found:
        if kind in kinds:
            blocks.append([])
            keep = True
        elif kind != "note" or not keep:
            keep = False
            continue
        path, line, col = m.group("path"), int(m.group("line")), int(m.group("col"))
        msg = m.group("msg")
        if main:
            msg = msg.replace(main, "source")
        text, excerpt = _place(path, line, col, main, src, options, msg)
        spath = m.group("spath")
        if spath is not None:
            sline, scol = int(m.group("sline")), int(m.group("scol"))
            where, more = _place(spath, sline, scol, main, src, options, msg, label="macro")
            # the line it was used on first, then where the offending text was written
            text += f" (from {where})" if spath == _COMMAND_LINE else f" (in the macro at {where})"
            excerpt += more
        blocks[-1].append(f"{kind} at {text}: {msg}")
        blocks[-1].extend(excerpt)
    # (PoCL's log says a warning twice: once from its front end, once from the build)
    return list(dict.fromkeys(without_temporary_paths("\n".join(b)) for b in blocks if b))


def _place(path: str, line: int, col: int, main: str | None, src: list[str],
           options: Sequence[str], msg: str, label: str | None = None
           ) -> tuple[str, list[str]]:
    """Where a diagnostic is, in words, and its excerpt: a line of the source, of the
    user's header (its path named), or the ``-D`` option it came from."""
    if path == _COMMAND_LINE:
        hit = _in_definition(options, col, msg)
        if hit is None:
            named = ", ".join(g for g, _ in _definitions(options)) or "none given"
            return f"a -D build option's value ({named})", []
        given, at = hit
        return f"the value of the build option {given}", _excerpt([given], 1, at, label="-D")
    lines = src if path == main else _header_lines(path)
    # (a line that can't be read keeps the compiler's column)
    shown = _char_column(lines[line - 1], col) if 1 <= line <= len(lines) else col
    where = f"line {line}, column {shown}"
    if path != main:
        where = f"{path}, {where}"
    return where, _excerpt(lines, line, col, label)


def source_errors(log: str, source: str, options: Sequence[str] = ()) -> str | None:
    """The errors of a build log, each as ``error at line L, column C: message`` and that
    line of ``source`` and a caret under the column; the temporary path the driver
    compiled from replaced by ``source``.  ``None`` where the log holds no diagnostic
    with a line and column (a driver that writes another format: the caller keeps the
    log's own lines).

    Columns count characters, as the caret stands.  A diagnostic in a header given with
    ``-I`` names the header's path (the user's own) and quotes the header's line; one in
    a macro's expansion quotes the line it was used on and the macro's line; one in a
    ``-D`` option's value names the option.  Notes that follow an error stay with it.
    No temporary path is ever in the text.

    Parameters
    ----------
    log : str
        The driver's build log (``BuildFailed.full_log``).
    source : str
        The OpenCL C source that was built.
    options : sequence of str, optional
        The build options, one per item: a ``-D`` option a diagnostic points into is
        named.

    Returns
    -------
    str or None
        The errors, one block each, or ``None``.

    Examples
    --------
    >>> from hostarray._buildlog import source_errors
    >>> print(source_errors("error: /tmp/pocl_1.cl:2:5: use of undeclared identifier 'y'",
    ...                     "kernel void k(global int *x) {\\n  x = y;\\n}"))
    error at line 2, column 5: use of undeclared identifier 'y'
        2 |   x = y;
          |     ^
    """
    blocks = _blocks(log, source, options, ("error", "fatal error"))
    return "\n".join(blocks) if blocks else None


def source_warnings(log: str, source: str, options: Sequence[str] = ()) -> tuple[str, ...]:
    """The warnings of a build log in :func:`source_errors`'s form, one string each.

    Parameters
    ----------
    log : str
        The driver's build log.
    source : str
        The OpenCL C source that was built.
    options : sequence of str, optional
        The build options, one per item.

    Returns
    -------
    tuple of str
        One block per warning (its notes included); ``()`` where there is none.

    Examples
    --------
    >>> from hostarray._buildlog import source_warnings
    >>> source_warnings("<kernel>:1:2: warning: look here", "#warning look here")
    ('warning at line 1, column 2: look here\\n    1 | #warning look here\\n      |  ^',)
    """
    return tuple(_blocks(log, source, options, ("warning",)))


# -- the compiler's own stderr ---------------------------------------------------------------

_lock = threading.Lock()
_depth = 0  # builds in progress, over all threads: fd 2 is redirected while any runs
_saved_fd: int | None = None  # the real stderr while it is redirected
_pump: threading.Thread | None = None


def _forward(read_fd: int, out_fd: int) -> None:
    """Copy what arrives on ``read_fd`` to ``out_fd`` line by line as it comes, leaving
    out the compiler's summary lines; until end of file (the last writer closed)."""
    pending = b""
    with os.fdopen(read_fd, "rb", buffering=0) as pipe:
        while True:
            chunk = pipe.read(65536)
            if not chunk:
                break
            pending += chunk
            *lines, pending = pending.split(b"\n")
            kept = b"".join(ln + b"\n" for ln in lines if not _SUMMARY.match(ln))
            if kept:
                os.write(out_fd, kept)
    if pending and not _SUMMARY.match(pending):
        os.write(out_fd, pending)


def _start() -> None:
    # A pipe and a thread rather than a file read at the end: what another thread writes
    # to stderr meanwhile, or a driver's last words before it aborts the process, still
    # reach the real stderr at once.
    global _saved_fd, _pump
    try:
        sys.stderr.flush()  # what Python wrote before goes out before, in order
    except (AttributeError, OSError, ValueError):
        pass
    try:
        saved = os.dup(2)
    except OSError:  # no fd 2 (a daemon): there is nothing to keep clean
        return
    read_fd, write_fd = os.pipe()
    pump = threading.Thread(target=_forward, args=(read_fd, saved), daemon=True,
                            name="hostarray-compiler-stderr")
    pump.start()
    os.dup2(write_fd, 2)
    os.close(write_fd)
    _saved_fd, _pump = saved, pump


def _stop() -> None:
    global _saved_fd, _pump
    saved, pump = _saved_fd, _pump
    _saved_fd = _pump = None
    if saved is None or pump is None:
        return
    try:
        sys.stderr.flush()
    except (AttributeError, OSError, ValueError):
        pass
    os.dup2(saved, 2)  # closes the pipe's last write end: the pump reads end of file
    pump.join(timeout=5.0)  # (a process started meanwhile may hold the pipe: not forever)
    if not pump.is_alive():
        os.close(saved)


@contextmanager
def compiler_stderr_dropped() -> Iterator[None]:
    """For the length of the block, the compiler's summary lines ("1 error generated.")
    that a driver prints to file descriptor 2 are dropped; anything else written there
    meanwhile (by another thread too) goes on to stderr, line by line, as it comes.
    Blocks nest and overlap across threads.

    Examples
    --------
    >>> import os
    >>> from hostarray._buildlog import compiler_stderr_dropped
    >>> with compiler_stderr_dropped():
    ...     _ = os.write(2, b"1 error generated.\\n")   # not shown
    """
    global _depth
    with _lock:
        if _depth == 0:
            _start()
        _depth += 1
    try:
        yield
    finally:
        with _lock:
            _depth -= 1
            if _depth == 0:
                _stop()
