"""A run's spec in three parts, each the settings of one concern (HELM's RunSpec: scenario + adapter + metrics):

- `Design`: what is asked (occupations, names, wordings, questions, conditions, pairs or sets): the dataset's part;
- `BackendSpec`: who answers and how (kind, model, device, dtype, endpoints, decoding, request limits): the
  backend's part;
- `RunOptions`: where and how the run proceeds (database, run id, study, failure limit, cache, output).

Each step receives only its part (tests/store/test_spec_parts.py). RUN.toml keys, study overrides, API keywords and
the stored config_json stay flat: `SETTINGS` lists those keys and `PART` says which part holds each. Settings are
parsed and checked in config.py; here they are typed values.
"""

from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from functools import cached_property
from pathlib import Path

from probe.common.redact import safe_url
from probe.common.staging import read_header
from probe.common.vocabulary import CONDITIONS, PAPER_WORDING
from probe.store.db import DEFAULT_DB

# The columns that make a names CSV a file of name sets (set_id, name, one column per attribute) rather than of
# name pairs (female, male); taxonomy/name_sets.py reads such a file.
SET_COLUMNS = ("set_id", "name")


@dataclass(frozen=True)
class Names:
    """A user's names CSV (`--names`): name pairs (columns female, male) or name sets (set_id, name, ...).

    Its header is read once, when a step first asks which it is; a path that cannot be read says so there."""

    path: Path

    @cached_property
    def sets(self) -> bool:
        """True for a file of name sets, False for name pairs."""
        return set(SET_COLUMNS) <= set(read_header(self.path, ",", str(self.path)))

    def __str__(self) -> str:
        return str(self.path)


@dataclass(frozen=True)
class Design:
    """What a run asks: the dataset builder's and the taxonomy's part."""

    pairs: int | tuple[int, ...] | None = None  # first N name pairs (or sets), or these ids; None = all
    occupations: tuple[str, ...] | str | None = None  # names, or a CSV file path; None = the paper's 62
    names: Names | None = None  # a CSV of name pairs or name sets instead of the shipped 70 pairs
    top_k: int = 5
    conditions: tuple[str, ...] = CONDITIONS
    wordings: tuple[str, ...] = (PAPER_WORDING,)  # paraphrases asked (prompts/wordings/), in the family's order
    questions: tuple[str, ...] | None = None  # stage 2 (QUESTION_DESIGNS); None: the pair questions alone


@dataclass(frozen=True)
class BackendSpec:
    """Who answers and how: the backend's part (probe/backends: each backend's `settings_from` reads it)."""

    kind: str = "hf-causal"  # the bundled SmolLM2 GGUF, dequantized: the faster exact engine on a CPU
    model: str | None = None
    base_url: str | None = None  # one URL or URL1,URL2,... (one run, many servers)
    api_mode: str = "auto"  # chat | completions | auto (completions for gpt-3.5-turbo-instruct & co)
    constrain: str = "auto"  # grammar | json_schema | none | auto (llamacpp: grammar, openai: none)
    max_tokens: int = 16
    decoding: str = "score"  # local models: score (option log-likelihood) | generate (greedy + parse)
    # parallel requests / llama.cpp slots; None = sized to the machine (here, not in RunOptions: only a backend
    # reads it, and lm-eval and inspect_ai keep it in the model's arguments too)
    concurrency: int | None = None
    threads: int | None = None  # llama.cpp / torch CPU threads; None = the cores idle at start
    batch_size: int | None = None  # hf backends: queries per forward pass; None = backend default
    device: str | None = None  # hf backends: cpu | cuda | mps; None = a GPU when there is one
    dtype: str | None = None  # hf backends: float32 | bfloat16 | float16; None = bfloat16 on cuda, else float32
    timeout: float = 30.0  # seconds per request, the whole of it (a trickling reply cannot outlast it)
    max_retries: int = 5
    backoff: float = 1.0  # seconds before the first retry (doubling); a server's Retry-After overrides it
    answers: str | None = None  # replay: CSV or Parquet of labels
    system_prompt: str | None = None  # the text (--system-prompt TEXT or FILE, read when given): model + mitigation


@dataclass(frozen=True)
class RunOptions:
    """Where and how a run proceeds; none of it changes an answer except through the design and the backend."""

    preset: str | None = None  # the preset the design's defaults came from (quick, paper)
    run_id: str | None = None
    study: str | None = None  # the study the run belongs to: one design, one run per model (probe/store/study.py)
    db: str = str(DEFAULT_DB)
    max_failed_share: float = 0.1  # more failed answers than this share: the run ends failed, not complete
    no_cache: bool = False
    quiet: bool = False


# The flat settings (RUN.toml keys, API keywords, config_json), in the stored record's order; the CLI flag is the
# key with dashes (top_k -> --top-k).
SETTINGS = (
    "preset",
    "pairs",
    "occupations",
    "names",
    "top_k",
    "conditions",
    "wordings",
    "questions",
    "backend",
    "model",
    "base_url",
    "api_mode",
    "constrain",
    "max_tokens",
    "decoding",
    "concurrency",
    "threads",
    "batch_size",
    "device",
    "dtype",
    "timeout",
    "max_retries",
    "backoff",
    "max_failed_share",
    "answers",
    "system_prompt",
    "run_id",
    "study",
    "db",
    "no_cache",
    "quiet",
)
PARTS = {"design": Design, "backend": BackendSpec, "options": RunOptions}
_RENAMED = {"backend": "kind"}  # flat key -> its part's field, where the part's own name would repeat the part's
# flat key -> (part, field in it)
PART = {
    key: next(
        (part, _RENAMED.get(key, key))
        for part, kind in PARTS.items()
        if _RENAMED.get(key, key) in {f.name for f in dataclasses.fields(kind)}
    )
    for key in SETTINGS
}
# Settings that may differ when a run is resumed: they change how a run proceeds, not its answers.
OPERATIONAL_FIELDS = frozenset(
    {
        "preset",
        "run_id",
        "db",
        "no_cache",
        "quiet",
        "concurrency",
        "threads",
        "batch_size",
        "timeout",
        "max_retries",
        "backoff",
        "max_failed_share",
        "study",
    }
)


@dataclass(frozen=True)
class RunSpec:
    """A run's settings: its design, its backend and its options."""

    design: Design = field(default_factory=Design)
    backend: BackendSpec = field(default_factory=BackendSpec)
    options: RunOptions = field(default_factory=RunOptions)

    def replaced(self, **settings: object) -> RunSpec:
        """This spec with some flat settings (already parsed) changed: a study's variant, a resumed run's id."""
        changed: dict[str, dict[str, object]] = {part: {} for part in PARTS}
        for key, value in settings.items():
            part, name = PART[key]
            changed[part][name] = Names(Path(value)) if key == "names" and isinstance(value, str | Path) else value
        return RunSpec(**{part: dataclasses.replace(getattr(self, part), **changed[part]) for part in PARTS})

    def flat(self) -> dict[str, object]:
        """The flat settings, keyed as in RUN.toml, in SETTINGS' order (names as its path)."""
        values = {key: getattr(getattr(self, part), name) for key, (part, name) in PART.items()}
        return {**values, "names": None if self.design.names is None else str(self.design.names)}

    def settings(self) -> dict[str, object]:
        """JSON-ready settings (config_json of the run record); credentials and query values in --base-url masked."""
        values = json.loads(json.dumps(self.flat()))
        base_url = self.backend.base_url
        urls = base_url.split(",") if base_url else None
        return {**values, "base_url": ",".join(safe_url(url) for url in urls) if urls else base_url}


def RunConfig(**settings: object) -> RunSpec:
    """A spec from flat settings (RUN.toml keys, already typed; names may be a path): the API's and tests' form."""
    return RunSpec().replaced(**settings)
