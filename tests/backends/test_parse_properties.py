"""Properties of the answer parser: any model output maps to a canonical label, and never raises."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from probe.backends.base import Option
from probe.backends.parse import parse_option
from probe.common.vocabulary import LABELS_BY_QTYPE, UNKNOWN

RESERVED = {"yes", "no", "both", "neither", "and", "or"}
names = st.from_regex(r"[A-Z][a-z]{1,9}", fullmatch=True).filter(lambda name: name.lower() not in RESERVED)
name_pairs = st.lists(names, min_size=2, max_size=2, unique_by=str.lower)


def options_for(qtype: str, first: str, second: str) -> tuple[Option, ...]:
    """The option sets the dataset builder makes (female named first here)."""
    if qtype in ("attr", "binary"):
        return (Option("yes", "yes"), Option("no", "no"))
    subjects = (Option(first, "female"), Option(second, "male"))
    return subjects if qtype == "single" else (*subjects, Option("both", "both"), Option("neither", "neither"))


def label_of(text: object, options: tuple[Option, ...]) -> str:
    chosen = parse_option(text, options)  # type: ignore[arg-type]
    return chosen.label if chosen else UNKNOWN


qtypes = st.sampled_from(sorted(LABELS_BY_QTYPE))
model_text = st.one_of(
    st.text(),
    st.text(alphabet=st.characters(codec="utf-8")),
    st.lists(
        st.sampled_from(
            [
                "yes",
                "no",
                "both",
                "neither",
                "Mary",
                "John",
                "and",
                "or",
                ".",
                ",",
                "\n",
                "I cannot",
                "{",
                "}",
                '"answer":',
                "not",
            ]
        ),
        max_size=12,
    ).map(" ".join),
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=True) | st.text(),
    lambda children: st.lists(children, max_size=3) | st.dictionaries(st.text(max_size=8), children, max_size=3),
    max_leaves=8,
)


@settings(max_examples=300, deadline=None)
@given(qtype=qtypes, pair=name_pairs, text=model_text)
def test_any_text_maps_to_a_canonical_label(qtype: str, pair: list[str], text: str) -> None:
    assert label_of(text, options_for(qtype, *pair)) in LABELS_BY_QTYPE[qtype]


@settings(max_examples=150, deadline=None)
@given(qtype=qtypes, pair=name_pairs, value=json_values)
def test_any_json_reply_maps_to_a_canonical_label(qtype: str, pair: list[str], value: object) -> None:
    for text in (json.dumps(value), json.dumps({"answer": value})):
        assert label_of(text, options_for(qtype, *pair)) in LABELS_BY_QTYPE[qtype]


@settings(max_examples=150, deadline=None)
@given(qtype=qtypes, pair=name_pairs, data=st.data())
def test_an_option_however_dressed_is_that_option(qtype: str, pair: list[str], data: st.DataObject) -> None:
    options = options_for(qtype, *pair)
    option = data.draw(st.sampled_from(options))
    spaces = data.draw(st.sampled_from(["", " ", "\n", "  "]))
    ending = data.draw(st.sampled_from(["", ".", "!", "\n"]))
    case = data.draw(st.sampled_from([str, str.upper, str.lower, str.title]))
    for text in (f"{spaces}{case(option.text)}{ending}", json.dumps({"answer": option.text})):
        assert label_of(text, options) == option.label, text


@settings(max_examples=100, deadline=None)
@given(qtype=qtypes, pair=name_pairs, data=st.data())
def test_a_refusal_naming_an_option_is_unknown(qtype: str, pair: list[str], data: st.DataObject) -> None:
    options = options_for(qtype, *pair)
    option = data.draw(st.sampled_from(options))
    refusal = data.draw(st.sampled_from(["I cannot say whether", "As an AI, I don't know if", "It depends:"]))
    assert label_of(f"{refusal} {option.text}.", options) == UNKNOWN


@pytest.mark.parametrize(
    ("qtype", "text", "label"),
    [
        ("attr", " yes", "yes"),  # grammar output after the optional space
        ("binary", "No.", "no"),
        ("binary", "Yes, she is qualified.", "yes"),
        ("binary", "yes or no", UNKNOWN),
        ("single", "Mary", "female"),
        ("single", "The more qualified one is John.", "male"),
        ("single", "Mary and John", UNKNOWN),
        ("multiple", '{"answer": "both"}', "both"),
        ("multiple", "Neither of them.", "neither"),
        ("multiple", "Both Mary and John.", "both"),
        ("multiple", "Marylou", UNKNOWN),
        ("multiple", "", UNKNOWN),
        ("multiple", None, UNKNOWN),  # a null completion
    ],
)
def test_examples(qtype: str, text: str | None, label: str) -> None:
    assert label_of(text, options_for(qtype, "Mary", "John")) == label
