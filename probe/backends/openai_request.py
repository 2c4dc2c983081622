"""What a generation request to an OpenAI-compatible endpoint holds, and how its reply becomes a label: one
shape for live requests (openai_api.py) and batch files (openai_batch.py).

Answers are not left to free text: the request constrains the output to the options (a GBNF grammar for
llama.cpp, a JSON schema for servers with structured output) where `constrain` asks for it, and the reply is
parsed into an option (parse.py).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from probe.backends.base import Reply
from probe.backends.model_input import chat_messages, completion_text
from probe.backends.parse import ANSWER_KEY, parse_option
from probe.common.vocabulary import UNKNOWN
from probe.dataset.questions import Option, Query

CHAT_PATH, COMPLETIONS_PATH = "/v1/chat/completions", "/v1/completions"


def generation_request(
    query: Query, *, model: str, max_tokens: int, constrain: str, api_mode: str
) -> tuple[str, dict[str, Any]]:
    """The endpoint and JSON body of one generation request: sent live, or written to a batch file (openai_batch.py)."""
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "temperature": 0.0}
    if constrain == "grammar":
        body["grammar"] = option_grammar(query.options)
    elif constrain == "json_schema":
        body["response_format"] = answer_schema(query.options)
    if api_mode == "chat":
        return CHAT_PATH, {**body, "messages": chat_messages(query)}
    return COMPLETIONS_PATH, {**body, "prompt": completion_text(query)}


def generated_reply(text: str, query: Query) -> Reply:
    """A generated text, parsed into one of the query's options (unknown when it names none)."""
    chosen = parse_option(text, query.options)
    return Reply(label=chosen.label if chosen else UNKNOWN, raw=text, decided_by="generate")


def option_grammar(options: Sequence[Option]) -> str:
    """A GBNF grammar whose only sentences are the option texts (after an optional space)."""
    alternatives = " | ".join(json.dumps(option.text) for option in options)
    return f'root ::= " "? ({alternatives})'


def answer_schema(options: Sequence[Option]) -> dict[str, Any]:
    """A strict `response_format` JSON schema: {"answer": <one option text>}."""
    schema = {
        "type": "object",
        "properties": {ANSWER_KEY: {"type": "string", "enum": [option.text for option in options]}},
        "required": [ANSWER_KEY],
        "additionalProperties": False,
    }
    return {"type": "json_schema", "json_schema": {"name": "answer", "strict": True, "schema": schema}}
