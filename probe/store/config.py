"""Run settings read and checked: a preset, then a stored run, then a RUN.toml, then command-line flags, parsed
once into a `RunSpec` (spec.py: design, backend, options).

RUN.toml keys are spec.SETTINGS (the CLI flag is the key with dashes: top_k -> --top-k). To add a setting, add a
field to its part in spec.py and its key to SETTINGS; its type annotation picks the parser (int, float, bool, str
and their `| None` forms need nothing else); add it to OPERATIONAL_FIELDS if changing it cannot change answers,
so a resumed run may use another value.
"""

from __future__ import annotations

import dataclasses
import os
import re
import urllib.parse
from collections.abc import Callable, Mapping
from functools import partial
from pathlib import Path

from probe.common.errors import UserError
from probe.common.toml_file import read_toml_file
from probe.common.vocabulary import CONDITIONS, PAIR_QUESTIONS, PAPER_WORDING, QUESTION_DESIGNS, WORDINGS
from probe.store.spec import PART, PARTS, SETTINGS, Names, RunSpec
from probe.store.spec import RunConfig as RunConfig  # the flat form, where tests and the API import it

# quick is the README's demo on the bundled SmolLM2-135M in under 5 minutes on a 2-core CPU (BENCHMARKS.md).
# 12 name pairs: the score intervals over pairs cover 0.93-0.98 at this size when a real run's pairs are
# resampled, except switch_m2f (0.86: one real pair carries it); 6 pairs could not hold for any method tried
# (worst metric 0.84-0.89, BENCHMARKS.md "Statistics"), and a sign test
# over 12 leaning pairs reaches p = 2 / 4096, below Benjamini-Hochberg's 0.05 / 8 for a lone occupation.
# 8 occupations, 4 held by more women and 4 by more men in the US. Items: stage 1 = 12 x 2 x 2 x 18 attributes
# (top-1 per category, union) = 864; stage 2 = 12 x 2 x 8 x 4 = 768.
QUICK_OCCUPATIONS = ("nurse", "secretary", "dancer", "babysitter", "pilot", "firefighter", "mechanic", "plumber")
PRESETS: dict[str, dict[str, object]] = {
    "quick": {
        "pairs": 12,
        "occupations": QUICK_OCCUPATIONS,
        "top_k": 1,
        "conditions": ("taxonomy",),
        "wordings": (PAPER_WORDING,),
    },
    "paper": {"pairs": 70, "occupations": None, "top_k": 5, "conditions": CONDITIONS, "wordings": (PAPER_WORDING,)},
}


def _split(text: str) -> list[str]:
    return [part.strip() for part in text.split(",") if part.strip()]


def _parse_pairs(value: object) -> int | tuple[int, ...] | None:
    if value is None:
        return None
    if isinstance(value, bool):
        raise ValueError("expected a number of pairs or a list of pair ids")
    if isinstance(value, int):
        numbers: list[int] = [value]
        single = True
    elif isinstance(value, str):
        parts = _split(value)
        single = len(parts) == 1 and "," not in value
        try:
            numbers = [int(part) for part in parts]
        except ValueError:
            raise ValueError(f"{value!r} is not a number or a comma list of pair ids") from None
    elif isinstance(value, list | tuple) and all(isinstance(v, int) and not isinstance(v, bool) for v in value):
        numbers, single = list(value), False
    else:
        raise ValueError("expected a number of pairs or a list of pair ids")
    if not numbers or min(numbers) < 1:
        raise ValueError("pair counts and pair ids start at 1")
    return numbers[0] if single else tuple(numbers)


def _parse_occupations(value: object, base_dir: Path | None = None) -> tuple[str, ...] | str | None:
    if value is None:
        return None
    if isinstance(value, list | tuple) and all(isinstance(v, str) for v in value):
        return tuple(v.strip() for v in value)
    if not isinstance(value, str):
        raise ValueError("expected occupation names (a list or a comma list) or a CSV file")
    if value.lower().endswith(".csv"):
        path = Path(value)
        return str(base_dir / path if base_dir and not path.is_absolute() else path)
    return tuple(_split(value))


def _known_names(value: object, known: tuple[str, ...], noun: str, expected: str) -> list[str]:
    """The names of a list (or comma list), each one of `known`: a ValueError saying what was `expected` (a list
    of ids, ...) or naming the first unknown one."""
    names = _split(value) if isinstance(value, str) else value
    if not isinstance(names, list | tuple) or not names or not all(isinstance(n, str) for n in names):
        raise ValueError(f"expected {expected} from {', '.join(known)}")
    unknown = [name for name in names if name not in known]
    if unknown:
        raise ValueError(f"unknown {noun} {unknown[0]!r} (choose from {', '.join(known)})")
    return list(names)


def _parse_choices(value: object, known: tuple[str, ...], noun: str, default: object = None) -> tuple[str, ...] | None:
    """A list (or comma list) of `known` ids (conditions, questions); None for None or the `default` choice (the
    pair questions alone: so a run started before --questions existed resumes)."""
    if value is None:
        return None
    names = _known_names(value, known, noun, f"a list of {noun}s")
    chosen = tuple(name for name in known if name in names)  # canonical order, no repeats
    return None if chosen == default else chosen


def _parse_wordings(value: object) -> tuple[str, ...]:
    """`all`, a count N (the first N of the family, the paper's first) or ids; kept in the family's order."""
    if isinstance(value, str) and value.strip().lower() == "all":
        return WORDINGS
    if isinstance(value, str) and value.strip().isdigit():
        value = int(value)
    if isinstance(value, int) and not isinstance(value, bool):
        count = value
        if not 1 <= count <= len(WORDINGS):
            raise ValueError(f"expected 1 to {len(WORDINGS)} wordings, got {count}")
        return WORDINGS[:count]
    names = _known_names(value, WORDINGS, "wording", "all, a count or ids")
    repeated = next((name for index, name in enumerate(names) if name in names[:index]), None)
    if repeated is not None:  # "paper,paper" is more likely a slip for another id than a wish for one wording
        raise ValueError(f"wording {repeated!r} is listed twice")
    return tuple(name for name in WORDINGS if name in names)


def _parse_top_k(value: object) -> int:
    number = _parse_simple("int", value)
    if number < 1:
        raise ValueError("must be at least 1")
    return number


RUN_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}")
MAX_RETRIES_LIMIT = 20
MAX_CONCURRENCY = 1024  # requests in flight per endpoint; more would exhaust sockets and memory, not speed a run up
MAX_SECONDS = 3600.0


def _parse_run_id(value: object) -> str | None:
    """A run id names a folder (runs/<id>/report.html): no path separators, no leading dot, 64 at most."""
    if value is None:
        return None
    if not isinstance(value, str) or not RUN_ID.fullmatch(value):
        raise ValueError(
            f"{value!r} is not a run id: letters, digits, '.', '_', '-', starting with a letter or digit, at most 64"
        )
    return value


def _parse_seconds(value: object) -> float:
    seconds = _parse_simple("float", value)
    if not 0 < seconds <= MAX_SECONDS:  # also refuses nan and inf
        raise ValueError(f"expected seconds above 0 and at most {MAX_SECONDS:g}, got {value!r}")
    return seconds


def _parse_max_retries(value: object) -> int:
    number = _parse_simple("int", value)
    if not 0 <= number <= MAX_RETRIES_LIMIT:
        raise ValueError(f"expected 0 to {MAX_RETRIES_LIMIT}, got {value!r}")
    return number


def _parse_concurrency(value: object) -> int | None:
    number = _parse_simple("int | None", value)
    if number is not None and not 1 <= number <= MAX_CONCURRENCY:
        raise ValueError(f"expected 1 to {MAX_CONCURRENCY}, got {value!r}")
    return number


def _parse_threads(value: object) -> int | None:
    number = _parse_simple("int | None", value)
    if number is not None and number < 1:  # torch refuses 0 and below with a traceback
        raise ValueError(f"expected a number of CPU threads from 1 up, got {value!r}")
    return number


def _parse_share(value: object) -> float:
    share = _parse_simple("float", value)
    if not 0 <= share <= 1:  # also refuses nan
        raise ValueError(f"expected a share from 0 to 1 (0.1 = 10%), got {value!r}")
    return share


def _parse_preset(value: object) -> str | None:
    if value is not None and value not in PRESETS:
        raise ValueError(f"unknown preset {value!r} (choose from {', '.join(PRESETS)})")
    return value


def _parse_simple(annotation: str, value: object):
    """Parse by the field's annotation; strings from the command line are converted."""
    optional = annotation.endswith("| None")
    kind = annotation.removesuffix("| None").strip()
    if value is None and optional:
        return None
    if kind == "str" and isinstance(value, str):
        return value
    if kind == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.lower() in {"true", "false"}:
            return value.lower() == "true"
    if kind == "int" and not isinstance(value, bool):
        if isinstance(value, int):
            return value
        if isinstance(value, str) and value.strip().lstrip("-").isdigit():
            return int(value)
    if kind == "float" and not isinstance(value, bool):
        if isinstance(value, int | float):
            return float(value)
        if isinstance(value, str):
            try:
                return float(value)
            except ValueError:
                pass
    raise ValueError(f"expected {kind}, got {value!r}")


def _parse_base_url(value: object) -> str | None:
    """Each comma-separated URL must parse; the message counts, never echoes, a URL (it may carry a key)."""
    text = _parse_simple("str | None", value)
    urls = text.split(",") if text else []
    for number, url in enumerate(urls, start=1):
        try:
            urllib.parse.urlsplit(url)
        except ValueError:  # its message may quote the URL's host and key
            raise ValueError(f"URL {number} of {len(urls)} is not a valid URL") from None
    return text


_SPECIAL_PARSERS: dict[str, Callable[[object], object]] = {
    "base_url": _parse_base_url,
    "preset": _parse_preset,
    "pairs": _parse_pairs,
    "conditions": partial(_parse_choices, known=CONDITIONS, noun="condition"),
    "wordings": _parse_wordings,
    "questions": partial(_parse_choices, known=QUESTION_DESIGNS, noun="question", default=(PAIR_QUESTIONS,)),
    "top_k": _parse_top_k,
    "run_id": _parse_run_id,
    "study": _parse_run_id,
    "timeout": _parse_seconds,
    "backoff": _parse_seconds,
    "max_retries": _parse_max_retries,
    "concurrency": _parse_concurrency,
    "threads": _parse_threads,
    "max_failed_share": _parse_share,
}
# flat key -> its field's type annotation (the simple parser's guide)
_TYPES = {
    key: next(str(f.type) for f in dataclasses.fields(PARTS[part]) if f.name == name)
    for key, (part, name) in PART.items()
}


def _parse_names(value: object, base_dir: Path | None = None) -> Names | None:
    """The names CSV as a typed value: name pairs or name sets (its header is read when a step first asks)."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError("expected the path of a CSV file with columns female, male")
    path = Path(value)
    return Names(base_dir / path if base_dir and not path.is_absolute() else path)


SYSTEM_PROMPT_FILES = (".txt", ".md")


def _parse_system_prompt(value: object, base_dir: Path | None = None) -> str | None:
    """TEXT, or the text of FILE (a path that exists, or a name without spaces ending .txt/.md): the run stores
    the text itself, so a resumed run reads its stored text as text."""
    if value is None:
        return None
    if not isinstance(value, str) or not value.strip():
        raise ValueError("expected the system prompt's text or a text file")
    path = Path(value).expanduser()
    path = base_dir / path if base_dir and not path.is_absolute() else path
    looks_like_a_file_name = not any(character.isspace() for character in value.strip())
    if path.is_file() or (looks_like_a_file_name and path.suffix.lower() in SYSTEM_PROMPT_FILES):
        try:
            text = path.read_text(encoding="utf-8").strip()
        except (OSError, UnicodeDecodeError) as error:
            raise ValueError(f"{path}: cannot read it as UTF-8 text ({type(error).__name__})") from None
        if not text:
            raise ValueError(f"{path}: the file is empty")
        return text
    return value.strip()


def _parse_value(name: str, value: object, base_dir: Path | None) -> object:
    if name == "system_prompt":
        return _parse_system_prompt(value, base_dir)
    if name == "occupations":
        return _parse_occupations(value, base_dir)
    if name == "names":
        return _parse_names(value, base_dir)
    if name in _SPECIAL_PARSERS:
        return _SPECIAL_PARSERS[name](value)
    return _parse_simple(_TYPES[name], value)


def _parse_settings(raw: Mapping[str, object], describe: Callable[[str], str], base_dir: Path | None = None):
    parsed = {}
    for name, value in raw.items():
        if name not in PART:
            raise UserError(f"{describe(name)}: unknown setting (known: {', '.join(SETTINGS)})")
        if isinstance(value, os.PathLike):  # the API: db=Path(...), answers=Path(...)
            value = os.fspath(value)
        try:
            parsed[name] = _parse_value(name, value, base_dir)
        except ValueError as exc:
            raise UserError(f"{describe(name)}: {exc}") from None
    return parsed


def read_toml(path: Path) -> dict[str, object]:
    """Settings from a RUN.toml file (keys = spec.SETTINGS; the [study] table: read_study; its [[gates]] and
    gate_family: `probe gate --policy RUN.toml`, probe/gates/policy.py)."""
    raw = {key: value for key, value in read_toml_file(path).items() if key not in ("study", "gates", "gate_family")}
    return _parse_settings(raw, lambda key: f"{path}: {key}", base_dir=path.parent)


def read_study(path: Path) -> tuple[str | None, list[tuple[str | None, dict[str, object]]]]:
    """RUN.toml's [study]: its id (or None) and, per [[study.models]] entry, its name (or None) and the settings
    it overrides (spec.SETTINGS keys, e.g. backend, model, system_prompt)."""
    study = read_toml_file(path).get("study")
    if study is None:
        return None, []
    if not isinstance(study, dict) or set(study) - {"id", "models"}:
        raise UserError(f"{path}: [study] takes `id` and [[study.models]] tables")
    models = study.get("models", [])
    if not isinstance(models, list) or not all(isinstance(model, dict) for model in models):
        raise UserError(f"{path}: study.models: expected [[study.models]] tables")
    variants = []
    for index, model in enumerate(models, start=1):
        settings = {key: value for key, value in model.items() if key != "name"}
        where = f"{path}: study.models[{index}]"
        name = model.get("name")
        if name is not None and not isinstance(name, str):
            raise UserError(f"{where}.name: expected text")
        variants.append((name, _parse_settings(settings, lambda key, w=where: f"{w}.{key}", base_dir=path.parent)))
    try:
        study_id = _parse_run_id(study.get("id"))
    except ValueError as exc:
        raise UserError(f"{path}: study.id: {exc}") from None
    return study_id, variants


def load_config(
    cli: Mapping[str, object], config_file: Path | None = None, stored: Mapping[str, object] | None = None
) -> RunSpec:
    """Preset < stored run < RUN.toml < flags. `cli` maps field names to flag values; None = not given.

    `stored`: the resumed run's settings (probe.answering.runs.stored_settings), so `--run-id` alone is enough.
    """
    given = _parse_settings(
        {name: value for name, value in cli.items() if value is not None}, lambda name: "--" + name.replace("_", "-")
    )
    from_file = read_toml(config_file) if config_file else {}
    known = {name: value for name, value in (stored or {}).items() if name in PART}  # older records
    resumed = _parse_settings(known, lambda name: f"the stored run's {name}")
    preset = given.get("preset", from_file.get("preset", resumed.get("preset")))
    values = {**PRESETS.get(preset, {}), **resumed, **from_file, **given}
    return RunSpec().replaced(**values)
