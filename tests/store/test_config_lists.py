"""A RUN.toml's lists of ids (conditions, questions, wordings) are read by one check (probe/store/config.py
`_known_names`): a value that is no list of ids, or an id not known, is refused naming the key and the choices."""

from __future__ import annotations

from pathlib import Path

import pytest

from probe.common.errors import UserError
from probe.store.config import load_config

WORDINGS = "paper, synonym, would_you_say, given_text, restated"


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("conditions = 3", "RUN.toml: conditions: expected a list of conditions from taxonomy, baseline, control"),
        ("questions = []", "RUN.toml: questions: expected a list of questions from pairs, kway"),
        (
            'conditions = ["taxonomy", "other"]',
            "RUN.toml: conditions: unknown condition 'other' (choose from taxonomy, baseline, control)",
        ),
        ("wordings = [1]", f"RUN.toml: wordings: expected all, a count or ids from {WORDINGS}"),
        ('wordings = ["paper", "loud"]', f"RUN.toml: wordings: unknown wording 'loud' (choose from {WORDINGS})"),
    ],
)
def test_a_list_of_ids_names_what_it_expected(tmp_path: Path, line: str, message: str) -> None:
    config = tmp_path / "RUN.toml"
    config.write_text(line + "\n")
    with pytest.raises(UserError) as refused:
        load_config({}, config)
    assert str(refused.value) == f"{tmp_path}/{message}"


def test_the_ids_keep_their_canonical_order() -> None:
    spec = load_config({"conditions": "control,taxonomy", "wordings": "synonym,paper"})
    assert (spec.design.conditions, spec.design.wordings) == (("taxonomy", "control"), ("paper", "synonym"))


@pytest.mark.parametrize(
    "urls",
    [
        "http://user:sk-secret@127.0.0.1:1/v1,http://[::1",
        "http://127.0.0.1:1/v1,http://user:sk-secret@exa\u2100mple.com/v1",  # urlsplit's own message quotes the host
    ],
)
def test_a_base_url_that_does_not_parse_is_refused_without_echoing_it(urls: str) -> None:
    """The URL may carry a key (user:key@host), so the message counts it and never repeats it."""
    with pytest.raises(UserError) as refused:
        load_config({"base_url": urls})
    assert str(refused.value) == "--base-url: URL 2 of 2 is not a valid URL"
