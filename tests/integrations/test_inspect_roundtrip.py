"""The Inspect AI round trip: a run's items exported as an Inspect task, evaluated by the installed inspect_ai
with its local hf provider on a tiny model, and `probe import inspect` of the log. Inspect has no log-likelihood
call, so the task generates (greedy) and the check is against the project's own generate decoding on the same
model: the same answer text for every item, mapped to the same label."""

from __future__ import annotations

from pathlib import Path

import pytest

from probe import pipeline
from probe.backends.hf_causal import HFCausalBackend, HFCausalSettings
from probe.dataset.items import item_from_row
from probe.store.config import RunConfig
from tests.support import FakeBackend, invoke, query
from tests.tiny_models import build_causal_model


def test_inspect_answers_come_back_as_a_run_equal_to_the_projects_generate_decoding(
    db_file: Path, tmp_path: Path, use_backend, monkeypatch: pytest.MonkeyPatch
) -> None:
    # imported here, not at collection: the other `make test` process, which never runs this file, saves ~5 s of CPU
    inspect_ai = pytest.importorskip(
        "inspect_ai", reason="the inspect extra is not installed: pip install '.[inspect]'"
    )
    use_backend(FakeBackend())
    settings = {"pairs": 2, "occupations": ("nurse", "pilot"), "top_k": 1, "conditions": ("baseline",)}
    pipeline.run(RunConfig(**settings, db=str(db_file), run_id="src", quiet=True))
    task = tmp_path / "task"
    code, output = invoke("export", "src", "--format", "inspect", "-o", str(task), "--db", str(db_file))
    assert code == 0, output
    model = build_causal_model(tmp_path / "tiny-chat", chat=True)
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.chdir(task)
    model_args = {
        "model_path": str(model),
        "device": "cpu",
        "do_sample": False,
        "tokenizer_call_args": {"add_special_tokens": False},
    }
    [log] = inspect_ai.eval(
        "task.py", model="hf/tiny", model_args=model_args, log_dir=str(tmp_path / "logs"), display="none"
    )
    assert log.status == "success"

    code, output = invoke("import", "inspect", log.location, "--run-id", "inspected", "--db", str(db_file))
    assert code == 0, output
    rows = query(db_file, "SELECT * FROM items WHERE run_id = 'src'").to_dict("records")
    items = [item_from_row(row) for row in rows]
    own_backend = HFCausalBackend(HFCausalSettings(str(model), decoding="generate", threads=2))
    own = own_backend.answer([item.query() for item in items])
    own_replies = {item.item_id: reply for item, reply in zip(items, own, strict=True)}
    imported = query(db_file, "SELECT item_id, label, raw, decided_by FROM answers WHERE run_id = 'inspected'")
    assert len(imported) == len(items) == 80
    assert set(imported["decided_by"]) == {"generate"}
    assert {row["item_id"]: (row["raw"], row["label"]) for row in imported.to_dict("records")} == {
        item_id: (reply.raw, reply.label) for item_id, reply in own_replies.items()
    }
    assert query(db_file, "SELECT model FROM runs WHERE run_id = 'inspected'")["model"][0] == "hf/tiny"
