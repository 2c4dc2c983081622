"""`probe import lm-eval SAMPLES.jsonl ...` and `probe import inspect LOG`: another tool's answers as a run.

The files answer items exported from a run (`probe export --format lm-eval|inspect`): each line or sample carries
the item's id, its prompt and each option's log-likelihood by label. The new run takes that run's settings and
is answered the way `--backend replay` answers (every item asked through the runner, stored, analysed), except
that an answer is found by item id, never by guessing: an item answered by no line is unknown, and a line is
used only when its prompt is the one the new run asks (stage 2 of the taxonomy condition is built from the new
run's own stage-1 answers; where they differ from the exporting run's, so does the prompt). Lines not used are
named by file and line. Labels are the argmax of the imported scores (decided_by `score`), as for a local model.
A file that cannot be read as the tool's output is refused before anything is written.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from probe.answering.runs import stored_run, stored_settings
from probe.backends.base import BackendDefaults, Query, Reply, answer_space, default_cache_key_parts, score_reply
from probe.backends.parse import parse_option
from probe.common.errors import UserError
from probe.common.escape import terminal_text
from probe.common.vocabulary import QTYPES, UNKNOWN
from probe.store.config import load_config
from probe.store.db import connect
from probe.store.spec import RunSpec

SHOWN_PROBLEMS = 10  # lines named in the warning; the rest are counted


@dataclass(frozen=True)
class ImportedAnswer:
    """One item's answer as another tool recorded it."""

    where: str  # "FILE, line N" (or "FILE, sample N")
    item_id: str
    source_run: str | None  # the run the items were exported from
    prompt: str
    scores: dict[str, float] | None  # canonical label -> option log-likelihood (lm-eval)
    text: str | None = None  # the generated answer, mapped to an option here (Inspect AI)


def option_scores(where: str, doc: dict, values: Sequence[object]) -> dict[str, float]:
    """Scores by canonical label from the exported item (`doc`) and the tool's per-choice values, checked."""
    labels = doc.get("choice_labels")
    qtype = doc.get("qtype")
    if not isinstance(labels, list) or qtype not in QTYPES:
        raise UserError(f"{where}: the sample has no exported item (qtype, choice_labels): not from `probe export`")
    if sorted(labels) != sorted(answer_space(qtype)) or len(values) != len(labels):
        raise UserError(f"{where}: {len(values)} option scores for the {qtype} options {', '.join(labels)}")
    try:
        scores = {label: float(value) for label, value in zip(labels, values, strict=True)}  # type: ignore[arg-type]
    except (TypeError, ValueError):
        raise UserError(f"{where}: an option score is not a number") from None
    if not all(math.isfinite(score) for score in scores.values()):
        raise UserError(f"{where}: an option score is not a finite number")
    return scores


def answer_from_doc(where: str, doc: object, values: Sequence[object]) -> ImportedAnswer:
    if not isinstance(doc, dict) or not isinstance(doc.get("item_id"), str) or not isinstance(doc.get("prompt"), str):
        raise UserError(f"{where}: the sample has no exported item (item_id, prompt): not from `probe export`")
    return ImportedAnswer(where, doc["item_id"], doc.get("run_id"), doc["prompt"], option_scores(where, doc, values))


def read_lm_eval_samples(paths: Sequence[Path]) -> tuple[list[ImportedAnswer], None]:
    """lm-evaluation-harness `--log_samples` JSONL: per line the exported `doc` and `filtered_resps`, one
    [log-likelihood, is_greedy] pair per choice (numbers or their text). The samples name no model (None)."""
    answers = []
    for path in paths:
        if not path.is_file():
            raise UserError(f"{path}: no such file")
        with path.open(encoding="utf-8", errors="replace") as file:
            for number, text in enumerate(file, start=1):
                if not text.strip():
                    continue
                where = f"{path}, line {number}"
                try:
                    line = json.loads(text)
                except json.JSONDecodeError as error:
                    raise UserError(f"{where}: not JSON ({error.msg})") from None
                except RecursionError:  # json.loads recurses into arrays and objects
                    raise UserError(f"{where}: JSON nested too deeply for a sample") from None
                responses = line.get("filtered_resps") if isinstance(line, dict) else None
                if not isinstance(responses, list) or not all(
                    isinstance(pair, list | tuple) and pair for pair in responses
                ):
                    raise UserError(f"{where}: no filtered_resps: not an lm-evaluation-harness multiple_choice sample")
                answers.append(answer_from_doc(where, line.get("doc"), [pair[0] for pair in responses]))
    return answers, None


class ImportedBackend(BackendDefaults):
    """Answers a run's items from imported answers, by item id and prompt (module docstring)."""

    batch_size = 4096
    cacheable = False  # answers come from the files, not from a prompt
    labels_are_data = True

    def __init__(
        self, tool: str, model: str, files: Sequence[Path], answers: Sequence[ImportedAnswer], prompt_format: str
    ) -> None:
        self.tool, self.model, self.prompt_format = tool, model, prompt_format
        self.decided_by = "score" if all(answer.scores is not None for answer in answers) else "generate"
        self.files_sha256 = hashlib.sha256(b"".join(hashlib.sha256(path.read_bytes()).digest() for path in files))
        self.answers: dict[str, ImportedAnswer] = {}
        for answer in answers:
            earlier = self.answers.setdefault(answer.item_id, answer)
            if earlier is not answer and (earlier.scores, earlier.text) != (answer.scores, answer.text):
                raise UserError(f"{answer.where}: item {answer.item_id} again, with other scores than {earlier.where}")
        self.used: set[str] = set()
        self.other_prompt: list[ImportedAnswer] = []
        self.asked = 0

    def identity(self) -> dict[str, object]:
        return {
            "backend": self.tool,
            "model": self.model,
            "sha256": self.files_sha256.hexdigest(),
            "prompt_format": self.prompt_format,
            "decided_by": self.decided_by,
        }

    def cache_key_parts(self, query: Query) -> list[object]:
        return default_cache_key_parts(query)  # never used: imported answers are not cached

    def answer(self, queries: Sequence[Query]) -> list[Reply]:
        replies = []
        for query in queries:
            found = self.answers.get(query.item_id)
            if found is not None and found.prompt != query.prompt:
                self.other_prompt.append(found)
                found = None
            if found is None:
                replies.append(Reply(label=UNKNOWN, raw=f"not in the {self.tool} files", decided_by="replay"))
                continue
            self.used.add(query.item_id)
            if found.scores is not None:
                replies.append(score_reply(found.scores, query.options))
            else:
                chosen = parse_option(str(found.text), query.options)
                replies.append(
                    Reply(label=chosen.label if chosen else UNKNOWN, raw=str(found.text), decided_by="generate")
                )
        self.asked += len(queries)
        return replies

    def finish(self) -> None:
        """No answer used is an error; lines not used and items without a line are named or counted (nothing to
        say when nothing was asked: the same files again, of a finished import)."""
        if not self.asked:
            return
        if not self.used:
            raise UserError(
                f"the {self.tool} files answer none of the {self.asked} items of this run (were they "
                "exported from its source run?)"
            )
        problems = [
            f"{answer.where}: item {answer.item_id} is asked with another prompt here (stage 2 built from "
            "this run's own stage-1 answers)"
            for answer in self.other_prompt
        ]
        asked_elsewhere = {answer.item_id for answer in self.other_prompt}
        problems += [
            f"{answer.where}: item {answer.item_id} is no item of this run"
            for answer in self.answers.values()
            if answer.item_id not in self.used and answer.item_id not in asked_elsewhere
        ]
        missing = self.asked - len(self.used)
        if problems or missing:
            shown = "".join(f"\n  {terminal_text(problem)}" for problem in problems[:SHOWN_PROBLEMS])
            more = f"\n  ... and {len(problems) - SHOWN_PROBLEMS} more" if len(problems) > SHOWN_PROBLEMS else ""
            print(
                f"warning: {missing} of {self.asked} items have no usable {self.tool} answer and are unknown; "
                f"{len(problems)} lines not used:{shown}{more}",
                file=sys.stderr,
            )

    def close(self) -> None:
        self.answers = {}


def import_settings(
    db: Path, run_id: str, tool: str, files: Sequence[Path], answers: Sequence[ImportedAnswer], model: str | None = None
) -> tuple[RunSpec, ImportedBackend]:
    """The new run's settings (the exporting run's) and the backend that answers it from `answers`."""
    sources = {answer.source_run for answer in answers}
    if len(sources) != 1 or None in sources:
        named = ", ".join(sorted(str(source) for source in sources)) or "none"
        raise UserError(f"{files[0]}: the answers must come from the items of one exported run (found: {named})")
    source = str(sources.pop())
    if not db.exists():
        raise UserError(f"{db}: no such database")
    con = connect(db, read_only=True)
    try:
        stored = stored_run(con, source)
        if stored is None:
            raise UserError(f"{files[0]}: its items were exported from run {source}, which is not in {db}")
        settings = stored_settings(con, source) or {}
        taken = stored_settings(con, run_id) if stored_run(con, run_id) is not None else None
    finally:
        con.close()
    files_setting = ", ".join(str(path) for path in files)
    if taken is not None and (taken.get("backend") != "replay" or taken.get("answers") != files_setting):
        # the same files again resume the import; anything else under this id is another run
        raise UserError(
            f"--run-id {run_id}: {db} holds another run of that id (not an import of these files); "
            "choose another --run-id"
        )
    prompt_format = json.loads(str(stored["backend_json"])).get("prompt_format", "chat")
    model = model or f"{tool}: {', '.join(path.name for path in files)}"
    kept = {name: value for name, value in settings.items() if name not in ("study", "base_url", "answers", "model")}
    config = load_config(
        {"run_id": run_id, "db": str(db), "backend": "replay", "quiet": True, "answers": files_setting}, stored=kept
    )
    return config, ImportedBackend(tool, model, files, answers, prompt_format)
