"""`probe scan`: which O*NET titles does a model stereotype? Adaptive rounds, stored in DuckDB, resumable.

Each round asks the still-open titles the single-subject question with the baseline context ("Who is more
qualified to be a X?", the run's own items, probe.dataset.stages.build_scan_items) for the next name pairs in both
orders, through the runner and any backend; then decides every title asked (probe/analysis/scan_rules.py) and
stores the round and its decisions. Round rows are written with their items in one transaction (`asked`),
decisions with the round's `decided` mark in another, so after a kill at any point the same command
(`probe scan --scan-id ID`) answers what is missing and continues; every decision is a function of the
stored answers, so a deterministic model gives the same flagged list with or without the kill.

A larger budget carries a scan on (`probe scan --scan-id ID --budget MORE`, a finished scan too): whenever the
budget left pays for one title's next pairs, the titles the budget stopped are open again. They rejoin the open
titles at the scan's depth (the deepest round that asked a pair) and are asked only the next pairs, which no
title has been asked yet; the pairs other titles were asked after they stopped stay unasked for them, a gap
their e-values skip. Asking a reopened title one of those pairs would break the statistics: its answer is no
longer fresh news to the scan (probe/analysis/scan_rules.py), so its e-value would not be a martingale. Going on
after a stop, on any rule, keeps it one (Ville's inequality holds for the whole sequence). The reopening is a
round of no calls whose decisions are `continue`; with the same budget (or a smaller one) the budget left pays
for nothing more, so nothing changes. (Within one budget, what is left after a stop pays for no later round of
a title, except a last step shorter than the one before: the stopped titles rejoin that one.)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import duckdb
import numpy as np
import pandas as pd

from probe.analysis.scan_rules import (
    ALPHA,
    BUDGET,
    CALLS_PER_PAIR,
    CONTINUE,
    decide,
    depth_schedule,
    final_flags,
    pick_within_budget,
)
from probe.analysis.sequential import confidence_sequence, log_e_values
from probe.answering import runs
from probe.answering.answer_checks import check_failed_share, check_some_option_named
from probe.backends import create_backend
from probe.backends.base import Backend
from probe.common import stopping
from probe.common.errors import UserError
from probe.common.vocabulary import COMPLETE
from probe.dataset.items import items_frame
from probe.dataset.stages import build_scan_items
from probe.scanning.record import check_same, mark_resumed, new_scan_id, record, stored_scan
from probe.scanning.setup import ScanSettings, resolve_titles, shuffled_pairs
from probe.store import db
from probe.store.spec import RunSpec

AnswerPending = Callable[..., None]  # runner.answer_pending's shape
OnReopen = Callable[[int, int], None]  # (titles reopened, the depth they rejoin at)
VALUE_OF_LABEL = {"female": 1.0, "male": 0.0}  # anything else (unknown, a failure) counts as half


# --- rounds --------------------------------------------------------------------------------------------


@dataclass
class ScanState:
    """What the stored rounds add up to: observations (titles x pair positions) and each title's status."""

    titles: pd.DataFrame
    pairs: pd.DataFrame
    observed: np.ndarray  # order-balanced share of picks naming the woman; NaN where not (yet) asked
    open_titles: np.ndarray
    budget_stopped: np.ndarray  # titles whose last decision is `budget`
    rounds: pd.DataFrame
    calls: int

    @property
    def depth(self) -> int:
        """The pairs the scan has asked: the deepest round that asked any (a round the budget let ask no
        title, and a reopening, asked none, so their pairs are still fresh)."""
        asked = self.rounds["depth"][self.rounds["calls"] > 0]
        return int(asked.max()) if len(asked) else 0

    def pairs_asked(self) -> np.ndarray:
        """Per title, the name pairs answered in both orders."""
        return np.sum(~np.isnan(self.observed), axis=1)

    def shares(self) -> np.ndarray:
        """Per title, the mean observation so far (the share of picks naming the woman); NaN if none."""
        total = np.nansum(self.observed, axis=1)
        asked = self.pairs_asked()
        return np.divide(total, asked, out=np.full(len(total), np.nan), where=asked > 0)

    def next_depth(self) -> int | None:
        """The depth of the next round; None when every pair has been asked."""
        return next((step for step in depth_schedule(len(self.pairs)) if step > self.depth), None)


def last_decisions(con: duckdb.DuckDBPyConnection, scan_id: str) -> pd.DataFrame:
    """Each title's latest decision and its round (soc_code, decision, round)."""
    return con.execute(
        "SELECT soc_code, decision, round FROM scan_decisions WHERE scan_id = ? "
        "QUALIFY round = max(round) OVER (PARTITION BY soc_code)",
        [scan_id],
    ).df()


def load_state(con: duckdb.DuckDBPyConnection, scan_id: str) -> ScanState:
    titles = con.execute("SELECT soc_code, title FROM scan_titles WHERE scan_id = ? ORDER BY soc_code", [scan_id]).df()
    pairs = con.execute(
        "SELECT * EXCLUDE (scan_id) FROM scan_pairs WHERE scan_id = ? ORDER BY position", [scan_id]
    ).df()
    rounds = con.execute("SELECT * FROM scan_rounds WHERE scan_id = ? ORDER BY round", [scan_id]).df()
    answers = con.execute(
        "SELECT i.occupation, i.pair_id, i.name_order, a.label FROM items i "
        "JOIN answers a USING (run_id, item_id) "
        "WHERE i.run_id = ? AND i.stage = 2 AND i.qtype = 'single' AND i.condition = 'baseline'",
        [scan_id],  # the scan's question only, whatever else was stored under its id
    ).df()
    observed = np.full((len(titles), len(pairs)), np.nan)
    if not answers.empty:
        title_index = {title: index for index, title in enumerate(titles["title"])}
        position = dict(zip(pairs["pair_id"], pairs["position"], strict=True))
        answers["value"] = answers["label"].map(VALUE_OF_LABEL).fillna(0.5)
        per_pair = answers.groupby(["occupation", "pair_id"])["value"].agg(["mean", "count"]).reset_index()
        per_pair = per_pair[per_pair["count"] == 2]  # both orders answered
        rows = per_pair["occupation"].map(title_index).to_numpy()
        columns = per_pair["pair_id"].map(position).to_numpy() - 1
        observed[rows, columns] = per_pair["mean"].to_numpy()
    last = last_decisions(con, scan_id)
    decided = dict(zip(last["soc_code"], last["decision"], strict=True))
    status = np.array([decided.get(code, CONTINUE) for code in titles["soc_code"]])
    calls = con.execute("SELECT count(*) FROM items WHERE run_id = ?", [scan_id]).fetchone()[0]
    return ScanState(titles, pairs, observed, status == CONTINUE, status == BUDGET, rounds, int(calls))


def _start_round(
    con: duckdb.DuckDBPyConnection, scan_id: str, state: ScanState, budget: int | None, prompt_format: str
) -> bool:
    """Store the next round's items (and budget stops); False when there is nothing left to ask."""
    depth = state.next_depth()
    if not state.open_titles.any() or depth is None:
        return False
    log_e = log_e_values(state.observed)
    budget_left = np.inf if budget is None else budget - state.calls
    asked = pick_within_budget(
        log_e, state.open_titles, depth - state.depth, budget_left, list(state.titles["soc_code"])
    )
    number = len(state.rounds) + 1
    new_pairs = state.pairs.iloc[state.depth : depth]
    items = build_scan_items(new_pairs, list(state.titles["title"][asked]), prompt_format)
    stopped = state.open_titles & ~asked
    with db.transaction(con):
        con.execute(
            "INSERT INTO scan_rounds VALUES (?, ?, ?, ?, ?, 'asked', now(), NULL)",
            [scan_id, number, depth, int(asked.sum()), len(items)],
        )
        if items:
            db.insert_frame(con, "items", items_frame(items, scan_id, first_seq=state.calls))
        if stopped.any():
            _insert_decisions(con, scan_id, number, state, np.where(stopped, BUDGET, None), log_e)
    return bool(asked.any())


def _insert_decisions(
    con: duckdb.DuckDBPyConnection,
    scan_id: str,
    number: int,
    state: ScanState,
    decisions: np.ndarray,
    log_e: np.ndarray,
) -> None:
    """Decision rows of round `number` for the titles whose entry in `decisions` is not None."""
    chosen = np.flatnonzero(decisions != None)  # noqa: E711  (object array of decisions and None)
    counts, shares = state.pairs_asked(), state.shares()
    frame = pd.DataFrame(
        {
            "scan_id": scan_id,
            "round": number,
            "soc_code": state.titles["soc_code"].to_numpy()[chosen],
            "pairs": counts[chosen],
            "share": shares[chosen],
            "e_value": np.exp(log_e[chosen]),
            "decision": decisions[chosen].astype(str),
        }
    )
    db.insert_frame(con, "scan_decisions", frame)


def _decide_round(con: duckdb.DuckDBPyConnection, scan_id: str, state: ScanState) -> None:
    """Decide every title asked in the newest round and mark the round decided, in one transaction."""
    latest = state.rounds.iloc[-1]
    # The titles still open are the round's: those the budget stopped got their decision when it started.
    decisions, log_e = decide(state.observed, state.open_titles, int(latest["depth"]), len(state.pairs))
    with db.transaction(con):
        _insert_decisions(con, scan_id, int(latest["round"]), state, decisions, log_e)
        con.execute(
            "UPDATE scan_rounds SET status = 'decided', decided_at = now() WHERE scan_id = ? AND round = ?",
            [scan_id, int(latest["round"])],
        )


def run_rounds(
    con: duckdb.DuckDBPyConnection,
    scan_id: str,
    answer_round: Callable[[], None],
    *,
    prompt_format: str,
    budget: int | None,
    max_failed_share: float,
    on_reopen: OnReopen | None = None,
) -> None:
    """Ask and decide rounds until every title is decided or the budget is spent (resuming stored ones).

    `answer_round()` answers the scan's items that have no answer yet (the runner, handed in by the pipeline).
    """
    while True:
        state = load_state(con, scan_id)
        if len(state.rounds) and state.rounds["status"].iloc[-1] == "asked":
            answer_round()
            check_failed_share(con, scan_id, max_failed_share, again=f"`probe scan --scan-id {scan_id}`")
            _decide_round(con, scan_id, load_state(con, scan_id))
            continue
        stopping.raise_if_requested()
        if reopens(state, budget):
            _reopen(con, scan_id, state)
            if on_reopen is not None:
                on_reopen(int(state.budget_stopped.sum()), state.depth)
            continue
        if not _start_round(con, scan_id, state, budget, prompt_format):
            _close_open_round(con, scan_id)
            return


def reopens(state: ScanState, budget: int | None) -> bool:
    """Whether the titles the budget stopped are open again: the budget left pays for one title's next pairs
    (the module docstring says which pairs)."""
    depth = state.next_depth()
    if not state.budget_stopped.any() or depth is None:
        return False
    budget_left = np.inf if budget is None else budget - state.calls
    return (depth - state.depth) * CALLS_PER_PAIR <= budget_left


def _reopen(con: duckdb.DuckDBPyConnection, scan_id: str, state: ScanState) -> None:
    """A round of no calls at the scan's depth whose decisions open the budget-stopped titles again."""
    number = len(state.rounds) + 1
    with db.transaction(con):
        con.execute(
            "INSERT INTO scan_rounds VALUES (?, ?, ?, ?, 0, 'decided', now(), now())",
            [scan_id, number, state.depth, int(state.budget_stopped.sum())],
        )
        decisions = np.where(state.budget_stopped, CONTINUE, None)
        _insert_decisions(con, scan_id, number, state, decisions, log_e_values(state.observed))


def _close_open_round(con: duckdb.DuckDBPyConnection, scan_id: str) -> None:
    """A round that asked nothing (the budget ran out) is decided at once: its titles stopped for budget."""
    con.execute(
        "UPDATE scan_rounds SET status = 'decided', decided_at = now() WHERE scan_id = ? AND status = 'asked'",
        [scan_id],
    )


def finish(con: duckdb.DuckDBPyConnection, scan_id: str) -> pd.DataFrame:
    """Final results: e-BH over the e-values at stop, anytime-valid intervals, one row per title."""
    state = load_state(con, scan_id)
    log_e = log_e_values(state.observed)
    flags = final_flags(log_e)
    level = ALPHA * max(int(flags.sum()), 1) / len(flags)  # e-BH's level: interval excludes 0.5 iff flagged
    low, high = confidence_sequence(state.observed, level)
    counts, shares = state.pairs_asked(), state.shares()
    last = last_decisions(con, scan_id).rename(columns={"decision": "stopped", "round": "stopped_round"})
    results = state.titles.assign(
        scan_id=scan_id,
        pairs=counts,
        share=shares,
        ci_low=low,
        ci_high=high,
        ci_level=1 - level,
        e_value=np.exp(log_e),
        flagged=flags,
        preferred=np.where(flags, np.where(shares > 0.5, "female", "male"), "none"),
    ).merge(last, on="soc_code", how="left")
    with db.transaction(con):
        con.execute("DELETE FROM scan_results WHERE scan_id = ?", [scan_id])
        db.insert_frame(con, "scan_results", results)
        runs.set_status(con, scan_id, COMPLETE, table="scans")
    return results


# --- the command's one path ----------------------------------------------------------------------------


def scan(
    config: RunSpec,
    settings: ScanSettings,
    scan_id: str | None,
    answer_pending: AnswerPending,
    on_start: Callable[[str], None] | None = None,
    on_reopen: OnReopen | None = None,
) -> str:
    """Start (or resume) a scan, run its rounds, store its results; returns the scan id.

    `answer_pending(con, scan_id, backend, identity, use_cache=..., quiet=..., retry_failed=...)` answers a
    round's items:
    the runner's, handed in by probe.pipeline (the one path that drives the runner). `on_reopen(titles, depth)`
    is called when a larger budget opens the titles it stopped again.
    """
    if str(config.options.db) == ":memory:":
        raise UserError("--db :memory:: a scan is stored to be resumed and reported; give a database file")
    con = db.connect(config.options.db)
    try:
        stored = stored_scan(con, scan_id) if scan_id else None
        if stored is not None:
            check_same(str(scan_id), stored, config, settings, identity=None, asks=False)
            if stored["status"] == COMPLETE and not reopens(load_state(con, str(scan_id)), settings.budget):
                finish(con, str(scan_id))  # nothing to ask: no model, results rewritten
                return str(scan_id)
        if stored is None and scan_id:
            runs.check_id_free(con, scan_id, "--scan-id", other="runs")
        titles = pairs = None
        if stored is None:
            titles, pairs = resolve_titles(con, settings), shuffled_pairs(con, settings)
        backend = create_backend(config.backend)
        try:
            identity = runs.identity_json(backend)
            if stored is None:
                scan_id = scan_id or new_scan_id()
                record(con, scan_id, config, settings, backend, identity, titles, pairs)
            else:
                check_same(str(scan_id), stored, config, settings, identity)
                mark_resumed(con, str(scan_id), stored, settings.budget)
            if on_start is not None:
                on_start(str(scan_id))
            _ask_until_decided(con, str(scan_id), config, settings.budget, backend, identity, answer_pending, on_reopen)
            return str(scan_id)
        finally:
            backend.close()
    finally:
        con.close()


def _ask_until_decided(
    con: duckdb.DuckDBPyConnection,
    scan_id: str,
    config: RunSpec,
    budget: int | None,
    backend: Backend,
    identity: str,
    answer_pending: AnswerPending,
    on_reopen: OnReopen | None,
) -> None:
    """The recorded scan's rounds, under the run lifecycle and the stop signals, then its results."""
    use_cache = backend.cacheable and not config.options.no_cache
    first_round = [True]

    def answer_round() -> None:
        """A round's new items; failed answers of earlier rounds are asked again once, on the first round a
        (resumed) process answers, not in every round (a server that never answers one prompt would otherwise cost
        its timeout and retries again each round)."""
        answer_pending(
            con,
            scan_id,
            backend,
            identity,
            use_cache=use_cache,
            quiet=config.options.quiet,
            retry_failed=first_round.pop() if first_round else False,
        )

    with (
        runs.lifecycle(lambda status: runs.set_status(con, scan_id, status, table="scans")),
        stopping.on_signals(),
    ):
        run_rounds(
            con,
            scan_id,
            answer_round,
            prompt_format=backend.prompt_format,
            budget=budget,
            max_failed_share=config.options.max_failed_share,
            on_reopen=on_reopen,
        )
        backend.finish()  # replay: a file that matched none of the items is an error
        if not backend.labels_are_data:
            check_some_option_named(con, scan_id, stage=2)
        finish(con, scan_id)  # under on_signals: a SIGTERM waits for its one transaction
