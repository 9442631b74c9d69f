"""Plain-text output of the ``hostarray`` command: lines that fit :data:`WIDTH` columns.

Every command prints lines of at most 100 characters by default: long names are
shortened with ``...`` (:func:`shorten`), long sentences wrapped (:func:`wrap`);
``--wide`` prints names in full and leaves sentences on one line.
"""

from __future__ import annotations

import re
import textwrap

__all__ = ["WIDTH", "ELLIPSIS", "shorten", "wrap", "error_lines"]

WIDTH = 100
"""The widest line the ``hostarray`` commands print by default, in characters."""

ELLIPSIS = "..."
"""What stands for the end of a shortened name (ASCII: every terminal and file shows it)."""


def shorten(text: str, width: int) -> str:
    """``text`` if it has at most ``width`` characters, else its start and ``...``.

    Examples
    --------
    >>> from hostarray._text import shorten
    >>> shorten("NVIDIA H200", 20), shorten("pthread-skylake-avx512-Intel(R) Xeon(R)", 20)
    ('NVIDIA H200', 'pthread-skylake-a...')
    """
    if len(text) <= width:
        return text
    keep = max(0, width - len(ELLIPSIS))
    return text[:keep].rstrip() + ELLIPSIS


def wrap(text: str, indent: str = "", width: int | None = WIDTH) -> list[str]:
    """``text`` as lines of at most ``width`` characters, later lines starting with
    ``indent`` (``width=None``: one line, as it is).  Words are never broken, so a word
    longer than a line stays whole; leading spaces are kept.

    Examples
    --------
    >>> from hostarray._text import wrap
    >>> wrap("one two three four", "  ", 10)
    ['one two', '  three', '  four']
    >>> wrap("one two three four", "  ", None)
    ['one two three four']
    """
    if width is None or len(text) <= width:
        return [text]
    # a command in backticks stays on one line, to be copied whole: its spaces don't break
    kept = _COMMAND.sub(lambda m: m.group(0).replace(" ", _UNBROKEN), text)
    lines = textwrap.wrap(kept, width, subsequent_indent=indent, break_long_words=False,
                          break_on_hyphens=False) or [kept]
    return [ln.replace(_UNBROKEN, " ") for ln in lines]


_COMMAND = re.compile(r"`[^`\n]*`")
_UNBROKEN = "\x00"  # (stands for a space inside a command while the text is wrapped)


def error_lines(command: str, text: str, width: int | None = WIDTH) -> str:
    """An error of the ``hostarray`` command ``command`` as it goes to stderr: prefixed
    ``hostarray COMMAND:``, wrapped at ``width`` columns, later lines indented.

    Examples
    --------
    >>> from hostarray._text import error_lines
    >>> print(error_lines("demo", "one two three four five six", 24))
    hostarray demo: one two
      three four five six
    """
    return "\n".join(wrap(f"hostarray {command}: {text}", "  ", width))
