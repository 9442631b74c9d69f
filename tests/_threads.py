"""Running test bodies in threads (shared by the thread tests of every layer)."""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable


def run_in_threads(targets: list[Callable[[], None]], timeout: float,
                   switch: float | None = None) -> None:
    """Run each target in a daemon thread; fail on a hang (a thread alive ``timeout``
    seconds after the start), then re-raise the first error.

    ``switch``: the interpreter's thread switch interval meanwhile (seconds): a few
    bytecodes, and races between a check and the access it guards show up within a few
    hundred iterations."""
    errors: list[BaseException] = []

    def guard(f: Callable[[], None]) -> Callable[[], None]:
        def run() -> None:
            try:
                f()
            except BaseException as e:  # re-raised below, in the test's thread
                errors.append(e)
        return run

    threads = [threading.Thread(target=guard(f), daemon=True) for f in targets]
    interval = sys.getswitchinterval()
    if switch is not None:
        sys.setswitchinterval(switch)
    try:
        for t in threads:
            t.start()
        deadline = time.monotonic() + timeout
        for t in threads:
            t.join(max(0.0, deadline - time.monotonic()))
    finally:
        sys.setswitchinterval(interval)
    alive = [t.name for t in threads if t.is_alive()]
    assert not alive, f"deadlock: threads {alive} still running after {timeout} s"
    if errors:
        raise errors[0]
