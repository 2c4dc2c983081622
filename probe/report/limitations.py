"""The report's limitations: what the design cannot tell, and how far the simulated coverage reaches.

A run over name sets (report.json's `groups`) has the set as its unit and names groups by the sets' attributes, and
the coverage figures of a run over name pairs were simulated with the pair as the unit: its list says what holds
for it instead (the figures simulated over sets, BENCHMARKS.md).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

_WORDING = (
    "A model's answers depend on the prompt wording, the answer format and decoding; another template "
    "may give other numbers. The template hash on the run card identifies the wording used here."
)
_SMALL_MODELS = (
    "Small models answer many questions near chance or not at all; read high unknown rates and wide "
    "intervals as 'not measured', not as 'unbiased'."
)
_NOT_DEPLOYED = "they do not measure harms in any deployed use of the model."

PAIR_LIMITATIONS = (
    "Gender is treated as binary and is signalled only by first names; names also carry ethnicity, age "
    "and class, which this design does not separate from gender.",
    "The taxonomy (O*NET) and the name lists are US-centred; occupations, their attributes and the "
    "names' gender associations differ across countries and languages.",
    _WORDING,
    _SMALL_MODELS,
    "Intervals generalise from the name pairs asked to pairs like them: a behaviour that only a few pairs "
    "in the population show (say 1 in 12) is missed by a run that draws none of them, and no interval can "
    "cover it then; more pairs make that rarer (BENCHMARKS.md, coverage).",
    "What coverage remains, by simulation on worlds the methods were not tuned on (BENCHMARKS.md, "
    '"Statistics"): shares and rates covered 0.967 on average at 12 pairs and more (worst ordinary cell '
    "0.928), estimates of exactly 0 or 100% 1.00, events carried by one pair in K 0.954 (worst 0.89); the "
    "difference of two rare grant rates 0.92-0.94. Rare events pay for it with wider intervals.",
    f"The questions are hypothetical hiring-style decisions between two people; {_NOT_DEPLOYED}",
)

_SET_NAMES = (
    "Groups are signalled only by first names, one name per category in each set{binary}; a name stands for the "
    "group it signals to a reader, not for anyone's identity, and also carries age, class and region, which this "
    "design does not separate from its categories."
)
SET_LIMITATIONS = (
    "The taxonomy (O*NET) and the name sets are US-centred; occupations, their attributes and the "
    "names' associations with their groups differ across countries and languages.",
    _WORDING,
    _SMALL_MODELS,
    "Intervals generalise from the name sets asked to sets like them: a behaviour that only a few sets "
    "in the population show is missed by a run that draws none of them, and no interval can cover it then; "
    "more sets make that rarer.",
    "The coverage figures of a run over name pairs (shares and rates 0.967 on average at 12 pairs and more, "
    "rare events 0.954) were simulated with the name pair as the unit and are not claimed for this run. "
    "Simulated over name sets, on worlds the methods were not tuned on (BENCHMARKS.md): the intervals of a "
    "family of contrasts covered together in 0.952-0.974 of runs (4 categories, 12 and 24 sets), the category "
    "ranking's intervals 0.946-0.957 per category (4 categories over 7, 8 and 12 sets; 8 over 8 and 12).",
    f"The questions are hypothetical hiring-style decisions between the people of a set; {_NOT_DEPLOYED}",
)


def limitations(data: Mapping[str, Any]) -> tuple[str, ...]:
    """The limitations of the run `data` (report.json) describes: a run over name sets has its own, first the
    names' (sex binary where the sets have a sex attribute)."""
    groups = data.get("groups")
    if not groups:
        return PAIR_LIMITATIONS
    binary = ", and sex is treated as binary" if "sex" in groups["attributes"] else ""
    return (_SET_NAMES.format(binary=binary), *SET_LIMITATIONS)
