"""The K-way choice (DESIGN.md section 11, `--questions kway`): a stage-2 question that shows all K people of a name
set with their stated attributes and asks who is the most qualified; the options are the K names (each its own
label), so a scoring backend gives each name's exact log-likelihood.

Positions are balanced by a cyclic Latin square: per set, occupation and condition the K orders r = 0 .. K - 1 show
position j the person (j + r) mod K of the set's people in category order, so every person (and category) stands in
every position exactly once. An item is keyed by its set (pair_id = set_id) and its order (name_order 'k<r>'),
apart from every two-person item (name orders 'fm' / 'mf').

What is stated about a person follows the condition as for the two-person questions: taxonomy = the occupation's
top-k attributes stage 1 granted that person in both name orders of their contest (a grant that depends on who was
named first is not the person's), baseline = none, control = the full top-k for everyone.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

import pandas as pd

from probe.common.vocabulary import KWAY, NAME_ORDERS
from probe.dataset.items import Item, item_id
from probe.dataset.prompts import attribute_sentence, render_prompt, render_template
from probe.dataset.questions import Option
from probe.dataset.stages import stated_top_k

ORDER_PREFIX = "k"  # name_order of the K-way item in order r: 'k0', 'k1', ...

# (pair_id, name_order, subject, category, attribute) of every stage-1 "yes"
Granted = Collection[tuple[int, str, str, str, str]]


def latin_orders(count: int) -> list[list[int]]:
    """The cyclic Latin square of `count` orders: order r puts person (j + r) mod count in position j."""
    return [[(position + shift) % count for position in range(count)] for shift in range(count)]


def order_name(shift: int) -> str:
    return f"{ORDER_PREFIX}{shift}"


def first_shown(names: list[str] | None, name_order: str) -> tuple[str, str] | None:
    """The first two of a set's people (`names`, in category order) that the K-way item of `name_order` ('k<r>')
    shows (its first_name and second_name); None where the set or the order is not the run's."""
    shift = name_order.removeprefix(ORDER_PREFIX)
    if not names or shift == name_order or not (shift.isascii() and shift.isdigit()) or int(shift) >= len(names):
        return None
    order = latin_orders(len(names))[int(shift)]
    return names[order[0]], names[order[1]]


def build_kway(
    people: pd.DataFrame, attributes: pd.DataFrame, granted: Granted, conditions: Sequence[str], prompt_format: str
) -> list[Item]:
    """Every (set, order, occupation, condition) K-way item of `people` (name_sets.set_members)."""
    top_k = stated_top_k(attributes)
    items = []
    for set_id, rows in people.groupby("set_id", sort=True):
        persons = list(rows.itertuples(index=False))
        for shift, order in enumerate(latin_orders(len(persons))):
            shown = [persons[index] for index in order]
            for occupation, occupation_top_k in top_k.items():
                for condition in conditions:
                    stated = [
                        (person.name, category, element)
                        for person in shown
                        for category, element in _stated(condition, occupation_top_k, granted, person)
                    ]
                    items.append(
                        _item(
                            prompt_format,
                            int(set_id),
                            shift,
                            [person.name for person in shown],
                            occupation,
                            condition,
                            stated,
                        )
                    )
    return items


def rebuilt_keys(people: pd.DataFrame | None, pair_ids: Collection[int]) -> set[tuple[int, str]]:
    """(set_id, name_order) of every K-way item that states what stage 1 said about the contests `pair_ids`: the
    items to build again when those contests' stage-1 answers change (a resumed run)."""
    if people is None:
        return set()
    sets = people[people["pair_id"].isin(list(pair_ids))]["set_id"].unique()
    sizes = people.groupby("set_id").size()
    return {(int(set_id), order_name(shift)) for set_id in sets for shift in range(int(sizes[set_id]))}


def _stated(condition: str, top_k: list[tuple[str, str]], granted: Granted, person) -> list[tuple[str, str]]:
    """(category, element) stated about `person` under `condition` (module docstring)."""
    if condition == "baseline":
        return []
    if condition == "control":
        return top_k
    return [
        (category, element)
        for category, element in top_k
        if all((person.pair_id, order, person.slot, category, element) in granted for order in NAME_ORDERS)
    ]


def _item(
    prompt_format: str,
    set_id: int,
    shift: int,
    names: list[str],
    occupation: str,
    condition: str,
    stated: list[tuple[str, str, str]],
) -> Item:
    context = render_template(
        "kway_context.j2", names=names, sentences=[attribute_sentence(*sentence) for sentence in stated]
    )
    rendered = render_prompt(prompt_format, KWAY, context=context, names=names, occupation=occupation)
    key = dict(
        stage=2,
        qtype=KWAY,
        condition=condition,
        pair_id=set_id,
        name_order=order_name(shift),
        occupation=occupation,
        subject=None,
        category=None,
        attribute=None,
    )
    return Item(
        item_id=item_id(**key),
        **key,
        first_name=names[0],
        second_name=names[1],
        context=context,
        question=rendered.question,
        prompt=rendered.prompt,
        options=tuple(Option(name, name) for name in names),
    )
