"""A user's TOML file (RUN.toml settings, a gate policy) read within bounds.

tomllib parses nested arrays and tables by recursion and reads whatever it is given: a file nested 900 levels
deep ends in a RecursionError and `/dev/zero` in a MemoryError. Settings and policies are a few lines, so the
size read and the depth are capped and either is one line naming the file.
"""

from __future__ import annotations

import tomllib
from pathlib import Path

from probe.common.errors import UserError

MAX_TOML_BYTES = 1 << 20
MAX_TOML_DEPTH = 16


def read_toml_file(path: Path) -> dict[str, object]:
    """The document of a TOML file; a UserError naming it if it is missing, too large, not UTF-8, not TOML or
    nested deeper than MAX_TOML_DEPTH."""
    try:
        with path.open("rb") as handle:
            data = handle.read(MAX_TOML_BYTES + 1)
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except OSError as exc:
        raise UserError(f"{path}: {exc.strerror}") from None
    if len(data) > MAX_TOML_BYTES:
        raise UserError(f"{path}: larger than {MAX_TOML_BYTES >> 20} MiB; a settings or policy file is a few lines")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text (byte {exc.start}: {exc.reason}); TOML files are UTF-8") from None
    too_deep = UserError(f"{path}: nested more than {MAX_TOML_DEPTH} levels deep")
    try:
        document = tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise UserError(f"{path}: not valid TOML ({exc})") from None
    except RecursionError:
        raise too_deep from None
    if _depth(document) > MAX_TOML_DEPTH:
        raise too_deep
    return document


def _depth(document: object) -> int:
    """How deeply tables and arrays nest (a flat table is 1), counted without recursion."""
    deepest, stack = 0, [(document, 1)]
    while stack:
        value, level = stack.pop()
        children = value.values() if isinstance(value, dict) else value if isinstance(value, list) else None
        if children is not None:
            deepest = max(deepest, level)
            stack.extend((child, level + 1) for child in children)
    return deepest
