"""What a causal model reads for a query, one rule for every engine (hf-causal, llama.cpp, served models).

Chat format: the messages - the run's system prompt (`--system-prompt`, rendered by
prompts/chat/system.j2) when it has one, then the item's prompt as the user's message; the engine's chat
template renders them, and a scored option's text follows the assistant turn as it is.
Completion format: the text - the item's prompt, after the system prompt where there is one
(prompts/completion/system.j2); a scored option follows after lm-evaluation-harness's split: a space,
and the prompt's trailing whitespace moves into the continuation (a template ending "Answer: " scores
"  yes" after "Answer:", not a lone-space token).
"""

from __future__ import annotations

from probe.backends.base import Query
from probe.dataset.prompts import render_template


def chat_messages(query: Query) -> list[dict[str, str]]:
    """The chat request's messages: the system prompt (if any), then the item as the user's message."""
    messages = [{"role": "user", "content": query.prompt}]
    if query.system_prompt:
        system = render_template("chat/system.j2", system_prompt=query.system_prompt)
        messages.insert(0, {"role": "system", "content": system})
    return messages


def completion_text(query: Query) -> str:
    """The completion-format prompt: the item's prompt, after the system prompt (if any)."""
    if not query.system_prompt:
        return query.prompt
    return render_template("completion/system.j2", system_prompt=query.system_prompt, prompt=query.prompt)


def split_continuation(context: str, continuation: str) -> tuple[str, str]:
    """lm-evaluation-harness's split: the context's trailing whitespace belongs to the continuation."""
    stripped = context.rstrip()
    return stripped, context[len(stripped) :] + continuation


def completion_pair(query: Query, option_text: str) -> tuple[str, str]:
    """(context, continuation) of an option scored after a completion-format prompt."""
    return split_continuation(completion_text(query), " " + option_text)
