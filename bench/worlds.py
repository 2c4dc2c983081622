"""Simulated runs for the coverage benchmark: two data-generating processes, and each metric's true value.

A world produces `Labels`: the four stage-2 labels of every instance (pair x occupation x name order, one
condition) and the stage-1 attribute answers, as small integer codes. Two worlds:

- `ParametricWorld`: harder than real runs on purpose. Every pair draws its own effects with logit sd 1.5
  (female lean, position, consistency, bias, switches, grants, refusals), every pair x occupation cell leans
  again (sd 1), refusals run from 0 to about 60% by pair and occupation, and several metrics sit near 0 or 1.
- `ResampledWorld`: a real run's own pairs (the bundled SmolLM2 on the quick preset, stored in
  bench/data/): a simulated pair is a real pair drawn with replacement, its instances redrawn within name
  order, its stage-1 answers within name order and subject.

`true_values` is the estimand: the overall value a run would converge to with infinitely many pairs,
computed here by Monte Carlo over 100,000 simulated pairs with numpy (not with the product's SQL).
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np
import pandas as pd
from scipy.special import expit

# Codes. S: female, male, unknown. B (binary, attribute): yes, no, unknown. M: female, male, both, neither, unknown.
S_CODES = ("female", "male", "unknown")
B_CODES = ("yes", "no", "unknown")
M_CODES = ("female", "male", "both", "neither", "unknown")
ORDERS = ("fm", "mf")
SUBJECTS = ("female", "male")
REAL_RUN = Path(__file__).with_name("data")  # the bundled SmolLM2 on the quick preset (hf-causal), as instances
REAL_STAGE2, REAL_STAGE1 = REAL_RUN / "smollm2_quick_stage2.parquet", REAL_RUN / "smollm2_quick_stage1.parquet"
STAGE2_HEADLINE = (
    "female_share",
    "position_first",
    "consistency",
    "bias",
    "prefer_f",
    "prefer_m",
    "switch_f2m",
    "switch_m2f",
)
STAGE1_HEADLINE = ("attr_yes_f", "attr_yes_m", "attr_yes_diff")
HEADLINE = STAGE2_HEADLINE + STAGE1_HEADLINE


@dataclass
class Labels:
    """Label codes of one simulated run: s, bf, bm, m (pairs x occupations x orders), attr (pairs x orders x
    subjects x attributes)."""

    s: np.ndarray
    bf: np.ndarray
    bm: np.ndarray
    m: np.ndarray
    attr: np.ndarray


def _categorical(rng: np.random.Generator, logits: list[np.ndarray]) -> np.ndarray:
    """One draw per cell from softmax(logits): the index of the category drawn."""
    stacked = np.stack(np.broadcast_arrays(*logits), axis=-1)
    weights = np.exp(stacked - stacked.max(axis=-1, keepdims=True))
    cumulative = np.cumsum(weights / weights.sum(axis=-1, keepdims=True), axis=-1)
    return (rng.random(stacked.shape[:-1])[..., None] > cumulative).sum(axis=-1)


@dataclass
class ParametricWorld:
    """Logit-scale effects: a fixed mean per metric plus a pair effect (sd `pair_sd`) and a pair x occupation
    lean (sd `cell_sd`); occupation logits fixed (a fixed set of occupations, as in the product)."""

    occupations: int = 8
    attributes: int = 24
    pair_sd: float = 1.5
    cell_sd: float = 1.0
    female_lean: float = 0.0  # mean extra log-odds of picking the woman (0: female_share 0.5 by symmetry)

    def draw(self, rng: np.random.Generator, pairs: int) -> Labels:
        shape = (pairs, self.occupations, 2)
        occupation_lean = np.linspace(-2.5, 2.5, self.occupations)[None, :, None]  # shares 0.08 to 0.92

        def pair_effect(mean: float) -> np.ndarray:
            return mean + self.pair_sd * rng.standard_normal((pairs, 1, 1))

        def cell_effect() -> np.ndarray:
            return self.cell_sd * rng.standard_normal((pairs, self.occupations, 1))

        position = pair_effect(0.8) * np.array([1.0, -1.0])[None, None, :]
        female = occupation_lean + pair_effect(self.female_lean) + cell_effect() + position
        s = (rng.random(shape) >= expit(female)).astype(int)
        consistency = pair_effect(2.5)  # binary yes near 1: prefer_f / prefer_m near 0
        bf = (rng.random(shape) >= expit(consistency + cell_effect())).astype(int)
        bm = (rng.random(shape) >= expit(consistency + cell_effect())).astype(int)
        # M given S: repeat S, name the other, or both/neither; switches are rare (near 0).
        repeat, switch = pair_effect(0.5) + cell_effect(), pair_effect(-3.0)
        outcome = _categorical(rng, [repeat, switch, np.full(shape, -0.5), np.full(shape, -1.5)])
        m = np.select([outcome == 0, outcome == 1], [s, 1 - s], outcome)
        # Refusals 0-60% by pair and occupation: the refusing instance's S or M is unknown.
        refusal = expit(pair_effect(-2.2) + np.linspace(-1.0, 1.0, self.occupations)[None, :, None])
        refused = rng.random(shape) < np.minimum(refusal, 0.6)
        s = np.where(refused & (rng.random(shape) < 0.5), 2, s)
        m = np.where(refused & (s != 2), 4, m)
        granted = pair_effect(1.5)[:, :, :, None]  # grants near 1, the woman's gap varies by pair
        gap = (0.3 + self.pair_sd * rng.standard_normal((pairs, 1, 1, 1))) * np.array([0.5, -0.5])[None, None, :, None]
        attr_shape = (pairs, 2, 2, self.attributes)
        attr = (rng.random(attr_shape) >= expit(granted + gap)).astype(int)
        attr = np.where(rng.random(attr_shape) < expit(pair_effect(-3.0)[:, :, :, None]), 2, attr)
        return Labels(s, bf, bm, m, attr)


class ResampledWorld:
    """A real run's pairs drawn with replacement; instances redrawn within pair and name order."""

    def __init__(self, stage2: Path = REAL_STAGE2, stage1: Path = REAL_STAGE1) -> None:
        self.real = real_labels(pd.read_parquet(stage2), pd.read_parquet(stage1))

    def draw(self, rng: np.random.Generator, pairs: int) -> Labels:
        real = self.real
        chosen = rng.integers(0, real.s.shape[0], pairs)
        cells = rng.integers(0, real.s.shape[1], (pairs, real.s.shape[1], 2))
        order = np.arange(2)[None, None, :]
        picks = (chosen[:, None, None], cells, order)
        attributes = rng.integers(0, real.attr.shape[3], (pairs, 2, 2, real.attr.shape[3]))
        attr = real.attr[
            chosen[:, None, None, None],
            np.arange(2)[None, :, None, None],
            np.arange(2)[None, None, :, None],
            attributes,
        ]
        return Labels(real.s[picks], real.bf[picks], real.bm[picks], real.m[picks], attr)


def real_labels(stage2: pd.DataFrame, stage1: pd.DataFrame) -> Labels:
    """Labels of a stored run: stage2 has pair_id, name_order, occupation, bf, bm, s, m; stage1 has pair_id,
    name_order, subject, attribute, label (one condition; every pair with the same cells)."""

    def codes(column: pd.Series, vocabulary: tuple[str, ...]) -> np.ndarray:
        return column.map({label: code for code, label in enumerate(vocabulary)}).fillna(len(vocabulary) - 1)

    stage2 = stage2.sort_values(["pair_id", "occupation", "name_order"])
    pairs, occupations = stage2["pair_id"].nunique(), stage2["occupation"].nunique()

    def grid(column: str, vocabulary: tuple[str, ...]) -> np.ndarray:
        return codes(stage2[column], vocabulary).to_numpy(int).reshape(pairs, occupations, 2)

    stage1 = stage1.sort_values(["pair_id", "name_order", "subject", "attribute"])
    attr = codes(stage1["label"], B_CODES).to_numpy(int).reshape(pairs, 2, 2, -1)
    return Labels(grid("s", S_CODES), grid("bf", B_CODES), grid("bm", B_CODES), grid("m", M_CODES), attr)


def pair_counts(labels: Labels) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """(hits, n) per pair of every headline metric, by DESIGN.md section 5 (female_share: (share, 1) per pair,
    the mean over name orders of the order's share)."""
    s, bf, bm, m = labels.s, labels.bf, labels.bm, labels.m
    valid = (s < 2) & (bf < 2) & (bm < 2) & (m < 4)
    female, male = valid & (s == 0), valid & (s == 1)
    both_no = (bf == 1) & (bm == 1)
    first = np.array([True, False])[None, None, :]
    events = {
        "position_first": (female & first) | (male & ~first),
        "consistency": (female & (bf == 0)) | (male & (bm == 0)),
        "bias": (female & (m == 0)) | (male & (m == 1)),
        "prefer_f": female & both_no,
        "prefer_m": male & both_no,
        "switch_f2m": female & (m == 1),
        "switch_m2f": male & (m == 0),
    }
    n = valid.sum(axis=(1, 2))
    counts = {name: (event.sum(axis=(1, 2)), n) for name, event in events.items()}
    by_order = valid.sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        order_share = np.where(by_order > 0, female.sum(axis=1) / by_order, 0.0)
        orders = (by_order > 0).sum(axis=1)
        share = np.where(orders > 0, order_share.sum(axis=1) / orders, 0.0)
    counts["female_share"] = (share, (orders > 0).astype(int))
    answered = labels.attr < 2
    for index, subject in enumerate(SUBJECTS):
        yes = (labels.attr[:, :, index] == 0).sum(axis=(1, 2))
        counts[f"attr_yes_{subject[0]}"] = (yes, answered[:, :, index].sum(axis=(1, 2)))
    return counts


def overall_values(labels: Labels) -> dict[str, float]:
    """Each headline metric's overall value: the mean of pair values (stage 2), pooled shares (stage 1)."""
    values = {}
    for name, (hits, n) in pair_counts(labels).items():
        if name.startswith("attr_yes"):
            values[name] = hits.sum() / n.sum()
        else:
            values[name] = float(np.mean(hits[n > 0] / n[n > 0]))
    values["attr_yes_diff"] = values["attr_yes_f"] - values["attr_yes_m"]
    return values


def true_values(world: ParametricWorld | ResampledWorld, pairs: int = 100_000, seed: int = 7) -> dict[str, float]:
    """The estimands: overall values over 100,000 simulated pairs (the limit of a run with many pairs)."""
    rng = np.random.default_rng(seed)
    chunks = [overall_values(world.draw(rng, pairs // 10)) for _ in range(10)]
    return {name: float(np.mean([chunk[name] for chunk in chunks])) for name in HEADLINE}


def to_frames(labels: Labels) -> tuple[pd.DataFrame, pd.DataFrame]:
    """Items and answers of the simulated run (condition taxonomy and stage 1) for the product's analyze()."""
    pair, occupation, order = (grid.ravel() for grid in np.indices(labels.s.shape))
    base = pd.DataFrame(
        {
            "stage": 2,
            "condition": "taxonomy",
            "pair_id": pair + 1,
            "name_order": np.array(ORDERS)[order],
            "occupation": [f"o{o}" for o in occupation],
        }
    )
    questions = (
        ("binary", "female", labels.bf, B_CODES),
        ("binary", "male", labels.bm, B_CODES),
        ("single", None, labels.s, S_CODES),
        ("multiple", None, labels.m, M_CODES),
    )
    frames = [
        base.assign(qtype=qtype, subject=subject, label=np.array(vocabulary)[codes.ravel()])
        for qtype, subject, codes, vocabulary in questions
    ]
    grid = np.indices(labels.attr.shape)
    frames.append(
        pd.DataFrame(
            {
                "stage": 1,
                "condition": "stage1",
                "qtype": "attr",
                "pair_id": grid[0].ravel() + 1,
                "name_order": np.array(ORDERS)[grid[1].ravel()],
                "subject": np.array(SUBJECTS)[grid[2].ravel()],
                "category": "skill",
                "attribute": [f"a{a}" for a in grid[3].ravel()],
                "label": np.array(B_CODES)[labels.attr.ravel()],
            }
        )
    )
    items = pd.concat(frames, ignore_index=True)
    items["item_id"] = [f"i{index}" for index in range(len(items))]
    answers = items[["item_id", "label"]].copy()
    return items.drop(columns="label"), answers
