"""The two-stage dataset (DESIGN sections 1 and 3): stage-1 attribute items and stage-2 decision items.

Stage 1 asks, for every name pair, name order and subject, whether that subject has each attribute in the
union of the selected occupations' top-k lists; its context never names an occupation, so one answer serves
every occupation with that attribute. Stage 2 is built from the stored stage-1 answers: per (pair, name
order, occupation) and condition, a binary question per subject, a single-subject and a multiple-subject
question.
"""

from __future__ import annotations

from collections.abc import Collection, Iterator, Sequence
from dataclasses import dataclass

import pandas as pd

from probe.common.vocabulary import CATEGORIES, NAME_ORDERS, PAPER_WORDING, STAGE1_CONDITION, SUBJECTS
from probe.dataset.items import Item, gender_of_first, item_id
from probe.dataset.prompts import render_context, render_prompt
from probe.dataset.questions import Option

YES_NO = (Option("yes", "yes"), Option("no", "no"))
BOTH_NEITHER = (Option("both", "both"), Option("neither", "neither"))


@dataclass(frozen=True)
class Subjects:
    """A name pair in one name order."""

    pair_id: int
    name_order: str
    female: str
    male: str

    @property
    def first(self) -> str:
        return self.female if self.name_order == "fm" else self.male

    @property
    def second(self) -> str:
        return self.male if self.name_order == "fm" else self.female

    def name(self, subject: str) -> str:
        return self.female if subject == "female" else self.male


def _subject_options(subjects: Subjects, *, with_both_neither: bool) -> tuple[Option, ...]:
    """Names in the order stated, labelled by gender: positions map to gender here, before any answer."""
    first_gender = gender_of_first(subjects.name_order)
    second_gender = "male" if first_gender == "female" else "female"
    options = (Option(subjects.first, first_gender), Option(subjects.second, second_gender))
    if with_both_neither:
        options += BOTH_NEITHER
    return options


def _subjects(pairs: pd.DataFrame) -> Iterator[Subjects]:
    for pair in pairs.itertuples(index=False):
        for name_order in NAME_ORDERS:
            yield Subjects(int(pair.pair_id), name_order, pair.female, pair.male)


def _item(
    prompt_format: str,
    subjects: Subjects,
    *,
    stage: int,
    qtype: str,
    condition: str,
    options: tuple[Option, ...],
    stated: Sequence[tuple[str, str, str]] = (),
    occupation: str | None = None,
    subject: str | None = None,
    category: str | None = None,
    attribute: str | None = None,
    wording: str = PAPER_WORDING,
) -> Item:
    """One item, its context (the two names and the `stated` (name, category, element) sentences) and its prompt in
    `wording` rendered here, in one place."""
    context = render_context(subjects.first, subjects.second, stated)
    rendered = render_prompt(
        prompt_format,
        qtype,
        context=context,
        first=subjects.first,
        second=subjects.second,
        subject_name=subjects.name(subject) if subject else None,
        occupation=occupation,
        category=category,
        attribute=attribute,
        wording=wording,
    )
    key = dict(
        stage=stage,
        qtype=qtype,
        condition=condition,
        pair_id=subjects.pair_id,
        name_order=subjects.name_order,
        occupation=occupation,
        subject=subject,
        category=category,
        attribute=attribute,
    )
    return Item(
        item_id=item_id(wording, **key),
        **key,
        first_name=subjects.first,
        second_name=subjects.second,
        context=context,
        question=rendered.question,
        prompt=rendered.prompt,
        options=options,
        wording=wording,
    )


def stated_top_k(attributes: pd.DataFrame) -> dict[str, list[tuple[str, str]]]:
    """Each occupation's top-k (category, element), category (skill, knowledge, ability) then rank: the order
    sentences are stated in (two-person and K-way questions alike)."""
    category_order = attributes["category"].map(CATEGORIES.index)
    ordered = attributes.assign(_order=category_order).sort_values(["_order", "rank"])
    return {
        occupation: list(rows[["category", "element_name"]].itertuples(index=False, name=None))
        for occupation, rows in ordered.groupby("occupation", sort=False)
    }


def attribute_union(attributes: pd.DataFrame) -> list[tuple[str, str]]:
    """Distinct (category, element) over all occupations' top-k, category then element name."""
    distinct = attributes[["category", "element_name"]].drop_duplicates()
    return sorted(distinct.itertuples(index=False, name=None), key=lambda pair: (CATEGORIES.index(pair[0]), pair[1]))


def build_stage1(
    pairs: pd.DataFrame, attributes: pd.DataFrame, prompt_format: str, wording: str = PAPER_WORDING
) -> list[Item]:
    """Every (pair, name order, subject, category, attribute) over the union of top-k attributes, asked in
    `wording` (a paraphrase of prompts/wordings/)."""
    union = attribute_union(attributes)
    items = []
    for subjects in _subjects(pairs):
        for subject in SUBJECTS:
            for category, element in union:
                items.append(
                    _item(
                        prompt_format,
                        subjects,
                        stage=1,
                        qtype="attr",
                        condition=STAGE1_CONDITION,
                        options=YES_NO,
                        subject=subject,
                        category=category,
                        attribute=element,
                        wording=wording,
                    )
                )
    return items


# (pair_id, name_order, subject, category, attribute) of every stage-1 "yes"
Granted = Collection[tuple[int, str, str, str, str]]


def build_stage2(
    pairs: pd.DataFrame,
    attributes: pd.DataFrame,
    granted: Granted,
    conditions: Sequence[str],
    prompt_format: str,
    wording: str = PAPER_WORDING,
) -> list[Item]:
    """Binary (per subject), single and multiple items per (pair, name order, occupation, condition), asked in
    `wording`.

    Attributes stated per subject: taxonomy = the occupation's top-k that stage 1 granted that subject
    (same pair and name order); baseline = none; control = the full top-k for both subjects.
    """
    top_k = stated_top_k(attributes)
    items = []
    for subjects in _subjects(pairs):
        for occupation, occupation_top_k in top_k.items():
            for condition in conditions:
                stated = {
                    subject: _stated_attributes(condition, occupation_top_k, granted, subjects, subject)
                    for subject in SUBJECTS
                }
                items.extend(_stage2_items(prompt_format, wording, subjects, occupation, condition, stated))
    return items


def _stated_attributes(
    condition: str,
    top_k: list[tuple[str, str]],
    granted: Granted,
    subjects: Subjects,
    subject: str,
) -> list[tuple[str, str, str]]:
    """(name, category, element) sentences about `subject` under `condition`."""
    if condition == "baseline":
        chosen = []
    elif condition == "control":
        chosen = top_k
    else:
        chosen = [
            (category, element)
            for category, element in top_k
            if (subjects.pair_id, subjects.name_order, subject, category, element) in granted
        ]
    name = subjects.name(subject)
    return [(name, category, element) for category, element in chosen]


def _stage2_items(
    prompt_format: str,
    wording: str,
    subjects: Subjects,
    occupation: str,
    condition: str,
    stated: dict[str, list[tuple[str, str, str]]],
) -> list[Item]:
    common = dict(stage=2, condition=condition, occupation=occupation, wording=wording)
    items = [
        _item(
            prompt_format,
            subjects,
            **common,
            qtype="binary",
            subject=subject,
            stated=stated[subject],
            options=YES_NO,
        )
        for subject in SUBJECTS
    ]
    first_gender = gender_of_first(subjects.name_order)
    second_gender = "male" if first_gender == "female" else "female"
    both = stated[first_gender] + stated[second_gender]
    for qtype in ("single", "multiple"):
        items.append(
            _item(
                prompt_format,
                subjects,
                **common,
                qtype=qtype,
                stated=both,
                options=_subject_options(subjects, with_both_neither=qtype == "multiple"),
            )
        )
    return items


def build_as_if_all_granted(
    pairs: pd.DataFrame, attributes: pd.DataFrame, conditions: Sequence[str], prompt_format: str
) -> list[Item]:
    """Both stages as if stage 1 had granted every attribute: every kind of prompt, without a model."""
    stage1 = build_stage1(pairs, attributes, prompt_format)
    granted = {(item.pair_id, item.name_order, item.subject, item.category, item.attribute) for item in stage1}
    return stage1 + build_stage2(pairs, attributes, granted, conditions, prompt_format)


def build_scan_items(pairs: pd.DataFrame, occupations: Sequence[str], prompt_format: str) -> list[Item]:
    """`probe scan`'s question: single-subject, baseline context, per pair, name order and occupation.

    The same items (ids and prompts) as a run's baseline single-subject items, so a confirmation run of
    the flagged titles finds the scan's answers in the cache.
    """
    items = []
    for subjects in _subjects(pairs):
        options = _subject_options(subjects, with_both_neither=False)
        items.extend(
            _item(
                prompt_format,
                subjects,
                stage=2,
                qtype="single",
                condition="baseline",
                occupation=occupation,
                options=options,
            )
            for occupation in occupations
        )
    return items
