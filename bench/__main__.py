"""Print one `name=value` line per benchmark figure; BENCHMARKS.md explains each and the targets.

.venv/bin/python -m bench            # full: the quick preset run and a paper-preset pair (hours here)
.venv/bin/python -m bench --quick    # under 10 minutes: a slice of the paper preset, fewer QA items
.venv/bin/python -m bench --only calls,analyze
.venv/bin/python -m bench --coverage # coverage per metric, occupation FWER/FDR, detectable effects, and the
                                     # pair-level estimators in worlds of their own (bench/pair_worlds.py)
                                     # and at the rare-event edges (bench/edges.py)
.venv/bin/python -m bench --robustness  # crossed pair x wording intervals by simulation (bench/wordings.py)
.venv/bin/python -m bench --only scan  # `probe scan` by simulation: FDR, power, calls (--quick: ~1 minute)
.venv/bin/python -m bench --only impact  # the impact ratio's interval coverage over name sets (bench/impact.py)
.venv/bin/python -m bench --gpu      # hf-causal on a CUDA GPU: items/s and the paper estimate
.venv/bin/python -m bench --only unusable   # time to fail per unusable-server class (~4 minutes)
.venv/bin/python -m bench --only workforce  # workforce slope and correlations: coverage, width, power (8/20/62
                                            # occupations x 6/12/20 pairs, 1,000 runs a cell; ~8 CPU-minutes)
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

ANALYZE_ANSWERS = 1_000_000


def _calls(quick: bool, folder: Path) -> dict[str, float]:
    from bench.calls import paper_call_counts

    return paper_call_counts()


def _analyze(quick: bool, folder: Path) -> dict[str, float]:
    from bench.analyze_speed import cli_analyze_seconds, in_process_analyze_seconds, synthetic_database

    path = folder / "analyze.duckdb"
    answers = synthetic_database(path, ANALYZE_ANSWERS)
    return {
        "analyze_answers": answers,
        "analyze_1m_seconds": round(cli_analyze_seconds(path), 2),
        "analyze_1m_in_process_seconds": round(in_process_analyze_seconds(path), 2),
    }


def _compare(quick: bool, folder: Path) -> dict[str, float]:
    from bench.compare_speed import measure

    return measure(folder, runs=10)


def _qa(quick: bool, folder: Path) -> dict[str, float]:
    from bench.qa_batch import measure

    return measure(items_timed=32 if quick else 128)


def _llm(quick: bool, folder: Path) -> dict[str, float]:
    from bench.calls import paper_call_counts
    from bench.llm import measure

    counts = paper_call_counts()
    paper_stage_items = {"1": counts["stage1_items_paper"], "2": counts["stage2_items_paper"]}
    return measure(quick, folder, paper_stage_items)


def _coverage(quick: bool, folder: Path) -> dict[str, float]:
    from bench.coverage import measure

    return measure(quick)


def _workforce(quick: bool, folder: Path) -> dict[str, float]:
    from bench.workforce import measure

    return measure(quick)


def _pairs(quick: bool, folder: Path) -> dict[str, float]:
    from bench.pair_worlds import measure

    return measure(quick)


def _edges(quick: bool, folder: Path) -> dict[str, float]:
    from bench.edges import measure

    return measure(quick)


def _wordings(quick: bool, folder: Path) -> dict[str, float]:
    from bench.wordings import measure

    return measure(quick)


def _gates(quick: bool, folder: Path) -> dict[str, float]:
    from bench.gates import measure

    return measure(quick)


def _impact(quick: bool, folder: Path) -> dict[str, float]:
    from bench.impact import measure

    return measure(quick)


def _scan(quick: bool, folder: Path) -> dict[str, float]:
    from bench.scan import measure

    return measure(quick, folder)


def _paper_stage_items() -> dict[str, int]:
    from bench.calls import paper_call_counts

    counts = paper_call_counts()
    return {"1": counts["stage1_items_paper"], "2": counts["stage2_items_paper"]}


def _engines(quick: bool, folder: Path) -> dict[str, float]:
    from bench.engines import measure

    return measure(folder, _paper_stage_items(), gpu=False)


def _gpu(quick: bool, folder: Path) -> dict[str, float]:
    from bench.engines import measure

    return measure(folder, _paper_stage_items(), gpu=True)


def _prefix(quick: bool, folder: Path) -> dict[str, float]:
    from bench.prefix import measure

    return measure(quick)


def _unusable(quick: bool, folder: Path) -> dict[str, float]:
    from bench.unusable import measure

    return measure(folder)


BENCHMARKS: dict[str, Callable[[bool, Path], dict[str, float]]] = {
    "calls": _calls,
    "analyze": _analyze,
    "compare": _compare,
    "qa": _qa,
    "prefix": _prefix,
    "llm": _llm,
    "engines": _engines,
    "coverage": _coverage,
    "pairs": _pairs,
    "edges": _edges,
    "gates": _gates,
    "wordings": _wordings,
    "scan": _scan,
    "impact": _impact,
    "gpu": _gpu,
    "unusable": _unusable,
    "workforce": _workforce,
}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="smaller slices, under 10 minutes")
    everything_here = ",".join(name for name in BENCHMARKS if name != "gpu")  # --gpu asks for the GPU run
    parser.add_argument("--only", default=everything_here, help=f"comma list of {', '.join(BENCHMARKS)}")
    coverage = "only the coverage simulations (--only coverage,pairs,edges)"
    parser.add_argument("--coverage", action="store_true", help=coverage)
    parser.add_argument("--robustness", action="store_true", help="only the pair x wording coverage (--only wordings)")
    parser.add_argument("--gpu", action="store_true", help="only hf-causal on a CUDA GPU")
    args = parser.parse_args()
    chosen = [name.strip() for name in args.only.split(",") if name.strip()]
    if args.coverage or args.gpu:
        chosen = ["coverage", "pairs", "edges"] if args.coverage else ["gpu"]
    if args.robustness:
        chosen = ["wordings"]
    unknown = [name for name in chosen if name not in BENCHMARKS]
    if unknown:
        parser.error(f"unknown benchmark {unknown[0]!r} (choose from {', '.join(BENCHMARKS)})")
    started = time.perf_counter()
    print(f"cores={len(os.sched_getaffinity(0))}", flush=True)
    for name in chosen:
        with tempfile.TemporaryDirectory() as folder:
            load_before = os.getloadavg()[0]
            figures = BENCHMARKS[name](args.quick, Path(folder))
            print(f"{name}_load_average_1m={load_before:.2f}", flush=True)
            for figure, value in figures.items():
                print(f"{figure}={value}", flush=True)
    print(f"bench_seconds={time.perf_counter() - started:.0f}", flush=True)


if __name__ == "__main__":
    main()
