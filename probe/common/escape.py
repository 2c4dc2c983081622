"""Escaping user strings for each output, and writing output files atomically.

Names, occupations, model ids, run ids and server error texts come from users or from servers we do not
control, so each output escapes them for its own syntax: HTML through Jinja autoescape (report
templates), Markdown with `markdown_text`, CSV with `csv_cell`, the terminal through a `literal_console`.
JSON documents are standard JSON (`strict_json`: no NaN or Infinity). Files are written whole or not at all
(`atomic_path`), so a crash never leaves half a report or export.
"""

from __future__ import annotations

import contextlib
import json
import math
import os
import re
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pandas as pd
from rich.console import Console

# What CommonMark (with GitHub's tables and strikethrough) reads as markup anywhere in a line, and only that: a
# backslash before punctuation (an escape), code, emphasis (`_` only at a word's edge: x_y is text), the `]` that
# makes a link, image or link definition (`](`, `][`, `]:`), raw HTML and autolinks (`<` before a tag, a scheme,
# `/`, `!` or `?`), an entity (`&amp;`), a table cell, strikethrough. "[0.2, 0.4]", "q < 0.05" and "R&D" are text.
_MARKDOWN_INLINE = re.compile(
    r"\\(?=[!-/:-@\[-`{-~])|[`*|~]|\](?=[(\[:])|<(?=[A-Za-z/!?])|&(?=#?\w+;)|(?<![^\W_])_|_(?![^\W_])"
)
# ... and only at the start of a line: headings, list items, block quotes, setext underlines, ordered lists.
_MARKDOWN_LINE_START = re.compile(r"^(\s*)([#+\-=](?=\s|$|[#+\-=])|>|\d{1,9}(?=[.)](\s|$)))")
# A spreadsheet runs a cell starting with these as a formula (=HYPERLINK(...), +cmd, @SUM, tab/CR tricks).
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_UMASK = os.umask(0o022)
os.umask(_UMASK)  # read once: mkstemp makes 0600 files, an output file gets the usual umask-based mode


def markdown_text(value: object) -> str:
    """`value` as literal Markdown text on one line, escaped only where Markdown would misread it, so the file
    still reads as plain text ("69.8% (12 pairs)", not "69\\.8% \\(12 pairs\\)").

    Escaping `<` before a tag keeps raw HTML (`<script>`, `<img onerror>`) from reaching renderers that pass
    inline HTML through; newlines become spaces so a value cannot end a table row or start a heading;
    other control and format characters (ESC sequences, bidi overrides) are shown as escapes (terminal_text),
    since a Markdown file is also read with `cat`. A value that starts a line cannot start a heading, list or
    quote: its leading #, +, -, =, > or the number of "1." is escaped.
    """
    text = terminal_text(" ".join(str(value).splitlines()))
    one_line = _MARKDOWN_INLINE.sub(lambda found: "\\" + found.group(), text)
    match = _MARKDOWN_LINE_START.match(one_line)
    if match is None:
        return one_line
    marker = match.end()
    if match.group(2)[0].isdigit():  # "1." / "1)": escape the punctuation after the number
        return one_line[:marker] + "\\" + one_line[marker:]
    return one_line[: match.start(2)] + "\\" + one_line[match.start(2) :]


def valid_unicode(text: str) -> str:
    """`text` with lone surrogates (JSON can carry "\\ud800", UTF-8 cannot) replaced by U+FFFD; pairs joined.

    A server's reply goes into DuckDB, which stores UTF-8: one unpaired surrogate would fail the write.
    """
    return text.encode("utf-16", "surrogatepass").decode("utf-16", "replace")


def strict_json(document: object, **options: object) -> str:
    """`document` as standard JSON: a NaN or infinite number (a missing value, an unbounded interval end) is null,
    since `NaN` and `Infinity` are not JSON and strict parsers reject the whole file."""
    return json.dumps(_finite(document), allow_nan=False, **options)  # type: ignore[arg-type]


def _finite(value: object) -> object:
    if isinstance(value, float) and not math.isfinite(value):
        return None
    if isinstance(value, dict):
        return {key: _finite(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [_finite(item) for item in value]
    return value


def csv_cell(value: object) -> object:
    """A text cell that a spreadsheet would run as a formula gets a leading `'`; other values are unchanged.

    OWASP's CSV-injection advice: the quote makes Excel, LibreOffice and Sheets show the text as typed.
    """
    if isinstance(value, str) and value.startswith(_FORMULA_START):
        return "'" + value
    return value


def csv_safe(frame: pd.DataFrame) -> pd.DataFrame:
    """A copy of `frame` with `csv_cell` applied to every text column, ready for `to_csv`."""
    safe = frame.copy()
    for column in safe.columns:
        if safe[column].dtype == object or pd.api.types.is_string_dtype(safe[column]):
            safe[column] = safe[column].map(csv_cell)
    return safe


def terminal_text(value: object, *, keep_newlines: bool = False) -> str:
    """`value` safe to print on a terminal: control and format characters (ESC sequences that retitle the window
    or clear the screen, BEL, backspace, bidi overrides) shown as `\\x1b` / `\\u202e` escapes, never sent raw.

    For every text from a server, a file or a flag that is printed (errors, `probe runs`, paths).
    """
    text = str(value)
    if text.isprintable():
        return text
    return "".join(
        character
        if character.isprintable() or (keep_newlines and character == "\n")
        else f"\\x{ord(character):02x}"
        if ord(character) < 0x100
        else f"\\u{ord(character):04x}"
        for character in text
    )


# What a page must not carry raw: control characters other than tab and line breaks (ESC sequences, BEL) and the
# bidirectional controls that reorder what a reader sees (Trojan Source). Joiners, no-break spaces and tabs are text.
_HIDDEN_IN_PAGES = re.compile("[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]")


def page_text(value: str) -> str:
    """`value` for an HTML page or a Markdown file: the characters `_HIDDEN_IN_PAGES` names shown as `\\x1b` /
    `\\u202e` escapes (HTML escaping leaves them raw: a hostile model name would ring or reorder text for `cat`)."""
    return _HIDDEN_IN_PAGES.sub(lambda found: terminal_text(found.group()), value)


def literal_console() -> Console:
    """A rich Console that prints every string as typed: no markup (`[bold]`), no emoji codes (`:x:`), no
    highlighting. For output holding user strings (occupations, model ids, run ids), which may contain any of them.
    """
    return Console(markup=False, emoji=False, highlight=False)


@contextlib.contextmanager
def atomic_path(path: Path) -> Iterator[Path]:
    """Yield a temporary path beside `path`; when the block succeeds, rename it onto `path`.

    The temporary file is in the same directory, so `os.replace` is an atomic rename on the same file
    system: readers see the old file or the whole new one. If the block raises, the temporary file is
    removed and `path` is untouched.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    handle, temporary = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
    os.close(handle)
    try:
        os.chmod(temporary, 0o666 & ~_UMASK)
        yield Path(temporary)
        os.replace(temporary, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(temporary)
        raise


def write_atomic(path: Path, content: str | bytes) -> None:
    """Write `content` (text as UTF-8) to `path` whole or not at all."""
    data = content.encode("utf-8") if isinstance(content, str) else content
    with atomic_path(path) as temporary:
        temporary.write_bytes(data)
