"""SIGTERM and SIGHUP stop a run between batches, so it ends 'interrupted' with its answers saved.

Killed outright, a run would stay 'running' and lose the batch in flight. Under `on_signals()` the first
signal only sets a flag; the runner checks it after each batch (`raise_if_requested`), saves, marks the
run interrupted and exits 128 + signal; the same command resumes it. A backend waiting on a server looks
at the flag (`requested`) so a batch ends within seconds, not when a slow server answers (the openai
backend sends no new request and abandons those in flight after a grace period). A second signal stops
at once.
"""

from __future__ import annotations

import contextlib
import signal
import threading
from collections.abc import Iterator
from types import FrameType

from probe.common.errors import RunInterrupted

STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)
_requested: list[int] = []  # the signals received while on_signals() is active


def _message(signal_number: int) -> str:
    return (
        f"stopped by {signal.Signals(signal_number).name}: the answers so far are saved and the run is "
        "marked interrupted; run the same command again to resume it"
    )


def _handle(signal_number: int, _frame: FrameType | None) -> None:
    if _requested:  # asked twice: do not wait for the batch
        raise RunInterrupted(signal_number, _message(signal_number))
    _requested.append(signal_number)


def requested() -> bool:
    """Whether a stop signal came (backends waiting on a server look, so they stop within a second)."""
    return bool(_requested)


def raise_if_requested() -> None:
    """Called between batches: raise RunInterrupted if a stop signal came."""
    if _requested:
        raise RunInterrupted(_requested[0], _message(_requested[0]))


@contextlib.contextmanager
def on_signals() -> Iterator[None]:
    """Catch SIGTERM and SIGHUP for the duration of a run (main thread only; elsewhere, nothing changes)."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = {number: signal.signal(number, _handle) for number in STOP_SIGNALS}
    _requested.clear()
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)
        _requested.clear()
