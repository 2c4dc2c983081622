"""What a failed request to an OpenAI-compatible server means: worth a retry, after how long, or the end of the run.

A 429 or 5xx, a timeout, a dropped connection or an unreadable reply is transient: retried after the server's
Retry-After (capped at MAX_RETRY_AFTER_S) or an exponential backoff (capped at MAX_BACKOFF_S). A refused
connection, an unknown host, a redirect loop or an unknown model would fail every other request the same way, so
it stops the run (RunFailed). Every text that reaches an error is scrubbed of secrets (probe/common/redact.py).
"""

from __future__ import annotations

import email.utils
import re
import time

import httpx
import openai

from probe.common.errors import RunFailed
from probe.common.redact import scrub

MAX_BACKOFF_S = 60.0
MAX_RETRY_AFTER_S = 15.0  # a server asking for longer waits (Retry-After: 3600) is not waited for that long
_UNKNOWN_MODEL = re.compile(r"(?i)model\b.{0,80}\b(not found|does not exist|unknown|not available)")


def is_transient(error: Exception) -> bool:
    if isinstance(error, openai.APIStatusError):
        return error.status_code == 429 or error.status_code >= 500
    return True  # connection errors, timeouts, unreadable or unparsable replies


def names_an_unknown_model(error: Exception) -> bool:
    """A 400 that says the model does not exist: every request would get it."""
    return bool(_UNKNOWN_MODEL.search(str(error)))


def retry_delay(error: Exception, attempt: int, backoff_s: float) -> float:
    """Retry-After when the server sent one, else exponential backoff from `backoff_s`; both capped."""
    response = getattr(error, "response", None)
    header = response.headers.get("retry-after") if response is not None else None
    retry_after = _seconds(header) if header else None
    if retry_after is not None:
        return min(retry_after, MAX_RETRY_AFTER_S)
    return min(backoff_s * 2**attempt, MAX_BACKOFF_S)


def raise_if_every_request_would_fail(where: str, error: Exception) -> None:
    """Refused, unknown host, a redirect loop: every other request to `where` would fail the same way."""
    if not isinstance(error, openai.APIConnectionError):
        return
    if _caused_by(error, httpx.TooManyRedirects):
        raise RunFailed(f"{where}: redirect loop ({_root_cause(error)}); check the --base-url") from None
    if _caused_by(error, httpx.ConnectError):
        raise RunFailed(
            f"{where}: cannot connect ({_root_cause(error)}); is the server running and the --base-url right?"
        ) from None


def describe(error: Exception) -> str:
    """One line, at most 300 characters of it from the server, with every secret scrubbed."""
    text = " ".join(scrub(error).split())
    return f"{type(error).__name__}: {text[:300]}"


def _seconds(header: str) -> float | None:
    """Retry-After is either delay-seconds or an HTTP date."""
    try:
        return max(0.0, float(header))
    except ValueError:
        parsed = email.utils.parsedate_to_datetime(header) if header else None
        return max(0.0, parsed.timestamp() - time.time()) if parsed else None


def _caused_by(error: BaseException, kind: type[BaseException]) -> bool:
    """Whether an httpx error of `kind` is in the chain behind an openai error (openai wraps them)."""
    cause = error.__cause__
    while cause is not None:
        if isinstance(cause, kind) or type(cause).__name__ == kind.__name__:  # httpcore has its own classes
            return True
        cause = cause.__cause__ or cause.__context__
    return False


def _root_cause(error: BaseException) -> str:
    while error.__cause__ is not None or error.__context__ is not None:
        error = error.__cause__ or error.__context__
    return scrub(str(error) or type(error).__name__)[:200]
