"""Names and occupations from users: one Unicode form, no invisible characters, a bounded length.

"Café" typed on two systems can be two different strings (composed é, or e + combining accent); NFC makes
them one, so lookups and comparisons agree. Zero-width, bidi-override and other format or control
characters (Unicode categories Cf, Cc) are refused: invisible in a report, they can make two names look
alike or reorder the text around them ("Trojan Source").
"""

from __future__ import annotations

import unicodedata

from probe.common.errors import UserError

_REFUSED_CATEGORIES = {"Cf": "an invisible format character", "Cc": "a control character"}
# The longest name, category, attribute or occupation: O*NET's longest title has 105 characters; a megabyte-long
# category would be printed in every table and figure of a report (it ran one past 10 minutes and 2.4 GB).
MAX_TEXT_LENGTH = 200


def checked_text(value: str, where: str) -> str:
    """`value` in NFC; a UserError naming `where` (file and row, or option) if it holds an invisible character or
    is longer than MAX_TEXT_LENGTH characters."""
    if len(value) > MAX_TEXT_LENGTH:
        raise UserError(f"{where}: {value[:20]!r}... is {len(value)} characters long; at most {MAX_TEXT_LENGTH}")
    text = unicodedata.normalize("NFC", value)
    for character in text:
        kind = _REFUSED_CATEGORIES.get(unicodedata.category(character))
        if kind:
            name = unicodedata.name(character, "unnamed")
            raise UserError(f"{where}: {text!r} contains {kind}, U+{ord(character):04X} {name}; remove it")
    return text
