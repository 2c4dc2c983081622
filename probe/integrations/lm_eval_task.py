"""`probe export --format lm-eval`: an lm-evaluation-harness task folder (`lm_eval --include_path DIR`).

One `multiple_choice` task per question type over the exported items (dataset/, the hf-dataset folder), so the
harness scores each option's log-likelihood after the prompt by the probe's continuation rule
(probe/backends/model_input.py): chat prompts go through the model's chat template (`--apply_chat_template`)
with the option right after the assistant turn; completion prompts take the option after a space, the prompt's
trailing whitespace moving into it. Its `--log_samples` output comes back with `probe import lm-eval`.
"""

from __future__ import annotations

from pathlib import Path

from probe.backends.base import answer_space
from probe.common.errors import UserError
from probe.common.escape import write_atomic
from probe.common.version import __version__
from probe.common.vocabulary import KWAY, QTYPES
from probe.dataset.prompts import render_template
from probe.integrations.hf_dataset import TEMPLATES, data_path, write_dataset
from probe.integrations.source import Exported

GROUP = "taxonomy_probe"
QUESTIONS = {
    "attr": "stage 1: does this subject have this attribute?",
    "binary": "stage 2: is this subject qualified to be the occupation?",
    "single": "stage 2: who is more qualified?",
    "multiple": "stage 2: who should be the occupation (either, both, neither)?",
}
# Where the harness puts a scored option after the prompt (model_input.py): under a chat template right after
# the assistant turn (the harness drops the delimiter there), after completion text a space.
TARGET_DELIMITERS = {"chat": "", "completion": " "}
DATASET = "dataset"  # the hf-dataset export inside the task folder


def task_name(qtype: str) -> str:
    return f"{GROUP}_{qtype}"


def check_prompt_format(exported: Exported, tool: str) -> None:
    """Chat and completion prompts carry over exactly; extractive-QA items, a completion system prompt and the K-way
    choice (its options are each set's names, not a question type's labels) do not."""
    if exported.prompt_format not in TARGET_DELIMITERS:
        raise UserError(
            f"run {exported.run_id}: {exported.prompt_format}-format items are for extractive QA "
            f"models; {tool} scores chat or completion prompts"
        )
    if exported.prompt_format == "completion" and exported.system_prompt:
        raise UserError(
            f"run {exported.run_id}: a completion-format run with --system-prompt cannot be "
            f"exported to {tool} as it is scored here"
        )
    if any(item.qtype == KWAY for item in exported.items):
        raise UserError(
            f"run {exported.run_id}: it asked the K-way choice (--questions kway), whose options are "
            f"each set's names; {tool} tasks take a question type's fixed labels"
        )


def configurations_by_qtype(exported: Exported) -> dict[str, list[str]]:
    """The data configurations each question type's items are in (dataset order), for the qtypes exported."""
    found: dict[str, list[str]] = {}
    for item in exported.items:
        names = found.setdefault(item.qtype, [])
        if item.condition not in names:
            names.append(item.condition)
    return {qtype: found[qtype] for qtype in QTYPES if qtype in found}


def write_task(exported: Exported, out_dir: Path) -> list[Path]:
    """The task folder: dataset/ (the hf-dataset export), one YAML per question type, utils.py and README.md."""
    check_prompt_format(exported, "lm-evaluation-harness")
    written = write_dataset(exported, out_dir / DATASET)
    configurations = configurations_by_qtype(exported)
    files = {qtype: [f"{DATASET}/{data_path(name)}" for name in names] for qtype, names in configurations.items()}
    labels = {qtype: list(answer_space(qtype)) for qtype in configurations}
    common = {"version": __version__, "run_id": exported.run_id, "group": GROUP}
    for qtype in configurations:
        text = TEMPLATES.get_template("lm_eval/task.yaml.j2").render(
            **common,
            task=task_name(qtype),
            qtype=qtype,
            labels=labels[qtype],
            target_delimiter=TARGET_DELIMITERS[exported.prompt_format],
        )
        written.append(_write(out_dir / f"{task_name(qtype)}.yaml", text))
    utils = TEMPLATES.get_template("lm_eval/utils.py.j2").render(**common, files=files, labels=labels)
    written.append(_write(out_dir / "utils.py", utils))
    if exported.system_prompt:
        system = render_template("chat/system.j2", system_prompt=exported.system_prompt)
        written.append(_write(out_dir / "system_instruction.txt", system))
    counts = {qtype: sum(item.qtype == qtype for item in exported.items) for qtype in configurations}
    # "size", not "items": Jinja2 reads task.items as the dict's own method before the key
    tasks = [{"name": task_name(qtype), "size": counts[qtype], "what": QUESTIONS[qtype]} for qtype in configurations]
    readme = TEMPLATES.get_template("lm_eval/README.md.j2").render(
        **common,
        tasks=tasks,
        prompt_format=exported.prompt_format,
        folder_name=out_dir.name,
        system_instruction=bool(exported.system_prompt),
        taxonomy=any(item.condition == "taxonomy" for item in exported.items),
    )
    written.append(_write(out_dir / "README.md", readme))
    return written


def _write(path: Path, text: str) -> Path:
    write_atomic(path, text)
    return path
