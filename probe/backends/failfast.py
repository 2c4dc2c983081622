"""Fail fast on a server that cannot answer: a breaker over the requests of an openai backend, the whole run long.

A server that accepts connections but never answers, trickles bytes, answers every request with 5xx or
429, would otherwise be retried item by item for as long as the run is (minutes to hours), and end in
--max-failed-share. Until the server has answered one request, the breaker watches the requests:

- a struck item is one that failed STRIKES times, or for good (its last allowed attempt, or a failure that
  is not retried: a reply too large, a 400); when STRUCK_ITEMS items are struck and no request succeeded,
  the run stops;
- the first reply must come within `window_s` of the first request (FIRST_REPLY_WINDOW_S, or the
  timeout if that is longer): each request's deadline is cut to what is left of it.

After the first success it relaxes, but keeps watching: an item that fails is the item's own (retried, then
stored as unknown), unless MID_RUN_STRUCK_ITEMS items in a row are struck with no success between them - a
server that died, or started answering every request with 5xx, at item 5,000 - which stops the run with one
line; what was answered is saved and the same command resumes it. Flapping servers answer some requests in
between, so they never trip it.
"""

from __future__ import annotations

import time

from probe.common.errors import RunFailed

STRIKES = 3  # failed attempts of one item (a flapping server rarely fails one item three times in a row)
STRUCK_ITEMS = 4  # struck items, with no success anywhere, that stop the run
FIRST_REPLY_WINDOW_S = 40.0  # with start-up and stage building, an unusable server fails a run within a minute
# Struck items in a row, after the server has answered, that stop the run: more than at the start, since a few
# items may fail on their own (a prompt a server refuses) once a server is known to work.
MID_RUN_STRUCK_ITEMS = 16


class FirstRequestsBreaker:
    """Stops a run whose first requests all fail, or whose recent requests all fail; see the module docstring."""

    def __init__(self, where: str, *, timeout_s: float, max_retries: int) -> None:
        self._where = where
        self._strikes = min(STRIKES, max_retries + 1)
        self._timeout_s = timeout_s
        self.window_s = max(FIRST_REPLY_WINDOW_S, timeout_s)
        self._started_at: float | None = None
        self._answered = False
        self._struck = 0
        self._struck_in_a_row = 0  # after the first success: struck items since the last success
        self._last_cause = ""
        self._tripped: str | None = None  # the message, once tripped: every request in flight reports the same

    def attempt_deadline_s(self) -> float:
        """Seconds the next attempt may take: the timeout, cut to what is left of the first-reply window."""
        if self._answered:
            return self._timeout_s
        now = time.monotonic()
        if self._started_at is None:
            self._started_at = now
        left = self._started_at + self.window_s - now
        if left <= 0:
            self._trip_on_window()
        return min(self._timeout_s, left)

    def succeeded(self) -> None:
        self._answered = True
        self._struck_in_a_row = 0

    def failed(self, attempt: int, cause: str, *, last: bool = False) -> None:
        """After the `attempt`-th (0-based) failure of an item (`last`: it is not tried again): raise RunFailed
        when the breaker trips."""
        struck = attempt + 1 == self._strikes or (last and attempt + 1 < self._strikes)
        if self._answered:
            self._mid_run(struck, cause)
            return
        assert self._started_at is not None  # an attempt took its deadline first
        if self._tripped is None:
            self._last_cause = cause
            if struck:
                self._struck += 1
        if self._struck >= STRUCK_ITEMS:
            self._trip(
                f"the server answered none of the first requests ({self._struck} items failed, the last with: "
                f"{self._last_cause}); the run is marked failed and resumes with the same command"
            )
        if time.monotonic() - self._started_at >= self.window_s:
            self._trip_on_window()

    def _mid_run(self, struck: bool, cause: str) -> None:
        """After the server has answered: stop when MID_RUN_STRUCK_ITEMS items in a row are struck."""
        if self._tripped is None and struck:
            self._last_cause = cause
            self._struck_in_a_row += 1
        if self._struck_in_a_row >= MID_RUN_STRUCK_ITEMS:
            self._trip(
                f"the server stopped answering: the last {self._struck_in_a_row} items failed with no success "
                f"between them (the last with: {self._last_cause}); what was answered is saved, the run is marked "
                "failed and resumes with the same command"
            )

    def _trip_on_window(self) -> None:
        self._trip(
            f"no reply within {self.window_s:g} s of the first request (last: {self._last_cause or 'none finished'}); "
            "the run is marked failed and resumes with the same command (a server still loading its model may need "
            "a longer `timeout`)"
        )

    def _trip(self, message: str) -> None:
        self._tripped = self._tripped or f"{self._where}: {message}"
        raise RunFailed(self._tripped)

    def wait_s(self, delay_s: float) -> float:
        """A retry's wait, cut so that it does not outlast the first-reply window."""
        if self._answered or self._started_at is None:
            return delay_s
        return max(0.0, min(delay_s, self._started_at + self.window_s - time.monotonic()))
