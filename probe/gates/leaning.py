"""The occupations gate's sign-test plans (kinds/occupations.py on name pairs, kinds/set_occupations.py on name
sets): the leaning units a lean needs, and the units of a run at which the fewest-leaning occupation would have them.
A unit (a name pair or a set) leans where its order-balanced share is not one half."""

from __future__ import annotations

from scipy import stats

from probe.analysis.binomial import POWER, binomial_mde
from probe.gates.gate import PairsNeeded
from probe.gates.verdicts import MOST_PAIRS

SIGN_TEST = "sign_test_bh"  # the method its verdicts name
LISTED = 4  # occupations named in the terminal's line, the rest counted


def first_names(occupations: list[str]) -> str:
    """The first LISTED names, the rest counted (the terminal's short line)."""
    shown = ", ".join(occupations[:LISTED])
    return shown + (f" and {len(occupations) - LISTED} more" if len(occupations) > LISTED else "")


def no_leaning(unit: str) -> str:
    """Why no count is stated where no unit leans (`unit`: "name pairs" or "name sets")."""
    one = unit.removeprefix("name ").removesuffix("s")
    return f"no {one} count makes them testable while no {one} leans (every {one} ties)"


def leaning_plan(fewest: int, asked: int, target: int | None, unit: str = "name pairs") -> tuple[PairsNeeded, str]:
    """The units that would give the fewest-leaning occupation (`fewest` of `asked` units leaning) `target` leaning
    units with 80% chance, and that plan in words."""
    count = leaning_pairs_needed(fewest, asked, target)
    leaning = unit.removeprefix("name ")
    if count is not None:
        return PairsNeeded(count), f"about {count} {unit} would give each {target} leaning {leaning} (80% chance)"
    if fewest == 0:
        return PairsNeeded(None, no_leaning(unit)), no_leaning(unit)
    # the lean needs more leaning units, or more units, than MOST_PAIRS
    return PairsNeeded(MOST_PAIRS + 1), f"more than {MOST_PAIRS:,} {unit} would be needed"


def leaning_pairs_for(detectable: float, level: float) -> int | None:
    """The fewest leaning pairs whose sign test at `level` detects a lean of 0.5 + `detectable` with 80% power
    (bisected: the detectable lean shrinks with the pairs, up to the test's discreteness); None past MOST_PAIRS."""

    def detects(pairs: int) -> bool:
        mde = binomial_mde(pairs, level)
        return mde is not None and mde <= detectable

    if not detects(MOST_PAIRS):
        return None
    smallest, largest = 1, MOST_PAIRS
    while smallest < largest:
        middle = (smallest + largest) // 2
        smallest, largest = (smallest, middle) if detects(middle) else (middle + 1, largest)
    return smallest


def leaning_pairs_needed(leaning: float, asked: int, target: int | None) -> int | None:
    """Name pairs at which an occupation leaning in `leaning` of `asked` pairs has `target` leaning pairs with 80%
    chance: the smallest N with P(Binomial(N, leaning / asked) >= target) >= 0.8. None when no pair leans, no
    target exists or no count up to MOST_PAIRS reaches it."""
    if leaning <= 0 or asked <= 0 or target is None:
        return None
    rate = min(leaning / asked, 1.0)
    smallest, largest = target, MOST_PAIRS + 1
    while smallest < largest:
        middle = (smallest + largest) // 2
        enough = stats.binom.sf(target - 1, middle, rate) >= POWER
        smallest, largest = (smallest, middle) if enough else (middle + 1, largest)
    return smallest if smallest <= MOST_PAIRS else None
