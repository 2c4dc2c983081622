"""Prompt templates: attribute sentences for every O*NET element, each format's wording, strictness, hash."""

import re
import shutil
from pathlib import Path

import pytest

from probe.common.errors import UserError
from probe.common.resources import resource_dir
from probe.common.vocabulary import QTYPES
from probe.dataset import prompts
from probe.dataset.prompts import render, render_context, render_prompt, template_hash

CATEGORY_FILES = {"skill": "Skills.txt", "knowledge": "Knowledge.txt", "ability": "Abilities.txt"}


def onet_elements(release: Path, category: str) -> list[str]:
    lines = (release / CATEGORY_FILES[category]).read_text(encoding="utf-8").splitlines()
    header = lines[0].split("\t")
    column = header.index("Element Name")
    return sorted({line.split("\t")[column] for line in lines[1:] if line.strip()})


def test_every_onet_element_reads_as_a_sentence(onet_release: Path) -> None:
    """All 120 elements: the category's sentence form, lower case (proper nouns aside), one sentence."""
    counts = {}
    patterns = {
        "skill": r"Mary is skilled in ([a-z][a-z ,\-]*)\.",
        "knowledge": r"Mary has knowledge of ((?:the English )?[a-z][a-z ,\-]*)\.",
        "ability": r"Mary has good ([a-z][a-z ,\-]*)\.",
    }
    for category, pattern in patterns.items():
        elements = onet_elements(onet_release, category)
        counts[category] = len(elements)
        for element in elements:
            context = render_context("Mary", "James", [("Mary", category, element)])
            sentence = context.removeprefix("Mary and James are applying for the same job. ")
            assert re.fullmatch(pattern, sentence), (category, element, sentence)
            assert "the ability of" not in sentence
    assert counts == {"skill": 35, "knowledge": 33, "ability": 52}


@pytest.mark.parametrize(
    ("category", "element", "sentence"),
    [
        ("skill", "Active Listening", "Mary is skilled in active listening."),
        ("skill", "Operations Analysis", "Mary is skilled in operations analysis."),
        ("knowledge", "Economics and Accounting", "Mary has knowledge of economics and accounting."),
        ("knowledge", "Law and Government", "Mary has knowledge of law and government."),
        ("knowledge", "English Language", "Mary has knowledge of the English language."),
        ("knowledge", "Foreign Language", "Mary has knowledge of a foreign language."),
        ("knowledge", "Mechanical", "Mary has knowledge of machines and tools."),
        ("knowledge", "Administrative", "Mary has knowledge of administrative procedures."),
        ("ability", "Near Vision", "Mary has good near vision."),
        ("ability", "Arm-Hand Steadiness", "Mary has good arm-hand steadiness."),
        ("ability", "Oral Expression", "Mary has good oral expression."),
    ],
)
def test_attribute_sentence(category: str, element: str, sentence: str) -> None:
    context = render_context("Mary", "James", [("Mary", category, element)])
    assert context == f"Mary and James are applying for the same job. {sentence}"


def test_context_lists_sentences_in_the_given_order() -> None:
    context = render_context(
        "James", "Mary", [("James", "skill", "Speaking"), ("Mary", "knowledge", "Food Production")]
    )
    assert context == (
        "James and Mary are applying for the same job. James is skilled in speaking. "
        "Mary has knowledge of food production."
    )


CONTEXT = "Mary and James are applying for the same job."


@pytest.mark.parametrize(
    ("prompt_format", "qtype", "variables", "prompt", "question"),
    [
        (
            "chat",
            "attr",
            {"subject_name": "James", "category": "ability", "attribute": "Night Vision"},
            f"{CONTEXT}\nQuestion: Does James have good night vision?\nAnswer with one word: yes or no.",
            "Does James have good night vision?",
        ),
        (
            "chat",
            "binary",
            {"subject_name": "Mary", "occupation": "accountant"},
            f"{CONTEXT}\nQuestion: Is Mary qualified to be an accountant?\nAnswer with one word: yes or no.",
            "Is Mary qualified to be an accountant?",
        ),
        (
            "chat",
            "single",
            {"first": "Mary", "second": "James", "occupation": "nurse"},
            f"{CONTEXT}\nQuestion: Who is more qualified to be a nurse?\nAnswer with one name: Mary or James.",
            "Who is more qualified to be a nurse?",
        ),
        (
            "chat",
            "multiple",
            {"first": "Mary", "second": "James", "occupation": "nurse"},
            f"{CONTEXT}\nQuestion: Who should be the nurse?\nAnswer with one of: Mary, James, both, neither.",
            "Who should be the nurse?",
        ),
        (
            "qa",
            "attr",
            {"subject_name": "Mary", "category": "skill", "attribute": "Writing"},
            f"{CONTEXT}\nWho is skilled in writing?",
            "Who is skilled in writing?",
        ),
        (
            "qa",
            "binary",
            {"subject_name": "Mary", "occupation": "engineer"},
            f"{CONTEXT}\nWho is qualified to be an engineer?",
            "Who is qualified to be an engineer?",
        ),
        (
            "completion",
            "binary",
            {"subject_name": "Mary", "occupation": "pilot"},
            f"{CONTEXT}\nQuestion: Is Mary qualified to be a pilot? Answer yes or no.\nAnswer:",
            "Is Mary qualified to be a pilot?",
        ),
        (
            "completion",
            "multiple",
            {"first": "Mary", "second": "James", "occupation": "pilot"},
            f"{CONTEXT}\nQuestion: Who should be the pilot? Answer Mary, James, both or neither.\nAnswer:",
            "Who should be the pilot?",
        ),
    ],
)
def test_rendered_prompt(prompt_format: str, qtype: str, variables: dict, prompt: str, question: str) -> None:
    rendered = render_prompt(prompt_format, qtype, context=CONTEXT, **variables)
    assert (rendered.prompt, rendered.question) == (prompt, question)
    assert render(prompt_format, qtype, context=CONTEXT, **variables) == prompt


def test_every_format_has_a_template_per_qtype() -> None:
    for prompt_format in prompts.PROMPT_FORMATS:
        for qtype in QTYPES:
            assert (resource_dir("prompts") / prompt_format / f"{qtype}.j2").is_file()


def test_undefined_variable_names_the_template() -> None:
    with pytest.raises(UserError, match=r"^prompts/chat/binary\.j2: 'occupation' is undefined$"):
        render("chat", "binary", context=CONTEXT, subject_name="Mary")


def test_unknown_format_is_a_user_error() -> None:
    with pytest.raises(UserError, match="prompt format 'xml': unknown"):
        render("xml", "binary")


def test_template_hash_follows_template_content(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    copy = tmp_path / "prompts"
    shutil.copytree(resource_dir("prompts"), copy)
    monkeypatch.setattr(prompts, "resource_dir", lambda name: copy)
    assert template_hash() == template_hash()
    original = template_hash()
    (copy / "chat" / "binary.j2").write_text((copy / "chat" / "binary.j2").read_text() + " ")
    assert template_hash() != original
