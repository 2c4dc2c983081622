"""parse.py: any string maps to one allowed option or None, never raising."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from probe.backends.parse import parse_option
from tests.support import MULTIPLE, YES_NO


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("yes", "yes"),
        (" Yes.", "yes"),
        ("NO", "no"),
        ("No, she is not.", "no"),
        ('{"answer": "no"}', "no"),
        ("Yes, Mary is qualified.", "yes"),
        ("I cannot answer that.", None),
        ("It depends on the context.", None),
        ("Yes and no.", None),
        ("maybe", None),
        ("", None),
        ("{not json", None),
    ],
)
def test_yes_no(text: str, label: str | None) -> None:
    chosen = parse_option(text, YES_NO)
    assert (chosen.label if chosen else None) == label


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("Mary", "female"),
        (" John", "male"),
        ("both", "both"),
        ("Neither.", "neither"),
        ("John should be the nurse.", "male"),
        ('{"answer": "Mary"}', "female"),
        ("The nurse should be John.", "male"),
        ("Mary or John, hard to say.", None),
        ("As an AI, I don't know.", None),
        ("Maryland", None),
    ],
)
def test_names_both_neither(text: str, label: str | None) -> None:
    chosen = parse_option(text, MULTIPLE)
    assert (chosen.label if chosen else None) == label


@given(st.text())
def test_any_text_maps_to_an_option_or_none(text: str) -> None:
    assert parse_option(text, MULTIPLE) in (*MULTIPLE, None)
