"""`probe export --format inspect` (an Inspect AI task: `inspect eval DIR/task.py`) and the reading of its log
for `probe import inspect`.

Inspect's model API generates; it has no call for the log-likelihood of a given continuation, so the task decides
as `--decoding generate` does (greedy, the answer text mapped to an option by probe/backends/parse.py on import)
and its labels are compared with a generate run of the same model, not with option scores. The scorer keeps the
answer's token log-probabilities where the provider returns them.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

from probe.common.errors import UserError
from probe.common.escape import write_atomic
from probe.common.version import __version__
from probe.integrations.hf_dataset import TEMPLATES, data_path, write_dataset
from probe.integrations.imports import ImportedAnswer
from probe.integrations.lm_eval_task import DATASET, check_prompt_format, configurations_by_qtype
from probe.integrations.source import Exported

DEFAULT_MAX_TOKENS = 16  # BackendSpec.max_tokens, for a design exported without a run


def write_task(exported: Exported, out_dir: Path) -> list[Path]:
    """DIR/task.py over DIR/dataset/ (the hf-dataset export), and the run's system prompt where it has one."""
    check_prompt_format(exported, "Inspect AI")
    if exported.prompt_format != "chat":
        raise UserError(
            f"run {exported.run_id}: Inspect AI sends chat messages; this run's prompts are "
            f"{exported.prompt_format} text"
        )
    written = write_dataset(exported, out_dir / DATASET)
    names = [name for names in configurations_by_qtype(exported).values() for name in names]
    files = [f"{DATASET}/{data_path(name)}" for name in dict.fromkeys(names)]
    text = TEMPLATES.get_template("inspect/task.py.j2").render(
        version=__version__,
        files=files,
        system_prompt=bool(exported.system_prompt),
        max_tokens=exported.settings.get("max_tokens") or DEFAULT_MAX_TOKENS,
    )
    write_atomic(out_dir / "task.py", text)
    written.append(out_dir / "task.py")
    if exported.system_prompt:
        write_atomic(out_dir / "system_prompt.txt", exported.system_prompt)
        written.append(out_dir / "system_prompt.txt")
    return written


def read_inspect_log(paths: Sequence[Path]) -> tuple[list[ImportedAnswer], str]:
    """The answers of an Inspect AI log (one file) of the exported task, and the model it names."""
    if len(paths) != 1:
        raise UserError(f"{', '.join(map(str, paths)) or 'no file'}: give one Inspect AI log")
    path = paths[0]
    try:
        from inspect_ai.log import read_eval_log
    except ImportError:
        raise UserError("probe import inspect needs Inspect AI: pip install 'taxonomy-probe[inspect]'") from None
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    try:
        log = read_eval_log(str(path))
    except Exception as error:  # the log reader raises many kinds for a file that is not a log
        raise UserError(f"{path}: not an Inspect AI log ({type(error).__name__})") from None
    answers = []
    for number, sample in enumerate(log.samples or [], start=1):
        where = f"{path}, sample {number}"
        doc = sample.metadata or {}
        if not isinstance(doc.get("item_id"), str) or not isinstance(doc.get("prompt"), str):
            raise UserError(f"{where}: the sample has no exported item (item_id, prompt): not from `probe export`")
        if sample.error or sample.output is None:
            continue  # an item Inspect could not answer stays unknown
        answers.append(
            ImportedAnswer(where, doc["item_id"], doc.get("run_id"), doc["prompt"], None, sample.output.completion)
        )
    return answers, str(log.eval.model)
