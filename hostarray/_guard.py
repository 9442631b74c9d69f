"""The transfer guard: see, or refuse, the transfers hostarray makes on its own.

hostarray moves data lazily: a host read *acquires* what a device wrote, a launch
*publishes* what the host wrote.  Every such transfer goes through
``Storage._acquire`` or ``Storage._publish``, which call the hooks of
``hostarray._storage.BEFORE_TRANSFER`` before a byte moves; the guard is that hook
(installed the first time a mode other than ``"allow"`` is set, so a process that never
uses it pays nothing).  Per thread, the innermost :func:`transfer_guard` block's mode
applies, else the process default (:func:`set_transfer_guard`, first read from
``HOSTARRAY_TRANSFER_GUARD``):

* ``"allow"``: transfers happen (the default);
* ``"log"``: each implicit transfer is logged (logger ``hostarray.transfers``, level
  WARNING, one record per transfer that ``ha.stats()`` counts) and happens; the records go
  to the handlers (user code) once the storage's lock is released
  (``_storage.after_unlock``), never in the middle of the planned transfers;
* ``"disallow"``: an implicit transfer raises :class:`~hostarray.errors.TransferDisallowed`
  before it moves a byte or records anything.

Transfers asked for by name (``hostptr.publish_host_writes``,
``acquire_device_writes``, ``free_buffer``) run inside :data:`EXPLICIT`: never logged,
never refused.
"""

from __future__ import annotations

import logging
import os
import sys
import threading
from collections.abc import Hashable
from contextlib import AbstractContextManager
from types import FrameType, TracebackType
from typing import Any

import numpy as np

from . import _settings, _storage
from ._coherence import Run
from .errors import TransferDisallowed

__all__ = ["transfer_guard", "set_transfer_guard", "EXPLICIT", "LOGGER", "MODES", "ENV"]

MODES = _settings.TRANSFER_GUARD_MODES
ENV = "HOSTARRAY_TRANSFER_GUARD"
LOGGER = logging.getLogger("hostarray.transfers")


class _Thread(threading.local):
    """This thread's guard: ``__init__`` runs once in each thread that looks."""

    def __init__(self) -> None:
        self.mode: str | None = None  # the innermost transfer_guard block's (None: none open)
        self.saved: list[str | None] = []  # the modes to restore, one per open block
        self.explicit = 0  # explicit hostptr calls under way


_THREAD = _Thread()
# the process default: HOSTARRAY_TRANSFER_GUARD (checked at the first transfer, as
# HOSTARRAY_LINK is at the first device use), then set_transfer_guard
_default = _settings.transfer_guard(checked=False)


def _check(mode: Any) -> str:
    if mode not in MODES:
        raise ValueError(f"transfer guard mode {mode!r}: use one of 'allow', 'log', 'disallow'")
    return str(mode)


def check_environment() -> None:
    """Raise the ``ValueError`` an unknown ``HOSTARRAY_TRANSFER_GUARD`` gets at the first
    transfer, now, where the process default is still its value (the command line checks
    every variable before any work: :func:`hostarray._settings.check`)."""
    if _default not in MODES:
        _settings.transfer_guard({ENV: _default})


_INSTALL_LOCK = threading.Lock()


def _install() -> None:
    with _INSTALL_LOCK:  # once, whichever thread comes first
        if _before_transfer not in _storage.BEFORE_TRANSFER:
            _storage.BEFORE_TRANSFER.append(_before_transfer)


class _Block:
    """The context manager :func:`transfer_guard` returns (reusable, also nested in itself:
    the modes to restore are kept per thread)."""

    __slots__ = ("mode",)

    def __init__(self, mode: str) -> None:
        self.mode = mode

    def __enter__(self) -> None:
        t = _THREAD
        t.saved.append(t.mode)
        t.mode = self.mode
        if self.mode != "allow":
            _install()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        t = _THREAD
        t.mode = t.saved.pop()

    def __repr__(self) -> str:
        return f"transfer_guard({self.mode!r})"


def transfer_guard(mode: str) -> AbstractContextManager[None]:
    """A block in which hostarray's implicit transfers are allowed, logged or refused.

    hostarray moves data on its own: a host read *acquires* what a kernel wrote, a launch
    *publishes* what the host wrote (see the coherence model).  Inside
    ``with ha.transfer_guard(mode):`` this thread's implicit transfers are

    * ``"allow"``: made, silently (the default);
    * ``"log"``: made, and each logged: one ``WARNING`` record per transfer (one per
      publish or acquire that :func:`hostarray.stats` counts) on the logger
      ``"hostarray.transfers"``, saying the direction, the bytes and their range, the device
      and its link, what needed it and the caller's file and line (the record's
      ``pathname``/``lineno`` are the caller's; its attributes ``direction``, ``nbytes``,
      ``byte_range``, ``device``, ``link`` and ``trigger`` carry the same as data).  Without
      any logging configuration Python prints it on stderr.  The handlers get the record
      once the operation that made the transfer is complete (before it returns): a handler
      may use the array itself, and what it writes is the newest data;
    * ``"disallow"``: refused: :class:`~hostarray.errors.TransferDisallowed` is raised
      before any byte moves, and nothing changes (the bytes, the coherence state,
      ``ha.stats()``), so the caller can make the transfer explicit and try again.

    Implicit is everything but the three explicit calls of :mod:`hostarray.hostptr`:
    :func:`~hostarray.hostptr.publish_host_writes`,
    :func:`~hostarray.hostptr.acquire_device_writes` and
    :func:`~hostarray.hostptr.free_buffer` are always allowed and never logged.  Host reads
    and writes (indexing, ``float(x)``, numpy functions, the ``ha`` namespace, printing),
    raw views (``np.asarray(x)``, DLPack), launches and ``hostptr.cl_buffer`` are implicit.

    The setting belongs to the calling thread: other threads keep theirs.  Blocks nest (the
    innermost wins) and restore the previous setting on exit, also when the block raises.
    Outside any block the process default applies (:func:`set_transfer_guard`, first read
    from the environment variable ``HOSTARRAY_TRANSFER_GUARD``).

    One transfer is made under ``"disallow"`` all the same, and logged as a warning: the
    acquire right after a launch wrote bytes that a live raw view reaches (a numpy view
    from ``np.asarray(x)``, or a numpy array adopted with ``ha.asarray(a, device=dev)``
    that you still hold).  The launch is enqueued by then, and the raw view must see its
    result.  Drop such views before launching to keep every transfer explicit.

    Parameters
    ----------
    mode : {"allow", "log", "disallow"}
        What to do with this thread's implicit transfers inside the block.

    Returns
    -------
    context manager
        Use it in a ``with`` statement; it sets nothing until the block starts, and may be
        entered again.

    Raises
    ------
    ValueError
        ``mode`` is not one of the three (raised here, not when the block starts).

    See Also
    --------
    set_transfer_guard : the process default, outside any block.
    hostarray.errors.TransferDisallowed : what ``"disallow"`` raises.

    Examples
    --------
    >>> import logging, sys
    >>> import hostarray as ha
    >>> dev = ha.device("opencl")
    >>> prg = ha.Program("__kernel void one(__global float *y) { y[get_global_id(0)] = 1; }",
    ...                  device=dev)
    >>> x = ha.zeros(1024, dtype=ha.float32, device=dev)
    >>> _ = prg.one(x.shape, ha.write(x))           # the device holds x's newest bytes
    >>> with ha.transfer_guard("disallow"):
    ...     try:
    ...         float(x[0])                         # would acquire 4 bytes
    ...     except ha.errors.TransferDisallowed as e:
    ...         print(e.direction, e.nbytes)
    ...     ha.hostptr.acquire_device_writes(x, dev)  # explicit: always allowed
    ...     print(float(x[0]))                      # nothing left to move
    acquire 4
    1.0

    Logged: a handler on the logger shows each transfer (here on stdout).

    >>> log = logging.getLogger("hostarray.transfers")
    >>> log.addHandler(handler := logging.StreamHandler(sys.stdout))
    >>> _ = prg.one(x.shape, ha.write(x))
    >>> with ha.transfer_guard("log"):
    ...     print(float(x[1]))
    implicit acquire of 4 bytes [4, 8) from ... needed by HostPtrArray.__getitem__ at ...
    1.0
    >>> log.removeHandler(handler)
    """
    return _Block(_check(mode))


def set_transfer_guard(mode: str) -> str:
    """Set the process default of the transfer guard; return the previous default.

    The default applies in every thread outside :func:`transfer_guard` blocks (a block
    overrides it in its own thread).  It starts as the environment variable
    ``HOSTARRAY_TRANSFER_GUARD`` says (``allow``, ``log`` or ``disallow``; unset or
    empty: ``allow``), read when hostarray is imported; another value there is refused
    with a ``ValueError`` at the first implicit transfer.

    Parameters
    ----------
    mode : {"allow", "log", "disallow"}
        See :func:`transfer_guard`.

    Returns
    -------
    str
        The default before the call, to restore it later.

    Raises
    ------
    ValueError
        ``mode`` is not one of the three (nothing changes).

    Examples
    --------
    >>> import hostarray as ha
    >>> previous = ha.set_transfer_guard("log")     # every thread, outside blocks
    >>> ha.set_transfer_guard(previous)
    'log'
    """
    global _default
    mode = _check(mode)
    previous, _default = _default, mode
    if mode != "allow":
        _install()
    return previous


class _Explicit:
    """``with EXPLICIT:`` around a transfer the user asked for by name (hostptr's
    ``publish_host_writes``, ``acquire_device_writes``, ``free_buffer``): the guard lets it
    through unlogged."""

    __slots__ = ()

    def __enter__(self) -> None:
        _THREAD.explicit += 1

    def __exit__(self, *exc: Any) -> None:
        _THREAD.explicit -= 1


EXPLICIT = _Explicit()

# -- the hook ---------------------------------------------------------------------------------

_OWN = os.path.dirname(os.path.abspath(__file__)) + os.sep
_NUMPY = os.path.dirname(os.path.abspath(np.__file__)) + os.sep
def _name(f: FrameType) -> str:
    """``HostPtrArray.__float__``, ``hostarray.sum``, ``Kernel.__call__`` ..."""
    code = f.f_code
    name = getattr(code, "co_qualname", None)  # Python >= 3.11
    if name is None:
        self = f.f_locals.get("self")
        name = code.co_name if self is None else f"{type(self).__name__}.{code.co_name}"
    if "." not in name:  # a function: its public module (hostarray._api.x -> hostarray)
        parts = str(f.f_globals.get("__name__", "")).split(".")
        private = next((i for i, p in enumerate(parts) if p.startswith("_")), len(parts))
        name = ".".join([*parts[:private], name])
    return name


def _caller() -> tuple[str, FrameType | None]:
    """What needed the transfer (the outermost hostarray frame) and the caller's frame (the
    first frame outside hostarray and numpy), seen from the hook."""
    f: FrameType | None = sys._getframe(2)
    outer = None
    while f is not None:
        filename = f.f_code.co_filename
        if filename.startswith(_OWN):
            outer = f
        elif not filename.startswith(_NUMPY):
            break
        f = f.f_back
    return ("hostarray" if outer is None else _name(outer)), f


def _link(storage: _storage.Storage, key: Hashable) -> str:
    return str(getattr(storage.buffers.get(key), "link", "unknown"))


def _before_transfer(storage: _storage.Storage, direction: str, runs: list[Run],
                     refusable: bool = True) -> None:
    """``_storage.BEFORE_TRANSFER``'s hook: log or refuse an implicit transfer.

    ``refusable`` is ``False`` for the acquire a launch makes, once enqueued, for live raw
    views of the bytes it wrote: raising there would leave the launch half recorded."""
    t = _THREAD
    if t.explicit or not runs:
        return
    mode = t.mode or _default
    if mode == "allow":
        return
    if mode not in MODES:
        raise ValueError(f"{ENV}={mode!r}: use one of allow, log, disallow")
    note = ""
    if mode == "disallow":
        if refusable:
            trigger, caller = _caller()
            if caller is not None:
                trigger = f"{trigger} at {caller.f_code.co_filename}:{caller.f_lineno}"
            key = runs[0][2]
            nbytes = sum(hi - lo for lo, hi, k in runs if k == key)
            raise TransferDisallowed(direction, nbytes, key, trigger)
        note = (" (made under 'disallow': the launch is enqueued, and live raw views of "
                "these bytes must see its result)")
    if not LOGGER.isEnabledFor(logging.WARNING):
        return
    trigger, caller = _caller()
    site = "" if caller is None else f"{caller.f_code.co_filename}:{caller.f_lineno}"
    to = "from" if direction == "acquire" else "to"
    for lo, hi, key in runs:
        link = _link(storage, key)
        shown = "shared link: no byte copied" if link == "shared" else f"{link} link"
        record = LOGGER.makeRecord(
            LOGGER.name, logging.WARNING,
            caller.f_code.co_filename if caller is not None else "(unknown file)",
            caller.f_lineno if caller is not None else 0,
            "implicit %s of %d bytes [%d, %d) %s %s (%s), needed by %s at %s%s",
            (direction, hi - lo, lo, hi, to, key, shown, trigger, site or "(unknown)", note),
            None, caller.f_code.co_name if caller is not None else None,
            {"direction": direction, "nbytes": hi - lo, "byte_range": (lo, hi),
             "device": key, "link": link, "trigger": trigger, "call_site": site})
        # the handlers are the user's code: they run once the transfer is made and the
        # storage's lock released (a handler may read or write the array itself)
        _storage.after_unlock(storage, LOGGER.handle, record)


if _default != "allow":  # HOSTARRAY_TRANSFER_GUARD (an unknown value is refused at first use)
    _install()
