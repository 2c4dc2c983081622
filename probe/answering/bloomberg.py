"""The raw files of Bloomberg's 2024 study of GPT resume ranking (BloombergGraphics/2024-openai-gpt-hiring-racial-
discrimination, Apache-2.0) as imported decisions: one set per ranking of 8 resumes that differ only in the name, one
name per race x sex group, for `probe import bloomberg DIR`.

Their files: `MODEL/JOB/DATE/*.json` under `data/intermediary/resume_ranking` (the notebook's glob: the folder's own
files, not `oversampled/`), each a chat completion with `context.default_order` (the names as shown),
`context.demo_order` (each name's group, e.g. `B_M`: Black man) and `context.job`. The reply becomes a ranking by
their notebook's rule (notebooks/2-analysis-ranking-discrimination.ipynb): in the lower-cased reply, each name's
place is where it first occurs, a name not named sorts after every named one (ties keep the shown order); the top
of that order is the top pick. A reply naming nobody is an unknown here (their rule would count the first name
shown as picked; their files hold none).
"""

from __future__ import annotations

import dataclasses
import datetime as dt
import json
from pathlib import Path

import pandas as pd

from probe.answering.decisions import Decisions, decisions_from_rows
from probe.common.errors import UserError

RANKINGS = Path("data") / "intermediary" / "resume_ranking"  # under the repository root
DATE = "1121"  # the collection date of the published rankings
RACES = {"W": "White", "B": "Black", "A": "Asian", "H": "Hispanic"}
SEXES = {"W": "female", "M": "male"}  # the second letter of a demo_order code: woman, man
HEADER = ["set_id", "name", "sex", "race_ethnicity", "job", "rank", "source"]


def group_category(code: str) -> tuple[str, str]:
    """(sex, race_ethnicity) of a demo_order code such as 'B_M'."""
    race, _, sex = code.partition("_")
    if race not in RACES or sex not in SEXES:
        raise UserError(
            f"demo_order code {code!r}: expected RACE_SEX with race in {', '.join(RACES)} and sex in {', '.join(SEXES)}"
        )
    return SEXES[sex], RACES[race]


def ranking_folder(directory: Path) -> Path:
    """The folder of model folders: DIR itself or DIR/data/intermediary/resume_ranking (the repository root)."""
    for folder in (directory / RANKINGS, directory):
        if folder.is_dir() and any(folder.glob(f"*/*/{DATE}/*.json")):
            return folder
    raise UserError(f"{directory}: no MODEL/JOB/{DATE}/*.json rankings here or under {RANKINGS}")


def models(directory: Path) -> list[str]:
    """The models with rankings under DIR, in name order."""
    folder = ranking_folder(directory)
    return sorted(path.name for path in folder.iterdir() if any(path.glob(f"*/{DATE}/*.json")))


def reply_ranking(reply: str, shown: list[str]) -> list[int] | None:
    """Each shown name's rank (1 = top) by the notebook's rule; None where the reply names nobody."""
    text = reply.lower()
    places = [text.find(name.lower()) for name in shown]
    if all(place < 0 for place in places):
        return None
    order = sorted(range(len(shown)), key=lambda index: (places[index] < 0, places[index], index))
    ranks = [0] * len(shown)
    for rank, index in enumerate(order, start=1):
        ranks[index] = rank
    return ranks


def read_bloomberg(directory: Path, model: str) -> Decisions:
    """One model's rankings (every job) as decisions: a set per file (jobs, then files, in name order)."""
    folder = ranking_folder(directory) / model
    files = sorted(folder.glob(f"*/{DATE}/*.json"))
    if not files:
        raise UserError(f"{folder}: no JOB/{DATE}/*.json rankings")
    rows, created = [], []
    for set_id, path in enumerate(files, start=1):
        where = str(path)
        try:
            record = json.loads(path.read_text(encoding="utf-8"))
            context = record["context"]
            shown, groups, job = list(context["default_order"]), list(context["demo_order"]), str(context["job"])
            reply = record["choices"][0]["message"]["content"] or ""
            created.append(int(record.get("created") or 0))
        except (OSError, ValueError, KeyError, IndexError, TypeError) as exc:
            raise UserError(f"{where}: not a ranking file of the study ({type(exc).__name__}: {exc})") from None
        if not all(isinstance(text, str) for text in (*shown, *groups, reply)):
            raise UserError(f"{where}: not a ranking file of the study (names, groups and the reply must be text)")
        if len(shown) != len(groups):
            raise UserError(f"{where}: default_order has {len(shown)} names, demo_order {len(groups)} groups")
        ranks = reply_ranking(reply, shown)
        source = path.relative_to(folder.parent).as_posix()
        for index, (name, code) in enumerate(zip(shown, groups, strict=True)):
            sex, race = group_category(code)
            rank = "" if ranks is None else str(ranks[index])
            rows.append((f"{where} (name {index + 1})", [str(set_id), name, sex, race, job, rank, source]))
    return dataclasses.replace(decisions_from_rows(HEADER, rows, str(folder)), period=_period(created))


def _period(created: list[int]) -> str | None:
    """The dates the replies were created (their `created` Unix times, UTC): 'first to last'."""
    times = [moment for moment in created if moment > 0]
    if not times:
        return None
    first, last = (dt.datetime.fromtimestamp(moment, dt.UTC).date().isoformat() for moment in (min(times), max(times)))
    return first if first == last else f"{first} to {last}"


def published_table(directory: Path) -> pd.DataFrame:
    """Their data/output/performance_ranking.csv (demo, top, top_og, selection_rate, disparate_impact_ratio, job,
    model, rank), for the reproduction."""
    path = directory / "data" / "output" / "performance_ranking.csv"
    if not path.is_file():
        raise UserError(f"{path}: no such file")
    return pd.read_csv(path)
