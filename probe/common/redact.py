"""Keys never leave the process: scrub secrets from every text before it is stored, printed or exported.

A key reaches us from OPENAI_API_KEY or inside a --base-url (`user:key@host`, `?api-key=...`), and can come
back in a server's error body (some servers echo the Authorization header), whole, cut short or re-encoded.
`scrub` removes every known key value wherever it appears: plain, percent-encoded, base64-encoded (alone,
as HTTP basic auth or inside any longer base64 text) and any piece of 8 or more of its characters; plus
anything shaped like an Authorization header or a secret query parameter. `safe_url` masks a URL's
credentials and query values.
"""

from __future__ import annotations

import base64
import functools
import logging
import os
import re
import urllib.parse

MASK = "***"
API_KEY_VARIABLE = "OPENAI_API_KEY"
_MIN_SECRET_LENGTH = 4  # shorter "keys" (e.g. "x" for a local server) would blank out ordinary text
_MIN_PIECE = 8  # a run of this many characters of a key is masked wherever it appears (a key cut short)
_known_secrets: set[str] = set()

_HEADER = re.compile(
    r"(?i)\b(authorization|proxy-authorization|x-api-key|api-key)([\"']?\s*[:=]\s*[\"']?)(?:(?:bearer|basic)\s+)?[^\s\",;}']+"
)
# A credential after an auth scheme: 12+ token characters with a digit ("Basic skills" stays as it is).
_SCHEME = re.compile(r"\b(Bearer|Basic|bearer|basic)\s+(?=[A-Za-z._~+/=-]*\d)[A-Za-z0-9._~+/=-]{12,}")
_QUERY_SECRET = re.compile(r"(?i)([?&;](?:api[-_]?key|key|token|access[-_]?token|secret|password|sig)=)[^&#\s\"']+")
_USERINFO = re.compile(r"(?i)\b([a-z][a-z0-9+.-]*://)[^/\s@\"']*@")
_OPENAI_KEY_SHAPE = re.compile(r"\bsk-[A-Za-z0-9_-]{8,}")


def register_secret(value: str | None) -> None:
    """Remember a secret so `scrub` removes it from any later text (and its basic-auth base64 forms)."""
    if value and len(value) >= _MIN_SECRET_LENGTH:
        _known_secrets.add(value)


def register_url_secrets(url: str | None) -> None:
    """A URL's userinfo password (or a lone user, `https://KEY@host`) and its query values are secrets.

    The user name beside a password is not (it may be a word like "user" that ordinary text contains).
    """
    if not url:
        return
    parts = urllib.parse.urlsplit(url)
    user = urllib.parse.unquote(parts.username or "")
    password = urllib.parse.unquote(parts.password or "")
    for value in (parts.password, password) if parts.password is not None else (parts.username, user):
        register_secret(value)
    if user or password:
        register_secret(base64.b64encode(f"{user}:{password}".encode()).decode())
    for _, value in urllib.parse.parse_qsl(parts.query):
        register_secret(value)


def scrub_logs() -> None:
    """Scrub every log record from now on (httpx logs request URLs, openai request options at DEBUG).

    Installed once, process-wide, when a backend that holds a key is created; a record's message is
    formatted and scrubbed when it is made, so no handler or formatter sees the key.
    """
    previous = logging.getLogRecordFactory()
    if getattr(previous, "scrubs", False):
        return

    def scrubbing_factory(*args: object, **kwargs: object) -> logging.LogRecord:
        record = previous(*args, **kwargs)
        try:
            message = record.getMessage()
        except (TypeError, ValueError):  # a malformed call: logging reports it later as it always does
            return record
        record.msg, record.args = scrub(message), None
        return record

    scrubbing_factory.scrubs = True  # type: ignore[attr-defined]
    logging.setLogRecordFactory(scrubbing_factory)


def _secrets() -> list[str]:
    register_secret(os.environ.get(API_KEY_VARIABLE))
    return sorted(_known_secrets, key=len, reverse=True)  # longest first: a key containing another


@functools.lru_cache(maxsize=64)
def _forms(secret: str) -> tuple[str, ...]:
    """The texts a key can travel as: itself, percent-encoded, and the base64 of its bytes at each of the three
    alignments a longer base64 text can put it in (only the characters no neighbouring byte changes)."""
    raw = secret.encode()
    forms = {secret, urllib.parse.quote(secret, safe=""), urllib.parse.quote_plus(secret)}
    for shift in range(3):
        aligned = raw[shift : shift + (len(raw) - shift) // 3 * 3]
        for encode in (base64.b64encode, base64.urlsafe_b64encode):
            forms.add(encode(aligned).decode())
    return tuple(form for form in forms if len(form) >= _MIN_SECRET_LENGTH)


@functools.lru_cache(maxsize=8)
def _pieces(secrets: tuple[str, ...]) -> tuple[frozenset[str], tuple[str, ...]]:
    """Every 8-character piece of every form of the secrets, and the forms shorter than that (matched whole)."""
    forms = [form for secret in secrets for form in _forms(secret)]
    pieces = frozenset(form[at : at + _MIN_PIECE] for form in forms for at in range(len(form) - _MIN_PIECE + 1))
    return pieces, tuple(form for form in forms if len(form) < _MIN_PIECE)


def _mask_known_secrets(text: str) -> str:
    """Mask every 8-character window that is a piece of a known secret's form (overlapping windows: one mask),
    and every short secret whole. One pass over the text, whatever the number of keys."""
    pieces, short_forms = _pieces(tuple(_secrets()))
    if not pieces and not short_forms:  # no key known (a local backend): nothing to look for
        return text
    spans = [(at, at + _MIN_PIECE) for at in range(len(text) - _MIN_PIECE + 1) if text[at : at + _MIN_PIECE] in pieces]
    for form in short_forms:
        at = text.find(form)
        while at != -1:
            spans.append((at, at + len(form)))
            at = text.find(form, at + 1)
    if not spans:
        return text
    merged: list[list[int]] = []
    for start, end in sorted(spans):
        if merged and start <= merged[-1][1]:  # overlapping pieces of one key: one mask
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    parts, last = [], 0
    for start, end in merged:
        parts += [text[last:start], MASK]
        last = end
    return "".join([*parts, text[last:]])


def scrub(text: object) -> str:
    """`text` with every known secret (in any of its forms, or a piece of it) and every credential-shaped
    substring replaced by ***."""
    clean = _mask_known_secrets(str(text))
    clean = _USERINFO.sub(rf"\1{MASK}@", clean)
    clean = _HEADER.sub(rf"\1\2{MASK}", clean)
    clean = _SCHEME.sub(rf"\1 {MASK}", clean)
    clean = _QUERY_SECRET.sub(rf"\1{MASK}", clean)
    return _OPENAI_KEY_SHAPE.sub(MASK, clean)


def safe_url(url: str | None) -> str | None:
    """`https://user:key@host/v1?api-key=k&v=2` -> `https://***@host/v1?api-key=***&v=***`.

    Every query value is masked, not only known names: servers invent their own (`?code=`, `?sig=`).
    """
    if not url:
        return url
    parts = urllib.parse.urlsplit(url)
    netloc = parts.netloc
    if "@" in netloc:
        netloc = f"{MASK}@" + netloc.rpartition("@")[2]
    query = "&".join(
        f"{name}={MASK}" if value else name
        for name, value in urllib.parse.parse_qsl(parts.query, keep_blank_values=True)
    )
    return urllib.parse.urlunsplit(parts._replace(netloc=netloc, query=query))


def host_port(url: str | None) -> str:
    """`host:port` of a URL (the default port of its scheme when none is given); never its credentials."""
    if not url:
        return "api.openai.com:443"
    parts = urllib.parse.urlsplit(url)
    try:
        port = parts.port
    except ValueError:
        port = None
    port = port or (443 if parts.scheme == "https" else 80)
    host = parts.hostname or "?"
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
