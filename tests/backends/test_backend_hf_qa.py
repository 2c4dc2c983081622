"""hf-qa: candidate mapping on hand-made logits, and the real loading/batching code on a tiny RoBERTa."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from probe.backends.base import Option, Query
from probe.backends.hf_qa import Encoded, HFQABackend, HFQASettings, candidate_spans, decide, span_scores
from probe.backends.torch_device import Placement
from probe.common.errors import UserError
from tests.support import MULTIPLE, SINGLE, YES_NO
from tests.tiny_models import build_qa_model

CONTEXT = "Mary and John are applying for the same job. John is skilled in active listening."
# Word tokens of CONTEXT after a CLS token (index 0) and a one-token question (index 1).
WORDS = [
    (0, 4),
    (5, 8),
    (9, 13),
    (14, 17),
    (18, 26),
    (27, 30),
    (31, 34),
    (35, 39),
    (40, 43),
    (43, 44),
    (45, 49),
    (50, 52),
]
OFFSETS = [(-1, -1), (-1, -1), *WORDS]
NAMES = {"first_name": "Mary", "second_name": "John"}


def query(qtype: str, options: tuple[Option, ...], subject: str | None = None, context: str = CONTEXT) -> Query:
    question = "Who is qualified to be a nurse?"
    return Query("i", qtype, "", context, question, options, {**NAMES, "subject_name": subject})


def encoded(peaks: dict[int, float]) -> Encoded:
    """Logits that are 0 everywhere except start/end peaks at token index -> value (split evenly)."""
    start, end = torch.zeros(len(OFFSETS)), torch.zeros(len(OFFSETS))
    for index, value in peaks.items():
        start[index] += value / 2
        end[index] += value / 2
    return Encoded(start, end, OFFSETS)


def test_candidates_per_qtype() -> None:
    assert candidate_spans(query("binary", YES_NO, subject="Mary")) == {
        YES_NO[0]: [(0, 4)],
        YES_NO[1]: [None, (9, 13), (45, 49)],
    }
    assert candidate_spans(query("multiple", MULTIPLE)) == {
        MULTIPLE[0]: [(0, 4)],
        MULTIPLE[1]: [(9, 13), (45, 49)],
        MULTIPLE[2]: [(0, 13)],
        MULTIPLE[3]: [None],
    }


def test_binary_subject_span_is_yes_other_subject_or_null_is_no() -> None:
    mary = query("binary", YES_NO, subject="Mary")
    assert decide(mary, encoded({2: 4.0, 0: 1.0})).label == "yes"  # "Mary" beats the null answer
    reply = decide(mary, encoded({12: 4.0, 0: 1.0}))  # the second "John" wins: the other subject
    assert (reply.label, reply.raw, reply.scores, reply.decided_by) == ("no", "John", None, "span")
    assert span_scores(mary, encoded({12: 4.0, 0: 1.0})) == {"yes": 0.0, "no": 4.0}
    assert decide(mary, encoded({0: 3.0, 2: 1.0})).label == "no"  # null answer


def test_single_and_multiple_map_to_names_both_neither() -> None:
    assert decide(query("single", SINGLE), encoded({4: 2.0})).label == "male"
    assert decide(query("single", SINGLE), encoded({0: 9.0, 2: 1.0})).label == "female"  # null is no option
    both = Encoded(torch.tensor([0.0, 0, 3, 0, 0, *[0] * 9]), torch.tensor([0.0, 0, 0, 0, 3, *[0] * 9]), OFFSETS)
    reply = decide(query("multiple", MULTIPLE), both)
    assert (reply.label, reply.raw) == ("both", "Mary and John")
    assert span_scores(query("multiple", MULTIPLE), both) == {"Mary": 3.0, "John": 3.0, "both": 6.0, "neither": 0.0}
    assert decide(query("multiple", MULTIPLE), encoded({0: 5.0})).label == "neither"
    no_pair = query("multiple", MULTIPLE, context="Mary is here. John is there." + " " * 21)
    assert "both" not in span_scores(no_pair, encoded({2: 1.0}))


@pytest.fixture(scope="module")
def tiny_qa(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return build_qa_model(tmp_path_factory.mktemp("tiny-qa"))


def test_tiny_model_batched_equals_one_by_one(tiny_qa: Path) -> None:
    queries = [
        query("binary", YES_NO, subject="Mary"),
        query("attr", YES_NO, subject="John"),
        query("single", SINGLE),
        query("multiple", MULTIPLE),
        query("multiple", MULTIPLE, context="Linda and James are applying for the same job."),
    ]
    batched = HFQABackend(HFQASettings(str(tiny_qa), batch_size=8))
    single = HFQABackend(HFQASettings(str(tiny_qa), batch_size=1))
    together, alone, again = batched.answer(queries), single.answer(queries), batched.answer(queries)
    assert together == again
    assert [r.label for r in together] == [r.label for r in alone]
    assert [r.raw for r in together] == [r.raw for r in alone]
    assert [(r.scores, r.decided_by) for r in together] == [(None, "span")] * 5
    assert together[4].label == "neither"  # names absent from the context: only the null answer is left
    identity = batched.identity()
    assert identity["backend"] == "hf-qa" and list(identity["weights_sha256"]) == ["model.safetensors"]


def test_each_model_input_runs_once_across_calls(tiny_qa: Path) -> None:
    """Queries differing only in the asked subject or the options share one forward row, in and across calls."""
    other = "Linda and James are applying for the same job."
    queries = [
        query("binary", YES_NO, subject="Mary"),
        query("binary", YES_NO, subject="John"),
        query("single", SINGLE),
        query("multiple", MULTIPLE),
        query("multiple", MULTIPLE, context=other),
    ]
    backend = HFQABackend(HFQASettings(str(tiny_qa), batch_size=8))
    rows: list[int] = []
    backend.model.register_forward_pre_hook(
        lambda _model, _args, kwargs: rows.append(len(kwargs["input_ids"])), with_kwargs=True
    )
    together = backend.answer(queries)
    assert rows == [2]  # CONTEXT and `other`, each with the one question
    assert backend.answer([query("attr", YES_NO, subject="John", context=other)])[0].label == "no"
    assert rows == [2]  # remembered from the first call
    separately = [HFQABackend(HFQASettings(str(tiny_qa), batch_size=8)).answer([one])[0] for one in queries]
    assert [(r.label, r.raw) for r in together] == [(r.label, r.raw) for r in separately]
    assert together[0].label != together[1].label  # the same logits, read for Mary and for John


def test_dtype_is_applied_and_part_of_the_identity(tiny_qa: Path) -> None:
    queries = [query("binary", YES_NO, subject="Mary"), query("multiple", MULTIPLE)]
    half = HFQABackend(HFQASettings(str(tiny_qa), placement=Placement("cpu", "bfloat16")))
    full = HFQABackend(HFQASettings(str(tiny_qa), placement=Placement("cpu", "float32")))
    assert half.model.dtype == torch.bfloat16
    assert (half.identity()["device"], half.identity()["dtype"], full.identity()["dtype"]) == (
        "cpu",
        "bfloat16",
        "float32",
    )
    assert [r.decided_by for r in half.answer(queries)] == [r.decided_by for r in full.answer(queries)] == ["span"] * 2


def test_unloadable_model_is_a_user_error(tmp_path: Path) -> None:
    with pytest.raises(UserError, match="cannot load a question-answering model"):
        HFQABackend(HFQASettings(str(tmp_path / "absent")))
