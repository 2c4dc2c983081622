"""The answers contract: the decision rule, the score space per qtype, and the runner refusing what breaks it."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path

import pytest

from probe import pipeline
from probe.backends.base import Query, Reply, answer_space, contract_error, decide_by_score, score_reply
from probe.common.errors import RunFailed
from probe.dataset.questions import Option
from probe.dataset.stages import build_as_if_all_granted
from probe.store.config import RunConfig
from tests.support import HAND_MADE_ATTRIBUTES, HAND_MADE_PAIRS, SINGLE, YES_NO, FakeBackend, query, seeded_copy


def test_label_is_the_argmax_of_the_scores() -> None:
    assert decide_by_score({"yes": -0.5, "no": -2.0}) == "yes"
    assert decide_by_score({"female": -3.0, "male": -1.25}) == "male"
    assert decide_by_score({"female": -4.0, "male": -4.5, "both": -9.0, "neither": -3.9}) == "neither"


def test_an_exact_tie_for_the_top_is_unknown_whatever_the_order() -> None:
    assert decide_by_score({"female": -1.0, "male": -1.0}) == "unknown"
    assert decide_by_score({"male": -1.0, "female": -1.0}) == "unknown"
    assert decide_by_score({"female": -1.0, "male": -1.0, "both": -0.5, "neither": -3.0}) == "both"  # below the top
    assert score_reply({"yes": -0.7, "no": -0.7}, YES_NO) == Reply(
        label="unknown", raw="", scores={"yes": -0.7, "no": -0.7}, decided_by="score"
    )


def test_score_reply_keeps_every_score_by_label_and_the_chosen_text() -> None:
    assert score_reply({"female": -2.0, "male": -1.0}, SINGLE) == Reply(
        label="male", raw="John", scores={"female": -2.0, "male": -1.0}, decided_by="score"
    )


def test_answer_space_per_qtype() -> None:
    assert {qtype: answer_space(qtype) for qtype in ("attr", "binary", "single", "multiple")} == {
        "attr": ("yes", "no"),
        "binary": ("yes", "no"),
        "single": ("female", "male"),
        "multiple": ("female", "male", "both", "neither"),
    }


@pytest.mark.parametrize("prompt_format", ["chat", "completion", "qa"])
def test_every_item_offers_exactly_its_answer_space(prompt_format: str) -> None:
    """Scores keyed by option label then cover the answer space, no more and no less."""
    conditions = ("taxonomy", "baseline", "control")
    items = build_as_if_all_granted(HAND_MADE_PAIRS, HAND_MADE_ATTRIBUTES, conditions, prompt_format)
    spaces = {(item.qtype, tuple(sorted(option.label for option in item.options))) for item in items}
    assert spaces == {
        ("attr", ("no", "yes")),
        ("binary", ("no", "yes")),
        ("single", ("female", "male")),
        ("multiple", ("both", "female", "male", "neither")),
    }


@pytest.mark.parametrize(
    ("qtype", "reply", "error"),
    [
        ("binary", Reply("yes", scores={"yes": -1.0, "no": -2.0}, decided_by="score"), None),
        (
            "binary",
            Reply("no", scores={"yes": -1.0, "no": -2.0}, decided_by="score"),
            "label 'no' is not the argmax of its scores ('yes')",
        ),
        (
            "single",
            Reply("female", scores={"female": -1.0}, decided_by="score"),
            "scores cover ['female'], not the answer space ['female', 'male']",
        ),
        (
            "single",
            Reply("female", scores={"Mary": -1.0, "John": -2.0}, decided_by="score"),
            "scores cover ['John', 'Mary'], not the answer space ['female', 'male']",
        ),
        (
            "attr",
            Reply("yes", scores={"yes": float("nan"), "no": -2.0}, decided_by="score"),
            "a score is not a finite number",
        ),
        ("attr", Reply("yes", decided_by="score"), "scores cover [], not the answer space ['no', 'yes']"),
        (
            "attr",
            Reply("yes", scores={"yes": -1.0, "no": -2.0}, decided_by="generate"),
            "scores given with a generate-decided label",
        ),
        ("multiple", Reply("both", decided_by="span"), None),
        ("multiple", Reply("both", decided_by="vibes"), "unknown decision rule 'vibes'"),
        ("single", Reply("yes", decided_by="replay"), "invalid label 'yes'"),
        ("single", Reply("unknown", error="timeout", decided_by="score"), None),
        ("single", Reply("male", error="timeout", decided_by="score"), "a failed item with a label or scores"),
        ("kway", Reply("Ana", scores={"Ana": -1.0, "Jose": -2.0, "Mai": -3.0}, decided_by="score"), None),
        (
            "kway",
            Reply("Ana", scores={"Ana": -1.0, "Jose": -2.0}, decided_by="score"),
            "scores cover ['Ana', 'Jose'], not the answer space ['Ana', 'Jose', 'Mai']",
        ),
        ("kway", Reply("female", decided_by="replay"), "invalid label 'female'"),
    ],
)
def test_contract_errors(qtype: str, reply: Reply, error: str | None) -> None:
    """The answer space is the item's options: a question type's canonical labels, or the K-way choice's names."""
    labels = ("Ana", "Jose", "Mai") if qtype == "kway" else answer_space(qtype)
    assert contract_error([Option(label, label) for label in labels], reply) == error


class ScoringBackend(FakeBackend):
    """Scores options by a fixed table; `lie` makes it report the lowest-scored option as its label."""

    def __init__(self, lie: bool = False) -> None:
        super().__init__()
        self.lie = lie

    def answer(self, queries: Sequence[Query]) -> list[Reply]:
        replies = []
        for asked in queries:
            scores = {option.label: -0.1 * len(option.text) - 0.5 * i for i, option in enumerate(asked.options)}
            reply = score_reply(scores, asked.options)
            if self.lie:
                reply = Reply(label=min(scores, key=scores.__getitem__), raw="", scores=scores, decided_by="score")
            replies.append(reply)
        return replies


def run_with(backend: FakeBackend, db_file: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setattr(pipeline, "create_backend", lambda config: backend)
    return pipeline.answer(
        RunConfig(pairs=1, occupations=("nurse",), top_k=1, conditions=("taxonomy",), db=str(db_file), quiet=True)
    )


@pytest.fixture
def db_file(tmp_path_factory: pytest.TempPathFactory, tmp_path: Path) -> Path:
    return seeded_copy(tmp_path_factory.getbasetemp() / "contract-seed.duckdb", tmp_path / "probe.duckdb")


def test_runner_stores_decided_by_and_label_keyed_scores(db_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    run_id = run_with(ScoringBackend(), db_file, monkeypatch)
    stored = query(
        db_file,
        "SELECT i.qtype, a.label, a.scores_json, a.decided_by, a.error FROM answers a JOIN items i "
        "USING (run_id, item_id) WHERE run_id = ?",
        [run_id],
    )
    assert set(stored["decided_by"]) == {"score"} and stored["error"].isna().all()
    for qtype, label, scores_json in stored[["qtype", "label", "scores_json"]].itertuples(index=False):
        scores = json.loads(scores_json)
        assert sorted(scores) == sorted(answer_space(qtype))
        assert label == max(scores, key=scores.__getitem__)


def test_runner_refuses_a_label_that_disagrees_with_its_scores(db_file: Path, monkeypatch) -> None:
    with pytest.raises(RunFailed, match="backend broke the answers contract: label 'no' is not the argmax"):
        run_with(ScoringBackend(lie=True), db_file, monkeypatch)
    stored = query(db_file, "SELECT label, scores_json, error FROM answers")
    assert set(stored["label"]) == {"unknown"} and stored["scores_json"].isna().all()
    assert stored["error"].str.startswith("backend broke the answers contract: label ").all()
    assert query(db_file, "SELECT count(*) AS n FROM answer_cache")["n"][0] == 0  # asked again next time


def test_report_shows_the_decision_margin_per_qtype(db_file: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from probe.report import render_report, summary
    from probe.store import db

    run_id = run_with(ScoringBackend(), db_file, monkeypatch)
    con = db.connect(db_file)
    try:
        document = summary(con, run_id)
        html, markdown = render_report(document)
    finally:
        con.close()
    # attr: yes -0.3, no -0.7 (ScoringBackend): every margin 0.4 nats, no near-tie
    margins = document["decision_margins"]
    attr = margins["attr"]
    assert (attr["scored"], attr["answers"], attr["near_tie_share"]) == (12, 12, 0.0)
    assert [attr["margin_q1"], attr["margin_median"], attr["margin_q3"]] == pytest.approx([0.4] * 3)
    assert list(margins) == ["attr", "binary", "single", "multiple"]
    assert 'id="decision-margins"' in html and "0.40 / 0.40 / 0.40" in html
    assert "| Decision margin, attr | 12 of 12 decided by score; top-two margin median 0.40 nats" in markdown
