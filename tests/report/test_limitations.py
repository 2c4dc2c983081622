"""The report's limitations say what is true of the run: a run over name sets speaks of sets, and of the coverage
simulated over sets (a pair run's coverage figures were simulated over pairs); a run over name pairs reads as
before. A set run whose every answer is unknown is reported (its contrasts have no estimate)."""

from __future__ import annotations

import hashlib
from pathlib import Path

import pytest

import probe
from probe import pipeline, report
from probe.report.limitations import PAIR_LIMITATIONS, limitations
from probe.store.config import RunConfig
from tests.support import unknown_answers
from tests.taxonomy.test_name_sets import sets_file

SET_RUN_LIMITATIONS = (
    "Groups are signalled only by first names, one name per category in each set, and sex is treated as binary; a "
    "name stands for the group it signals to a reader, not for anyone's identity, and also carries age, class and "
    "region, which this design does not separate from its categories.",
    "The taxonomy (O*NET) and the name sets are US-centred; occupations, their attributes and the names' associations "
    "with their groups differ across countries and languages.",
    "A model's answers depend on the prompt wording, the answer format and decoding; another template may give other "
    "numbers. The template hash on the run card identifies the wording used here.",
    "Small models answer many questions near chance or not at all; read high unknown rates and wide intervals as 'not "
    "measured', not as 'unbiased'.",
    "Intervals generalise from the name sets asked to sets like them: a behaviour that only a few sets in the "
    "population show is missed by a run that draws none of them, and no interval can cover it then; more sets make "
    "that rarer.",
    "The coverage figures of a run over name pairs (shares and rates 0.967 on average at 12 pairs and more, rare "
    "events 0.954) were simulated with the name pair as the unit and are not claimed for this run. Simulated over "
    "name sets, on worlds the methods were not tuned on (BENCHMARKS.md): the intervals of a family of contrasts "
    "covered together in 0.952-0.974 of runs (4 categories, 12 and 24 sets), the category ranking's intervals "
    "0.946-0.957 per category (4 categories over 7, 8 and 12 sets; 8 over 8 and 12).",
    "The questions are hypothetical hiring-style decisions between the people of a set; they do not measure harms in "
    "any deployed use of the model.",
)


def section(markdown: str) -> list[str]:
    """The Markdown summary's limitations, one item each."""
    block = markdown.split("## Limitations\n\n")[1].split("\n\n")[0]
    return [line.removeprefix("- ") for line in block.splitlines()]


@pytest.fixture(scope="module")
def set_run_summary(tmp_path_factory: pytest.TempPathFactory, seeded_db: Path) -> str:
    """The Markdown summary of a replay run over 6 name sets of sex x race/ethnicity, every answer unknown."""
    folder = tmp_path_factory.mktemp("sets")
    db_file = folder / "probe.duckdb"
    db_file.write_bytes(seeded_db.read_bytes())
    settings = dict(
        backend="replay",
        names=str(sets_file(folder / "sets.csv")),
        occupations=("nurse", "pilot"),
        top_k=1,
        conditions=("taxonomy",),
        db=str(db_file),
        quiet=True,
    )
    answers = unknown_answers(folder / "answers.csv", **settings)
    run_id = pipeline.run(RunConfig(**settings, answers=str(answers))).run_id
    return probe.open_run(run_id, db=str(db_file)).report(folder / "report.md").read_text()


def test_a_run_over_name_sets_states_its_own_limitations(set_run_summary: str) -> None:
    assert section(set_run_summary) == list(SET_RUN_LIMITATIONS)
    assert "name pairs" not in set_run_summary.split("## Limitations")[1].replace("a run over name pairs", "")


def test_sets_without_a_sex_attribute_say_nothing_of_sex() -> None:
    first = limitations({"groups": {"attributes": ["race_ethnicity"]}})[0]
    assert first == SET_RUN_LIMITATIONS[0].replace(", and sex is treated as binary", "")


def test_a_run_over_name_pairs_reads_as_before(written: report.ReportFiles) -> None:
    """The default run's limitations, word for word those its report had before set runs had their own (digest of
    the seven items joined by newlines)."""
    assert section(written.markdown.read_text()) == list(PAIR_LIMITATIONS)
    digest = hashlib.sha256("\n".join(PAIR_LIMITATIONS).encode()).hexdigest()
    assert digest == "d89974f0950668177503ff6faff13894c377ae478a9a767ebfec8d7fa72bbca1"


def test_a_contrast_with_no_usable_answer_has_no_estimate_and_says_so(set_run_summary: str) -> None:
    """Every answer unknown: each contrast asked alone has no estimate (the bottom line raised a TypeError)."""
    bottom_line = set_run_summary.split("## Bottom line\n\n")[1].split("\n\n")[0].splitlines()
    no_estimate = [line for line in bottom_line if "has no estimate" in line]
    assert no_estimate == [
        f"- **The {what} between {a} and {b} ({where}) has no estimate: no contest of it has a usable answer.**"
        for what, where in (("preference", "taxonomy"), ("grant gap", "stage1"))
        for a, b in (("women", "men"), ("Black names", "White names"))
    ]
