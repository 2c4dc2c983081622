"""Where a prompt ends and a scored option begins: one rule for every engine that scores options.

Completion format (the prompt is text we own, ending with an answer cue): lm-evaluation-harness's split -
the option follows a space, and trailing whitespace of the prompt moves into the continuation, so a
template ending "Answer: " scores "  yes" after "Answer:" rather than a lone-space token. Chat format: the
context is the chat template's rendering of the message (ending with the assistant's turn), and the
option's text follows it as it is.
"""

from __future__ import annotations


def split_continuation(context: str, continuation: str) -> tuple[str, str]:
    """lm-evaluation-harness's split: the context's trailing whitespace belongs to the continuation."""
    stripped = context.rstrip()
    return stripped, context[len(stripped) :] + continuation


def completion_pair(prompt: str, option_text: str) -> tuple[str, str]:
    """(context, continuation) of an option scored after a completion-format prompt."""
    return split_continuation(prompt, " " + option_text)
