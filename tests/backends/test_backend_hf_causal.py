"""hf-causal on tiny random Llamas: option log-likelihoods, token trees, chat template, batching, GGUF files,
device/dtype, greedy generation."""

from __future__ import annotations

import functools
import hashlib
import json
import shutil
from pathlib import Path

import pytest
import torch
from transformers import AutoModelForCausalLM, AutoTokenizer
from typer.testing import CliRunner

from probe.backends import gguf_cache, hf_causal
from probe.backends.base import Option, Query
from probe.backends.fingerprint import file_sha256
from probe.backends.hf_causal import HFCausalBackend, HFCausalSettings
from probe.backends.prefix_tree import TokenTree
from probe.backends.torch_device import Placement, resolve_placement
from probe.cli import app
from probe.common.errors import UserError
from tests.support import MULTIPLE, YES_NO, query
from tests.tiny_models import build_causal_model, write_gguf

PROMPTS = {
    "binary": "Mary and John are applying for the same job.\nQuestion: Is Mary qualified to be a nurse?\nAnswer:",
    "multiple": "Linda and James are applying for the same job. Who should be the dancer?\nAnswer:",
}


def queries() -> list[Query]:
    return [
        Query("1", "binary", PROMPTS["binary"], "", "", YES_NO, {}),
        Query("2", "multiple", PROMPTS["multiple"], "", "", MULTIPLE, {}),
        Query("3", "binary", "Mary is here.\nAnswer:", "", "", YES_NO, {}),
    ]


@pytest.fixture(scope="module")
def models(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    root = tmp_path_factory.mktemp("tiny-causal")
    return {
        "chat": build_causal_model(root / "chat", chat=True),
        "plain": build_causal_model(root / "plain", chat=False),
        "gguf": write_gguf(build_causal_model(root / "for-gguf", chat=True), root / "tiny-chat.gguf"),
    }


@functools.cache
def reference_model(folder: Path) -> torch.nn.Module:
    """The saved model loaded once a folder (the tests never write to it)."""
    return AutoModelForCausalLM.from_pretrained(folder).eval()


def reference_loglikelihood(folder: Path, prompt_ids: list[int], option_ids: list[int]) -> float:
    """log p(option | prompt) from one unpadded forward pass, written out independently of the backend."""
    model = reference_model(folder)
    ids = torch.tensor([prompt_ids + option_ids])
    with torch.no_grad():
        logprobs = torch.log_softmax(model(ids).logits[0].float(), -1)
    return sum(float(logprobs[len(prompt_ids) + i - 1, token]) for i, token in enumerate(option_ids))


def test_completion_format_scores_options_by_loglikelihood(models: dict[str, Path]) -> None:
    backend = HFCausalBackend(HFCausalSettings(str(models["plain"]), batch_size=8))
    assert backend.prompt_format == "completion"
    replies = backend.answer(queries())
    tokenizer = AutoTokenizer.from_pretrained(models["plain"])
    prompt_ids = tokenizer(PROMPTS["multiple"]).input_ids
    expected = {
        option.label: reference_loglikelihood(
            models["plain"], prompt_ids, tokenizer(" " + option.text, add_special_tokens=False).input_ids
        )
        for option in MULTIPLE
    }
    assert replies[1].scores == pytest.approx(expected, abs=1e-4)
    best = max(expected, key=expected.__getitem__)
    assert (replies[1].label, replies[1].raw) == (best, next(o.text for o in MULTIPLE if o.label == best))
    assert [(sorted(reply.scores), reply.decided_by) for reply in replies] == [
        (["no", "yes"], "score"),
        (["both", "female", "male", "neither"], "score"),
        (["no", "yes"], "score"),
    ]


def test_chat_template_and_batching_equal_one_by_one(models: dict[str, Path]) -> None:
    batched = HFCausalBackend(HFCausalSettings(str(models["chat"]), batch_size=8))
    alone = HFCausalBackend(HFCausalSettings(str(models["chat"]), batch_size=1))
    assert batched.prompt_format == "chat"
    together, single, again = batched.answer(queries()), alone.answer(queries()), batched.answer(queries())
    assert together == again
    assert [reply.label for reply in together] == [reply.label for reply in single]
    for one, other in zip(together, single, strict=True):
        assert one.scores == pytest.approx(other.scores, abs=1e-4)
    tokenizer = AutoTokenizer.from_pretrained(models["chat"])
    chat_ids = tokenizer(f"<s>user: {PROMPTS['binary']}</s><s>assistant:", add_special_tokens=False).input_ids
    yes = reference_loglikelihood(models["chat"], chat_ids, tokenizer("yes", add_special_tokens=False).input_ids)
    assert together[0].scores["yes"] == pytest.approx(yes, abs=1e-4)
    assert batched.identity()["prompt_format"] == "chat"


def test_greedy_generation_is_parsed_and_deterministic(models: dict[str, Path]) -> None:
    backend = HFCausalBackend(HFCausalSettings(str(models["plain"]), decoding="generate", max_tokens=4, batch_size=8))
    replies = backend.answer(queries())
    assert replies == backend.answer(queries())
    assert [(reply.scores, reply.decided_by) for reply in replies] == [(None, "generate")] * 3
    allowed = [
        {"yes", "no", "unknown"},
        {"female", "male", "both", "neither", "unknown"},
        {"yes", "no", "unknown"},
    ]
    assert [reply.label in labels for reply, labels in zip(replies, allowed, strict=True)] == [True] * 3
    assert all(reply.raw for reply in replies)
    assert backend.identity()["max_tokens"] == 4


def test_bad_settings_are_user_errors(models: dict[str, Path], tmp_path: Path) -> None:
    with pytest.raises(UserError, match="decoding 'beam'"):
        HFCausalSettings(str(models["plain"]), decoding="beam")
    with pytest.raises(UserError, match="cannot load a causal language model"):
        HFCausalBackend(HFCausalSettings(str(tmp_path / "absent")))


def overlapping_queries() -> list[Query]:
    """Prompts that share a context (and one that repeats), options that share first tokens."""
    context = "Mary and John are applying for the same job. Mary is skilled in active listening."
    names = (Option("Mary", "female"), Option("Mar", "male"), Option("both", "both"), Option("neither", "neither"))
    return [
        Query("a", "binary", f"{context}\nQuestion: Is Mary qualified to be a nurse?\nAnswer:", "", "", YES_NO, {}),
        Query("b", "binary", f"{context}\nQuestion: Is John qualified to be a nurse?\nAnswer:", "", "", YES_NO, {}),
        Query("c", "multiple", f"{context}\nQuestion: Who should be the dancer?\nAnswer:", "", "", names, {}),
        Query("d", "binary", f"{context}\nQuestion: Is Mary qualified to be a nurse?\nAnswer:", "", "", YES_NO, {}),
        Query("e", "binary", "John is here.\nAnswer:", "", "", YES_NO, {}),
    ]


def test_token_tree_stores_shared_prefixes_once() -> None:
    tree = TokenTree()
    assert tree.extend(-1, [5, 6, 7]) == [0, 1, 2]
    assert tree.extend(-1, [5, 6, 8, 9]) == [0, 1, 3, 4]
    assert tree.extend(1, [7]) == [2]  # an existing continuation
    assert tree.extend(tree.private_root(), [5, 6]) == [5, 6]  # a separate sequence shares nothing
    assert (tree.tokens, tree.parents, tree.depths) == (
        [5, 6, 7, 8, 9, 5, 6],
        [-1, 0, 1, 1, 3, -2, 5],
        [0, 1, 2, 2, 3, 0, 1],
    )
    context, mask = tree.window_mask(list(range(7)))
    assert (context.tolist(), mask.int().tolist()) == (
        [],
        [
            [1, 0, 0, 0, 0, 0, 0],
            [1, 1, 0, 0, 0, 0, 0],
            [1, 1, 1, 0, 0, 0, 0],
            [1, 1, 0, 1, 0, 0, 0],
            [1, 1, 0, 1, 1, 0, 0],
            [0, 0, 0, 0, 0, 1, 0],
            [0, 0, 0, 0, 0, 1, 1],
        ],
    )
    context, mask = tree.window_mask([3, 4, 5, 6])  # after 0-2: node 4 sees 0, 1 (context), 3 and itself
    assert (context.tolist(), mask.int().tolist()) == (
        [0, 1],
        [
            [1, 1, 1, 0, 0, 0],
            [1, 1, 1, 1, 0, 0],
            [0, 0, 0, 0, 1, 0],
            [0, 0, 0, 0, 1, 1],
        ],
    )
    context, mask = tree.window_mask([2, 4])  # the others computed before (or taken from another tree)
    assert (context.tolist(), mask.int().tolist()) == ([0, 1, 3], [[1, 1, 0, 1, 0], [1, 1, 1, 0, 1]])
    other = TokenTree()
    other.extend(-1, [9, 5])
    other.extend(-1, [5, 6, 8])
    assert tree.shared_with(other) == {0: 2, 1: 3, 3: 4}  # paths from the shared roots only


@pytest.mark.parametrize(
    ("window_nodes", "calls"),
    [
        (hf_causal.WINDOW_NODES, [[0, 1, 2, 3, 4]]),
        (16, [[0, 1, 2, 3, 4]]),
        (16, [[0, 1, 3], [2, 4]]),  # c's context was computed in the first call
    ],
    ids=["one-window", "many-windows", "two-calls"],
)
def test_shared_prefixes_score_as_separate_sequences(
    models: dict[str, Path], monkeypatch: pytest.MonkeyPatch, window_nodes: int, calls: list[list[int]]
) -> None:
    """A call's token tree (in one forward pass, or in windows of 16 nodes that read their ancestors' keys and
    values from earlier windows and from the previous call's tree) gives each option the log-likelihood of its
    own unpadded sequence, as the plain path (every option its own sequence) does, and computes each shared
    prefix once."""
    monkeypatch.setattr(hf_causal, "WINDOW_NODES", window_nodes)
    shared = HFCausalBackend(HFCausalSettings(str(models["plain"])))
    separate = HFCausalBackend(HFCausalSettings(str(models["plain"]), share_prefixes=False))
    forwards: list[int] = []
    shared.model.register_forward_pre_hook(
        lambda _model, _args, kwargs: forwards.append(kwargs["input_ids"].shape[1]), with_kwargs=True
    )
    items = overlapping_queries()
    replies = {}
    for call in calls:
        replies.update(zip(call, shared.answer([items[index] for index in call]), strict=True))
    alone = separate.answer(items)
    tokenizer = AutoTokenizer.from_pretrained(models["plain"])
    for index, (other, item) in enumerate(zip(alone, items, strict=True)):
        prompt_ids = tokenizer(item.prompt).input_ids
        expected = {
            option.label: reference_loglikelihood(
                models["plain"], prompt_ids, tokenizer(" " + option.text, add_special_tokens=False).input_ids
            )
            for option in item.options
        }
        assert replies[index].scores == pytest.approx(expected, abs=1e-4)
        assert other.scores == pytest.approx(expected, abs=1e-4)
        assert (replies[index].label, replies[index].raw) == (other.label, other.raw)
    assert replies[0] == replies[3]  # the repeated prompt
    tree = TokenTree()
    for item in items:  # the distinct tokens: prompts and options without their last token
        for option in item.options:
            option_ids = tokenizer(" " + option.text, add_special_tokens=False).input_ids
            tree.extend(-1, tokenizer(item.prompt).input_ids + option_ids[:-1])
    assert sum(forwards) == len(tree)  # each node computed once, however many windows and calls
    assert max(forwards) <= window_nodes


def test_gguf_file_loads_through_transformers(models: dict[str, Path]) -> None:
    """A GGUF of the chat model (float32, llama.cpp's layout) scores as the model's own folder does."""
    from_gguf = HFCausalBackend(HFCausalSettings(str(models["gguf"])))
    from_folder = HFCausalBackend(HFCausalSettings(str(models["gguf"].parent / "for-gguf")))
    assert from_gguf.prompt_format == "chat"
    for one, other in zip(from_gguf.answer(queries()), from_folder.answer(queries()), strict=True):
        assert one.scores == pytest.approx(other.scores, abs=1e-5)
        assert (one.label, one.raw) == (other.label, other.raw)
    identity = from_gguf.identity()
    assert (identity["model"], identity["gguf_sha256"]) == ("tiny-chat.gguf", file_sha256(models["gguf"]))
    with pytest.raises(UserError, match="no such GGUF file"):
        HFCausalBackend(HFCausalSettings(str(models["gguf"].parent / "absent.gguf")))


def converted_copy(gguf: Path, cache: Path) -> Path:
    """Where docs/backends.md says a converted GGUF is kept: <cache>/taxonomy-probe/gguf-converted/<sha256>."""
    return cache / "taxonomy-probe" / "gguf-converted" / file_sha256(gguf)


def test_a_gguf_is_converted_once_then_loads_from_the_cache_with_equal_scores(
    models: dict[str, Path], private_cache: Path
) -> None:
    converted = converted_copy(models["gguf"], private_cache)
    shutil.rmtree(converted, ignore_errors=True)
    converting = HFCausalBackend(HFCausalSettings(str(models["gguf"])))
    assert converting.model.config.name_or_path == str(models["gguf"].parent)
    assert (converted / "config.json").is_file() and not list(converted.parent.glob(".partial-*"))
    cached = HFCausalBackend(HFCausalSettings(str(models["gguf"])))
    assert cached.model.config.name_or_path == str(converted)
    assert cached.identity() == converting.identity()
    for one, other in zip(converting.answer(queries()), cached.answer(queries()), strict=True):
        assert (one.label, one.scores) == (other.label, other.scores)


def test_a_damaged_converted_copy_is_converted_again(models: dict[str, Path], private_cache: Path) -> None:
    reference = HFCausalBackend(HFCausalSettings(str(models["gguf"]))).answer(queries())
    converted = converted_copy(models["gguf"], private_cache)
    (converted / "model.safetensors").write_bytes(b"cut short")
    again = HFCausalBackend(HFCausalSettings(str(models["gguf"])))
    assert again.model.config.name_or_path == str(models["gguf"].parent)  # converted, not read from the copy
    assert [(reply.label, reply.scores) for reply in again.answer(queries())] == [
        (reply.label, reply.scores) for reply in reference
    ]
    assert (converted / "model.safetensors").stat().st_size > len(b"cut short")  # and kept again


def test_a_gguf_over_the_size_cap_is_converted_but_not_kept(
    models: dict[str, Path], private_cache: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gguf_cache, "MAX_CACHED_BYTES", 1000)  # the tiny model's weights are larger
    converted = converted_copy(models["gguf"], private_cache)
    shutil.rmtree(converted, ignore_errors=True)
    assert HFCausalBackend(HFCausalSettings(str(models["gguf"]))).prompt_format == "chat"
    assert not converted.exists()


def test_device_and_dtype_resolve_and_join_the_identity(models: dict[str, Path]) -> None:
    auto = resolve_placement(None, None)
    assert auto == (Placement("cuda", "bfloat16") if torch.cuda.is_available() else auto)
    assert resolve_placement("cpu", None) == Placement("cpu", "float32")
    assert resolve_placement("cpu", "float16") == Placement("cpu", "float16")
    with pytest.raises(UserError, match="--device 'tpu': choose from cpu, cuda, mps"):
        resolve_placement("tpu", None)
    with pytest.raises(UserError, match="--dtype 'int4': choose from float32, bfloat16, float16"):
        resolve_placement(None, "int4")
    if not torch.cuda.is_available():
        with pytest.raises(UserError, match="--device cuda: no cuda device is available"):
            resolve_placement("cuda", None)
    half = HFCausalBackend(HFCausalSettings(str(models["plain"]), placement=Placement("cpu", "bfloat16")))
    full = HFCausalBackend(HFCausalSettings(str(models["plain"]), placement=Placement("cpu", "float32")))
    assert half.model.dtype == torch.bfloat16
    assert (half.identity()["device"], half.identity()["dtype"]) == ("cpu", "bfloat16")
    assert full.identity()["dtype"] == "float32"
    for one, other in zip(half.answer(queries()), full.answer(queries()), strict=True):
        assert one.scores == pytest.approx(other.scores, abs=0.1)  # bfloat16 keeps ~3 significant digits


def test_cli_run_records_device_and_dtype(models: dict[str, Path], db_file: Path) -> None:
    args = [
        "run",
        "--backend",
        "hf-causal",
        "--model",
        str(models["chat"]),
        "--device",
        "cpu",
        "--dtype",
        "bfloat16",
        "--pairs",
        "1",
        "--occupations",
        "nurse",
        "--top-k",
        "1",
        "--conditions",
        "control",
        "--run-id",
        "half",
        "--db",
        str(db_file),
        "--quiet",
    ]
    result = CliRunner().invoke(app, args)
    assert (result.exit_code, result.stdout.splitlines()[0]) == (0, "half"), result.output
    run = query(db_file, "SELECT config_json, backend_json FROM runs WHERE run_id = 'half'").iloc[0]
    config, identity = json.loads(run["config_json"]), json.loads(run["backend_json"])
    assert (config["device"], config["dtype"]) == ("cpu", "bfloat16")
    assert (identity["device"], identity["dtype"]) == ("cpu", "bfloat16")
    answers = query(db_file, "SELECT count(*) AS n, count(scores_json) AS scored FROM answers WHERE run_id = 'half'")
    assert answers.iloc[0].tolist() == [20, 20]  # 12 stage-1 items (3 attributes) and 8 stage-2 ones, all scored


def test_the_run_card_of_a_local_folder_names_its_weights(
    models: dict[str, Path], db_file: Path, tmp_path: Path
) -> None:
    """A folder has no hub revision: the report's run card shows each weight file's sha256 instead."""
    args = [
        "run",
        "--backend",
        "hf-causal",
        "--model",
        str(models["plain"]),
        "--pairs",
        "1",
        "--occupations",
        "nurse",
        "--top-k",
        "1",
        "--conditions",
        "control",
        "--run-id",
        "folder",
        "--db",
        str(db_file),
        "--quiet",
    ]
    assert CliRunner().invoke(app, args).exit_code == 0
    report = tmp_path / "report.html"
    assert CliRunner().invoke(app, ["report", "folder", "--db", str(db_file), "-o", str(report)]).exit_code == 0
    weights = sorted(models["plain"].glob("*.safetensors"))
    expected = ", ".join(f"{hashlib.sha256(path.read_bytes()).hexdigest()} ({path.name})" for path in weights)
    assert len(weights) == 1
    assert json.loads(report.with_suffix(".json").read_text())["run"]["model_identity"] == expected
    assert expected in report.read_text()


def test_a_stop_signal_ends_scoring_within_one_forward_pass(
    models: dict[str, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    """SIGTERM on a local model: the batch in flight stops before its next forward pass (each about a second for
    SmolLM2), not when the whole batch is scored; the runner then marks the run interrupted."""
    from probe.common import stopping
    from probe.common.errors import RunInterrupted

    backend = HFCausalBackend(HFCausalSettings(str(models["chat"])))
    many = [Query(str(n), "binary", f"{PROMPTS['binary']} ({n})" * 8, "", "", YES_NO, {}) for n in range(40)]
    passes: list[int] = []
    backend.model.register_forward_pre_hook(lambda *_: passes.append(1))
    backend.answer(many)
    assert len(passes) > 1  # the batch's tree needs several windows of WINDOW_NODES nodes
    passes.clear()
    monkeypatch.setattr(stopping, "_requested", [15])  # SIGTERM came while the batch was scored
    with pytest.raises(RunInterrupted):
        backend.answer(many)
    assert passes == []  # checked before every forward pass: none started after the signal
