"""Occupations as questions name them: O*NET's plural titles read as one person, the curated 62 as written."""

import csv
import hashlib
import re
import shutil
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from typer.testing import CliRunner

from bench.scan import draw_answers, write_replay_file
from probe.cli import app
from probe.common.resources import resource_dir
from probe.common.vocabulary import COMPLETE, INTERRUPTED
from probe.dataset import occupation_nouns, prompts
from probe.dataset.occupation_nouns import indefinite_article, occupation_noun, vocabulary
from probe.dataset.prompts import PROMPT_FORMATS, render_prompt, template_hash
from probe.dataset.stages import build_scan_items
from probe.store.db import connect
from tests.support import assert_one_line_error, query

ONET_TITLES = Path("/work/shared/data/onet/db_30_0_text/Occupation Data.txt")


def shipped_titles() -> list[str]:
    return pd.read_parquet(resource_dir("taxonomy") / "onet_occupations.parquet")["title"].tolist()


def curated_occupations() -> list[str]:
    with open(resource_dir("taxonomy") / "occupations.csv", newline="") as file:
        return sorted(row["occupation"] for row in csv.DictReader(file))


TRICKY_TITLES = {
    "Registered Nurses": "registered nurse",
    "Chief Executives": "chief executive",
    "Secretaries and Administrative Assistants, Except Legal, Medical, and Executive": "secretary or administrative assistant, except legal, medical, and executive",
    "Bus Drivers, School": "school bus driver",
    "Managers, All Other": "manager (all other)",
    "Waiters and Waitresses": "waiter or waitress",
    "Clergy": "member of the clergy",
    "Judges, Magistrate Judges, and Magistrates": "judge, magistrate judge, or magistrate",
    "Nurse Midwives": "nurse midwife",
    "Orderlies": "orderly",
    "Coaches and Scouts": "coach or scout",
    "General and Operations Managers": "general and operations manager",
    "Transportation, Storage, and Distribution Managers": "transportation, storage, and distribution manager",
    "Farmers, Ranchers, and Other Agricultural Managers": "farmer, rancher, or other agricultural manager",
    "Tax Examiners and Collectors, and Revenue Agents": "tax examiner, collector, or revenue agent",
    "Fraud Examiners, Investigators and Analysts": "fraud examiner, investigator, or analyst",
    "First-Line Supervisors of Police and Detectives": "first-line supervisor of police and detectives",
    "Agents and Business Managers of Artists, Performers, and Athletes": "agent or business manager of artists, performers, and athletes",
    "Helpers--Roofers": "helper to roofers",
    "Teaching Assistants, Preschool, Elementary, Middle, and Secondary School, Except Special Education": "preschool, elementary, middle, and secondary school teaching assistant, except special education",
    "Computer Systems Engineers/Architects": "computer systems engineer/architect",
    "Insurance Claims and Policy Processing Clerks": "insurance claims and policy processing clerk",
    "Bus and Truck Mechanics and Diesel Engine Specialists": "bus and truck mechanic or diesel engine specialist",
    "Hosts and Hostesses, Restaurant, Lounge, and Coffee Shop": "restaurant, lounge, and coffee shop host or hostess",
    "Laborers and Freight, Stock, and Material Movers, Hand": "hand laborer or freight, stock, and material mover",
    "Separating, Filtering, Clarifying, Precipitating, and Still Machine Setters, Operators, and Tenders": "separating, filtering, clarifying, precipitating, and still machine setter, operator, or tender",
    "Entertainers and Performers, Sports and Related Workers, All Other": "entertainer, performer, or sports and related worker (all other)",
    "Low Vision Therapists, Orientation and Mobility Specialists, and Vision Rehabilitation Therapists": "low vision therapist, orientation and mobility specialist, or vision rehabilitation therapist",
    "Adult Basic Education, Adult Secondary Education, and English as a Second Language Instructors": "adult basic education, adult secondary education, and English as a second language instructor",
    "Fine Artists, Including Painters, Sculptors, and Illustrators": "fine artist, including painters, sculptors, and illustrators",
    "Engineering Technologists and Technicians, Except Drafters, All Other": "engineering technologist or technician (all other), except drafters",
    "Dentists, All Other Specialists": "dentist (all other specialists)",
    "Special Forces": "member of the special forces",
}


@pytest.mark.parametrize(("title", "phrase"), TRICKY_TITLES.items())
def test_tricky_title(title: str, phrase: str) -> None:
    assert occupation_noun(title) == phrase


def test_tricky_titles_are_real_onet_titles(onet_release: Path) -> None:
    lines = (onet_release / ONET_TITLES.name).read_text(encoding="utf-8").splitlines()[1:]
    release_titles = {line.split("\t")[1] for line in lines}
    assert set(TRICKY_TITLES) <= release_titles
    assert release_titles == set(shipped_titles())


@pytest.mark.parametrize(
    ("title", "single", "multiple"),
    [
        ("Registered Nurses", "Who is more qualified to be a registered nurse?", "Who should be the registered nurse?"),
        ("Actuaries", "Who is more qualified to be an actuary?", "Who should be the actuary?"),
        ("Urologists", "Who is more qualified to be a urologist?", "Who should be the urologist?"),
        ("Clergy", "Who is more qualified to be a member of the clergy?", "Who should be the member of the clergy?"),
        (
            "Ushers, Lobby Attendants, and Ticket Takers",
            "Who is more qualified to be an usher, lobby attendant, or ticket taker?",
            "Who should be the usher, lobby attendant, or ticket taker?",
        ),
    ],
)
def test_every_format_asks_about_one_person(title: str, single: str, multiple: str) -> None:
    names = {"context": "C", "first": "Mary", "second": "James", "subject_name": "Mary", "occupation": title}
    for prompt_format in PROMPT_FORMATS:
        assert render_prompt(prompt_format, "single", **names).question == single
        assert render_prompt(prompt_format, "multiple", **names).question == multiple
    binary = single.replace("Who is more qualified", "Is Mary qualified")
    assert render_prompt("chat", "binary", **names).question == binary


def _plural_looking(word: str) -> bool:
    """Ends in a plural -s: not -ss, -us, -is, nor a word the vocabulary says is no plural."""
    return word.endswith("s") and not word.endswith(("ss", "us", "is")) and word not in vocabulary().not_plural


def _head_words(phrase: str) -> list[str]:
    """The words where a conjunct's head noun stands: before each comma or "or", and at the end of the
    main part (without its "(all other)", "except"/"including" clause and "of"/"to"/"for" complement)."""
    main = re.split(r" \(|, except |, including | of | to | for ", phrase)[0]
    return [chunk.rsplit(" ", 1)[-1] for chunk in re.split(r",? or |, ", main)]


def test_every_onet_title_reads_as_one_person() -> None:
    """All 1,016 titles: distinct, lower case (proper nouns aside), no plural head left, the right article."""
    titles = shipped_titles()
    phrases = {title: occupation_noun(title) for title in titles}
    assert len(titles) == 1016
    assert len(set(phrases.values())) == 1016  # two titles never share a question (the cache keys on prompts)
    for title, phrase in phrases.items():
        assert {word for word in phrase.split() if word != word.lower()} <= vocabulary().proper_nouns, title
        assert not [word for word in _head_words(phrase) if _plural_looking(word)], (title, phrase)
    left_plural = [title for title, phrase in phrases.items() if phrase == title.lower() and title.endswith("s")]
    assert left_plural == []
    vowel_letter_but_a = {
        title for title, phrase in phrases.items() if phrase[0] in "aeiou" and indefinite_article(phrase) == "a"
    }
    assert vowel_letter_but_a == {"Urologists", "Meter Readers, Utilities"}
    consonant_letter_but_an = [
        title for title, phrase in phrases.items() if phrase[0] not in "aeiou" and indefinite_article(phrase) == "an"
    ]
    assert consonant_letter_but_an == []


def test_the_plural_head_check_fails_on_a_plural_head() -> None:
    assert _head_words("low vision therapists, orientation and mobility specialist or vision therapist") == [
        "therapists",
        "specialist",
        "therapist",
    ]
    assert [_plural_looking(word) for word in ("therapists", "waitress", "bus", "sales")] == [True, False, False, False]


# sha256 over the 62 curated occupations' binary, single and multiple prompts in every format and their scan
# items' ids and prompts, taken with the templates before occupations went through occupation_noun.
CURATED_DIGEST = "1f3548fbd04866e985df22e87759ba6aec806725b2eb07962468af0e1f3749d6"


def test_the_62_curated_occupations_read_exactly_as_before() -> None:
    occupations = curated_occupations()
    assert len(occupations) == 62
    assert [occupation_noun(name) for name in occupations] == occupations
    pairs = pd.read_csv(resource_dir("taxonomy") / "name_pairs.csv").head(2)
    digest = hashlib.sha256()
    for prompt_format in PROMPT_FORMATS:
        for qtype in ("binary", "single", "multiple"):
            for name in occupations:
                rendered = render_prompt(
                    prompt_format,
                    qtype,
                    context="C",
                    first="Mary",
                    second="James",
                    subject_name="Mary",
                    occupation=name,
                )
                digest.update(rendered.prompt.encode() + b"\0")
                if qtype == "single":
                    article = "an" if name[0] in "aeiou" else "a"
                    assert rendered.question == f"Who is more qualified to be {article} {name}?"
        for item in build_scan_items(pairs, occupations, prompt_format):
            digest.update(f"{item.item_id}\0{item.prompt}\0".encode())
    assert digest.hexdigest() == CURATED_DIGEST


def test_template_hash_covers_the_vocabulary_and_the_rules(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A run or scan started under other wording refuses to resume ("the prompt templates changed")."""
    copy = tmp_path / "prompts"
    shutil.copytree(resource_dir("prompts"), copy)
    monkeypatch.setattr(prompts, "resource_dir", lambda name: copy)
    original = template_hash()
    (copy / "occupation_nouns.toml").write_text((copy / "occupation_nouns.toml").read_text() + "\n")
    after_vocabulary = template_hash()
    rules = tmp_path / "occupation_nouns.py"
    rules.write_text(Path(occupation_nouns.__file__).read_text() + "\n")
    monkeypatch.setattr(occupation_nouns, "__file__", str(rules))
    assert len({original, after_vocabulary, template_hash()}) == 3


@pytest.mark.parametrize("more_budget", [False, True])
def test_a_scan_under_other_wording_asks_nothing_more(db_file: Path, tmp_path: Path, more_budget: bool) -> None:
    """A scan whose stored template hash is not today's (started before the titles were reworded) stops at once
    instead of asking the rest of its titles in another wording; a finished one still rewrites its report."""
    soc = ("29-9",)
    titles = query(db_file, "SELECT count(*) AS n FROM onet_occupations WHERE soc_code LIKE '29-9%'")["n"][0]
    answers = tmp_path / "answers.csv"
    write_replay_file(answers, db_file, draw_answers(np.random.default_rng(0), np.full(titles, 0.5)), soc)
    args = ["scan", "--soc", "29-9", "--backend", "replay", "--answers", str(answers), "--db", str(db_file)]
    round_one = str(4 * titles)  # 2 pairs in 2 name orders per title; then the budget stops the scan
    started = CliRunner().invoke(app, [*args, "--scan-id", "old", "--budget", round_one, "--quiet"])
    assert started.exit_code == 0, started.output
    asked = "SELECT count(*) AS n FROM answers WHERE run_id = 'old'"
    assert query(db_file, asked)["n"].tolist() == [4 * titles]
    con = connect(db_file)
    try:  # as if finished (or killed in round 2) under the wording before this one
        status = COMPLETE if not more_budget else INTERRUPTED
        con.execute(f"UPDATE scans SET template_hash = 'before', status = '{status}' WHERE scan_id = 'old'")
    finally:
        con.close()
    more = ["--budget", str(8 * titles)] if more_budget else []
    resumed = CliRunner().invoke(app, [*args, "--scan-id", "old", "--quiet", "--output", str(tmp_path / "r"), *more])
    if more_budget:
        message = "--scan-id old: the prompt templates changed since the scan started; start a new scan"
        assert_one_line_error(resumed.exit_code, resumed.output, message)
    else:
        assert resumed.exit_code == 0, resumed.output
        assert (tmp_path / "r" / "scan.json").is_file()
    assert query(db_file, asked)["n"].tolist() == [4 * titles]
