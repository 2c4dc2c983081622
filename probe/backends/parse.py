"""Free model text -> one of the allowed options, or None (the runner stores None as `unknown`).

Used for every text a model writes: grammar-constrained output (an exact option), JSON from a
`response_format` schema, and unconstrained generations. It never raises: refusals, hedges that name
several options, and nonsense all map to None.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from probe.backends.base import Option

ANSWER_KEY = "answer"  # the JSON field a `response_format` schema asks for (see openai_request.answer_schema)

_REFUSAL = re.compile(
    r"\b(i can ?not|i can't|i cannot|i won't|i am unable|i'm unable|i'm not able|i am not able|"
    r"not possible to (say|determine|tell)|cannot be determined|can't be determined|it depends|"
    r"as an ai|i don't know|i do not know|unclear|not enough information|insufficient information)\b"
)
_WORD = re.compile(r"[a-z0-9]+(?:['-][a-z0-9]+)*")


def parse_option(text: str, options: Sequence[Option]) -> Option | None:
    """Return the option `text` answers with, or None when it does not name exactly one."""
    answer = _unwrap_json(text) if isinstance(text, str) else ""
    words = _WORD.findall(answer.lower())
    if not words:
        return None
    option_words = {option: _WORD.findall(option.text.lower()) for option in options}
    # The answer is an option, possibly with punctuation or a trailing period: the grammar case.
    for option, key in option_words.items():
        if key and words == key:
            return option
    if _REFUSAL.search(" ".join(words)):
        return None
    # Exactly one option is named in the first sentence ("The nurse should be John.").
    first_sentence = _WORD.findall(re.split(r"[.!?\n]", answer.lower().strip(), maxsplit=1)[0])
    named = [option for option, key in option_words.items() if key and _contains(first_sentence, key)]
    if len(named) == 1:
        return named[0]
    # The answer starts with an option that is not joined to another ("Yes, Mary is", not "Yes and no").
    for option, key in option_words.items():
        if key and words[: len(key)] == key and words[len(key) : len(key) + 1] not in (["and"], ["or"]):
            return option
    return None


def _unwrap_json(text: str) -> str:
    """`{"answer": "Mary"}` -> `Mary`; anything else is returned as it is."""
    stripped = text.strip()
    if not stripped.startswith("{"):
        return text
    try:
        value = json.loads(stripped)
    except ValueError:
        return text
    if isinstance(value, dict) and isinstance(value.get(ANSWER_KEY), str):
        return value[ANSWER_KEY]
    return text


def _contains(words: list[str], key: list[str]) -> bool:
    return any(words[i : i + len(key)] == key for i in range(len(words) - len(key) + 1))
