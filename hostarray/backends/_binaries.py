"""A disk cache of built OpenCL programs: the driver's binary of each program hostarray
built, so that a later process loads it (a millisecond or two) instead of compiling it.

hostarray builds every program from its source (:func:`hostarray.backends.opencl.build_program`,
not pyopencl's ``Program.build``, whose cache warns through ``CompilerWarning``), so the
only cache across processes was the driver's own.  PoCL keeps one, but even its hits run the
preprocessor over OpenCL's built-in header: 50 to 150 ms a program on a 2-core machine,
where loading its binary takes 1 to 5 ms.  A process that runs a few hundred generated
kernels (the test suite's workers, a pipeline's first call) spends seconds on that.

A program's binary is written the second time a process builds it from source (the first
leaves an empty mark, ``<key>.seen``): asking the driver for a binary costs more than one
cache hit of PoCL's (:meth:`Entry.store`). An entry is one file, ``<key>.bin`` in
:func:`hostarray._settings.program_cache`'s folder (``HOSTARRAY_PROGRAM_CACHE``; ``off``: no
cache). Its key is a SHA-256 over everything that can change the binary: this module's
format version, the platform's name and version, the device's name, version and vendor, the
driver's version, the processed build options (pyopencl's include folder and
``PYOPENCL_BUILD_OPTIONS`` in them) and the source. What is
*not* cached, because the key would not see it change:

* sources that could have the preprocessor read a file (:func:`_may_include`: the included
  file may change under the same text);
* programs whose build wrote a log (a ``#warning``, a driver's remark): a program loaded
  from its binary has no log, and :attr:`hostarray.Program.warnings` would lose it.

A file holds a header (magic, the binary's length and SHA-256) before the binary: a file cut
short or altered is found out, removed and the program built from source. While the driver
loads a binary, a marker ``<key>.bin.loading`` holds the process id: a driver that crashes
on a binary instead of refusing it does so once, as the next process finds the marker of a
dead process and removes the entry. Files are written whole under a temporary name and
renamed (two processes building one program write the same bytes; a reader sees the old file
or the new one). A driver that loads binaries without their kernels' argument information
(OpenCL lets it: the argument info is only promised for programs built from source with
``-cl-kernel-arg-info``) is found out at its first load and then gets no cache (a mark
``no-arg-info-<device>`` in the folder says so to later processes; hostarray's launches and
checks need that information). A folder that can't be written is no error: programs are then
built from source, as without a cache. The folder is kept under :data:`MAX_BYTES`: past it,
the entries least recently used go.

This module talks to pyopencl and the file system only; its callers decide what to cache.
"""

from __future__ import annotations

import hashlib
import os
import struct
import tempfile
import threading
import time
from typing import Any

import pyopencl as cl

from .. import _settings

__all__ = ["FORMAT", "MAX_BYTES", "Entry", "entry", "trim"]

#: changes whenever the file format or the key changes (older files are never read)
FORMAT = 1
#: the folder's size past which the least recently used entries are removed (to 3/4 of it)
MAX_BYTES = 512 << 20
_MAGIC = b"hostarray-program\0"
_HEADER = struct.Struct("<Q32s")  # the binary's length, its SHA-256
_TRIM_EVERY = 64  # stores between two looks at the folder's size
_LEFTOVER_SECONDS = 3600  # a temporary file or marker this old belongs to no live process
_SEEN_SECONDS = 30 * 86400  # a program built once, not again in 30 days: its mark goes

_lock = threading.Lock()
_stores = 0
# devices (their key part) whose loaded binaries lacked argument info, in this process
_no_arg_info: set[str] = set()
_arg_info_ok: set[str] = set()  # devices whose loaded binaries kept it, in this process
_device_parts: dict[Any, str] = {}
_checked: set[tuple[str, str]] = set()  # (folder, device part) looked up for a no-arg-info mark


def _device_part(dev: Any) -> str:
    """What of ``dev`` (a ``cl.Device``) a key covers (cached: each property is a driver
    call)."""
    part = _device_parts.get(dev)
    if part is None:
        p = dev.platform
        part = "\n".join((p.name.strip(), p.version.strip(), dev.name.strip(),
                          dev.version.strip(), dev.vendor.strip(), dev.driver_version.strip()))
        _device_parts[dev] = part
    return part


class Entry:
    """The cache file of one program: :meth:`load` it, or :meth:`store` it once built."""

    __slots__ = ("path", "device", "part", "arg_info")

    def __init__(self, path: str, device: Any, part: str, arg_info: bool) -> None:
        self.path, self.device, self.part, self.arg_info = path, device, part, arg_info

    def load(self, ctx: cl.Context, options: bytes) -> Any:
        """The program built from the cached binary (pyopencl's raw ``_Program``), or
        ``None``: no file, a damaged one (removed), or a driver that would not take it."""
        try:
            with open(self.path, "rb") as f:
                data = f.read()
        except OSError:
            return None
        head = len(_MAGIC) + _HEADER.size
        ok = data.startswith(_MAGIC) and len(data) > head
        if ok:
            size, digest = _HEADER.unpack_from(data, len(_MAGIC))
            binary = data[head:]
            ok = size == len(binary) and hashlib.sha256(binary).digest() == digest
        if not ok:
            self._remove()
            return None
        marker = self.path + ".loading"
        if _died_loading(marker):
            self._remove()  # the driver crashed on this binary in an earlier process
            _unlink(marker)
            return None
        try:  # one write of a few bytes: a reader sees no pid yet, or all of it
            fd = os.open(marker, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
            try:
                os.write(fd, str(os.getpid()).encode())
            finally:
                os.close(fd)
        except OSError:
            pass
        try:
            raw = cl._cl._Program(ctx, [self.device], [binary])
            raw._build(options=options, devices=None)
        except cl.Error:
            self._remove()  # a driver that changed without saying so in its version
            return None
        finally:
            _unlink(marker)
        if self.arg_info and self.part not in _arg_info_ok and not _has_arg_info(raw):
            _no_arg_info.add(self.part)
            try:  # for later processes too: none of them loads an entry for this device
                with open(_no_arg_info_mark(os.path.dirname(self.path), self.part), "wb"):
                    pass
            except OSError:
                pass
            return None
        if self.arg_info:
            _arg_info_ok.add(self.part)  # the driver keeps it: not asked again per load
        try:
            os.utime(self.path)  # recently used: trimmed last
        except OSError:
            pass
        return raw

    def store(self, raw: Any, logged: bool = False) -> None:
        """Write the binary of ``raw`` (built from source) where an earlier process built it
        too (its ``.seen`` mark is there) and this build's log is empty (not ``logged``),
        else leave that mark; nothing where the driver gives no binary or the folder can't
        be written.  (NVIDIA's driver writes a log when it compiles, none when its own cache
        answers: the mark is left either way, the binary written from an empty-log build.)

        Asking a driver for a binary costs: PoCL compiles the kernels once more (for any
        local size), 85 ms for a small kernel on a 2-core machine, more than its own cache
        hit (30 to 150 ms).  A program built in one process only never pays it; one built
        again pays it once, and every later process loads it in a millisecond or two."""
        if self.part in _no_arg_info:  # found out at this entry's load: no cache here
            return
        seen = self.path[:-len(".bin")] + ".seen"
        if not os.path.exists(seen):
            try:
                os.makedirs(os.path.dirname(seen), exist_ok=True)
                with open(seen, "xb"):
                    pass
            except OSError:  # another process marked it first, or the folder can't be written
                pass
            return
        if logged:
            return
        _unlink(seen)
        try:
            binaries = raw.get_info(cl.program_info.BINARIES)
        except cl.Error:
            return
        if len(binaries) != 1 or not binaries[0]:
            return
        binary = bytes(binaries[0])
        folder = os.path.dirname(self.path)
        try:
            os.makedirs(folder, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=folder, prefix=".tmp-")
            try:
                with os.fdopen(fd, "wb") as f:
                    f.write(_MAGIC + _HEADER.pack(len(binary), hashlib.sha256(binary).digest())
                            + binary)
                os.replace(tmp, self.path)
            except BaseException:
                try:
                    os.unlink(tmp)
                except OSError:
                    pass
                raise
        except OSError:
            return
        global _stores
        with _lock:
            _stores += 1
            due = _stores % _TRIM_EVERY == 1  # a process's first store, then every 64th
        if due:
            trim(folder)

    def _remove(self) -> None:
        _unlink(self.path)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


def _died_loading(marker: str) -> bool:
    """Whether ``marker`` names a process that is gone: it died while the driver loaded
    the entry (a driver may crash on a binary instead of refusing it; removing the entry
    makes that happen once, not in every later process)."""
    try:
        with open(marker) as f:
            text = f.read().strip()
    except OSError:
        return False
    if not text.isdigit():  # being written by another loader right now (or not ours)
        return False
    pid = int(text)
    if pid == 0:
        return False
    if pid == os.getpid():  # another thread of this process loads it now (two like devices)
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except OSError:  # alive, another user's
        return False
    return False


def _has_arg_info(raw: Any) -> bool:
    """Whether every kernel of ``raw`` answers clGetKernelArgInfo."""
    prg = cl.Program(raw)
    try:
        for k in prg.all_kernels():
            if k.num_args:
                k.get_arg_info(0, cl.kernel_arg_info.TYPE_NAME)
    except cl.Error:
        return False
    return True


def _no_arg_info_mark(folder: str, part: str) -> str:
    """The file that says a device's loaded binaries lack argument info."""
    return os.path.join(folder, "no-arg-info-" + hashlib.sha256(part.encode()).hexdigest()[:16])


def _may_include(source: str) -> bool:
    """Whether the preprocessor could read another file for ``source``: any spelling of
    ``#include`` (``# include``, ``%:include``, ``#/**/include``, a line continuation),
    ``#import``, ``__has_include``, ``#embed`` has one of these words in it."""
    return "include" in source or "import" in source or "embed" in source


def entry(ctx: cl.Context, source: str, options: bytes) -> Entry | None:
    """The cache entry of ``source`` built with the processed ``options`` on ``ctx``'s one
    device, or ``None``: no cache (``HOSTARRAY_PROGRAM_CACHE=off``), a context of several
    devices, a source with an ``#include``, or a device whose binaries lost their
    argument info in this process."""
    folder = _settings.program_cache()
    if folder is None or _may_include(source):
        return None
    devices = ctx.devices
    if len(devices) != 1:
        return None
    dev = devices[0]
    part = _device_part(dev)
    if part in _no_arg_info:
        return None
    if (folder, part) not in _checked:
        _checked.add((folder, part))
        if os.path.exists(_no_arg_info_mark(folder, part)):
            _no_arg_info.add(part)
            return None
    h = hashlib.sha256()
    for piece in (f"hostarray program cache {FORMAT}", part, options.decode("utf-8", "replace"),
                  source):
        h.update(piece.encode("utf-8", "surrogatepass"))
        h.update(b"\0")
    return Entry(os.path.join(folder, h.hexdigest() + ".bin"), dev, part,
                 b"-cl-kernel-arg-info" in options)


def trim(folder: str, limit: int = MAX_BYTES) -> None:
    """Remove the least recently used entries of ``folder`` until it holds at most 3/4 of
    ``limit`` bytes, where it holds more than ``limit``; temporary files and load markers
    older than an hour (of processes that died) and marks of programs not built again in
    30 days go whatever the size.  Run at a process's first store and every 64th after."""
    try:
        names = os.listdir(folder)
    except OSError:
        return
    files = []
    total = 0
    now = time.time()
    stale, forgotten = now - _LEFTOVER_SECONDS, now - _SEEN_SECONDS
    for name in names:
        leftover = name.startswith(".tmp-") or name.endswith(".loading")
        seen = name.endswith(".seen")
        if not (name.endswith(".bin") or leftover or seen):
            continue
        path = os.path.join(folder, name)
        try:
            st = os.stat(path)
        except OSError:
            continue
        if (leftover and st.st_mtime < stale) or (seen and st.st_mtime < forgotten):
            # of a process that died writing or loading; a program not built again in weeks
            _unlink(path)
            continue
        if seen:
            continue
        files.append((st.st_mtime, st.st_size, path))
        total += st.st_size
    if total <= limit:
        return
    files.sort()
    for _, size, path in files:
        if total <= limit * 3 // 4:
            break
        try:
            os.unlink(path)
        except OSError:
            continue
        total -= size
