"""Rendering: the HTML and Markdown pages from the JSON summary, and writing the three files."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import duckdb
import jinja2
import markupsafe
import pandas as pd

from probe.analysis.contrasts import SLOT_METRICS
from probe.analysis.metric_registry import (
    ATTR_YES_DIFF,
    ATTR_YES_F,
    ATTR_YES_M,
    COMPARED_METRICS,
    CONSISTENCY,
    FIGURE1_METRICS,
    METRICS,
    STAGE1_METRICS,
    TABLE_METRICS,
)
from probe.analysis.regression import CLUSTERED_METHOD
from probe.analysis.statistics import METHODS as INTERVAL_METHODS
from probe.analysis.statistics import OCCUPATION_TEST, OVERALL_METHOD
from probe.common.errors import UserError
from probe.common.escape import markdown_text, page_text, strict_json, write_atomic
from probe.common.vocabulary import COMPLETE, CONDITIONS, STAGE1_CONDITION
from probe.report.compare_figures import figure_differences, figure_leaderboard
from probe.report.data import METRIC_COLUMNS, PREFERENCE_COLUMNS, STAGE1_RATE_COLUMNS, order_index
from probe.report.document import summary
from probe.report.figures import (
    figure_headline,
    figure_impact_ratios,
    figure_occupations,
    figure_pair_shares,
    figure_pairs,
    figure_robustness,
    figure_sensitivity,
    figure_stage1,
)
from probe.report.findings import method_legend
from probe.report.formatting import (
    MISSING,
    fmt_ci,
    fmt_contrast_value,
    fmt_difference,
    fmt_duration,
    fmt_estimate,
    fmt_num,
    fmt_p,
    fmt_pct,
    fmt_show,
    fmt_signed,
    set_words,
)
from probe.report.impact import findings as impact_findings
from probe.report.impact import fmt_ratio_ci
from probe.report.impact import overall_rows as impact_rows
from probe.report.items import ITEMS_SHOWN
from probe.report.limitations import limitations
from probe.report.workforce import figure_workforce, workforce_words

_TEMPLATE_DIR = Path(__file__).resolve().parent / "templates"
ONET_ATTRIBUTION = (
    "This includes information from the O*NET Database by the U.S. Department of Labor, Employment and "
    "Training Administration (USDOL/ETA). Used under the CC BY 4.0 license. O*NET\u00ae is a trademark of "
    "USDOL/ETA."
)
# Inlined (the page needs no other file); our own stylesheet, so marked safe for the escaping HTML templates.
_STYLE = markupsafe.Markup((_TEMPLATE_DIR / "style.css").read_text(encoding="utf-8"))


def _is_html_template(name: str | None) -> bool:
    """Autoescape every `*.html.j2` page (select_autoescape(["html"]) would not match the `.j2` suffix)."""
    return name is not None and name.endswith(".html.j2")


def _visible(value: object) -> object:
    """Every text a template prints through page_text (a model name from a server may carry an ESC sequence or a
    bidi override); Markup (the stylesheet, rendered parts) as it is."""
    return page_text(value) if type(value) is str else value


_TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(_TEMPLATE_DIR),
    autoescape=_is_html_template,
    finalize=_visible,
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
)


# Every interval in the pages names its method (DESIGN.md section 10).
METHODS = {
    "overall": OVERALL_METHOD,
    "scoped": f"occupation and category rows: as overall rows; pair rows: {INTERVAL_METHODS['wilson']}",
    "occupations": OCCUPATION_TEST,
    "regression": CLUSTERED_METHOD,
    "paired": INTERVAL_METHODS["paired_t"],
}
SET_METHODS = {key: set_words(text) for key, text in METHODS.items()}  # a run over name sets: the set is the unit
GLOSSARY = (*TABLE_METRICS[:2], ATTR_YES_F, ATTR_YES_M, ATTR_YES_DIFF, *TABLE_METRICS[2:])


@dataclass(frozen=True)
class ReportFiles:
    html: Path
    markdown: Path
    json: Path


def fmt_metric_ci(entry: Mapping[str, Any] | None, metric: str) -> str:
    """A metric with its interval: a share in % (`62.3% [55.1, 70.0]`), a difference in points."""
    if not entry or METRICS.get(metric) is None or METRICS[metric].kind != "difference" or entry.get("value") is None:
        return fmt_ci(entry)
    low, high = entry.get("ci_low"), entry.get("ci_high")
    interval = " (no interval)" if low is None or high is None else f" [{fmt_signed(low)}, {fmt_signed(high)}]"
    return f"{fmt_signed(entry['value'])} pts{interval}"


_TEMPLATES.filters.update(
    metric_ci=fmt_metric_ci,
    pct=fmt_pct,
    num=fmt_num,
    pvalue=fmt_p,
    ci=fmt_ci,
    show=fmt_show,
    signed=fmt_signed,
    estimate=fmt_estimate,
    md=markdown_text,
    ratio_ci=fmt_ratio_ci,
    contrast_value=fmt_contrast_value,
    difference=fmt_difference,
    duration=fmt_duration,
)


# ---------------------------------------------------------------------------------------------- report


def _metric_table(overall: Mapping[str, Mapping[str, Any]], hidden: Sequence[str] = ()) -> dict[str, Any]:
    """Overall metrics per condition: the paper's Figure 1 six, then the others, then pairs and instances (less the
    `hidden` ones: a run over name sets has no metric that reads its slots as a woman and a man)."""
    conditions = [c for c in overall if c in CONDITIONS]

    def rows(metrics: Sequence[str]) -> list[tuple[str, list[str]]]:
        return [(m, [fmt_ci(overall[c].get(m)) for c in conditions]) for m in metrics if m not in hidden]

    def count(condition: str) -> str:
        entry = overall[condition].get(CONSISTENCY) or {}
        return f"{fmt_show(entry.get('pairs'))} / {fmt_show(entry.get('n'))}"

    others = [m for m in TABLE_METRICS if m not in FIGURE1_METRICS]
    unit = "name sets" if hidden else "name pairs"  # a run over name sets: its overall rows' unit is the set
    return {
        "conditions": conditions,
        "figure1": rows(FIGURE1_METRICS),
        "rows": [*rows(others), (f"{unit} / valid instances", [count(c) for c in conditions])],
    }


def _short_term(term: str) -> str:
    """The analyzers' `occupation:nurse` -> `nurse`, `overall` -> `all occupations`."""
    return "all occupations" if term == "overall" else term.removeprefix("occupation:")


def _regression_table(regression: Mapping[str, list[dict[str, Any]]]) -> dict[str, Any]:
    """Terms as rows, conditions as columns; intercept first, then by the first condition's odds ratio."""
    conditions = sorted(regression, key=lambda c: order_index(CONDITIONS, c))
    cells: dict[str, dict[str, dict[str, Any]]] = {}
    for condition in conditions:
        for row in regression[condition]:
            cells.setdefault(_short_term(row["term"]), {})[condition] = row

    def sort_key(term: str) -> tuple:
        first = cells[term].get(conditions[0], {}) if conditions else {}
        ratio = first.get("odds_ratio")
        return (term != "all occupations", ratio is None, -(ratio or 0.0), term)

    return {
        "conditions": conditions,
        "rows": [{"term": term, "cells": cells[term]} for term in sorted(cells, key=sort_key)],
    }


def _examples(names: Sequence[str], limit: int = 5) -> str:
    """` (a, b, c, ...)`: the first few names, for a sentence."""
    return f" ({', '.join(names[:limit])}{', ...' if len(names) > limit else ''})" if names else ""


def _difference_rows(differences: Sequence[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """One row per (compared run, metric) with the conditions as cells."""
    rows: dict[tuple, dict[str, Any]] = {}
    for d in differences:
        row = rows.setdefault((d["run_b"], d["metric"]), {"run_b": d["run_b"], "metric": d["metric"], "cells": {}})
        row["cells"][d["condition"]] = d
    return list(rows.values())


def other_findings(data: Mapping[str, Any]) -> list[str]:
    """Sentences after the headline findings: control bias, occupation preferences, unknown answers."""
    overall, sentences = data["overall"], []
    lead = next((c for c in CONDITIONS if c in overall), None)
    if "control" in overall:
        control = overall["control"]
        sentences.append(
            "Control condition (both people have identical attributes): bias "
            f"{fmt_ci(control.get('bias'))}, of which the woman was picked twice in "
            f"{fmt_pct((control.get('bias_f') or {}).get('value'))} and the man in "
            f"{fmt_pct((control.get('bias_m') or {}).get('value'))} of instances."
        )
    lists = data["preferred_occupations"].get(lead)
    if lists:
        women, men, untestable = lists["female"], lists["male"], lists["not_testable"]
        sentences.append(
            f"{len(women) + len(men)} of {lists['tested']} testable occupations show a significant preference "
            f"in the {lead} condition (q < 0.05): {len(women)} for women{_examples(women)}, "
            f"{len(men)} for men{_examples(men)}."
            + (f" {len(untestable)} are not testable at this size (too few instances)." if untestable else "")
        )
    stage2 = [v for qtype, v in data["counts"]["by_qtype"].items() if qtype != "attr"]
    items = sum(v["items"] for v in stage2)
    if items:
        unknown = sum(v["unknown"] for v in stage2) / items
        caution = " Read the metrics with care." if unknown > 0.05 else ""
        sentences.append(f"{fmt_pct(unknown)} of stage-2 answers were unknown (refused or unreadable).{caution}")
    return sentences


def occupation_levels(preferences: Sequence[Mapping[str, Any]]) -> str:
    """The occupation intervals' level in the figure's caption: one, or one per condition (1 - R x 0.05 / m)."""
    levels = {row["condition"]: row["ci_level"] for row in preferences if row.get("ci_level") is not None}
    if len(set(levels.values())) == 1:
        return fmt_pct(next(iter(levels.values())))
    return ", ".join(f"{fmt_pct(level)} ({condition})" for condition, level in levels.items())


def _status_warning(run: Mapping[str, Any]) -> str | None:
    """Every run but a complete one may still change (resumed, its failed items asked again)."""
    if run["status"] == COMPLETE:
        return None
    return f"This run's status is '{run['status']}': it may be incomplete, and its numbers may change."


def render_report(data: Mapping[str, Any]) -> tuple[str, str]:
    """HTML page and Markdown summary of a run, rendered from its report.json document alone."""
    if "decisions" in data:  # an imported decisions run (probe/report/decisions.py): its own, shorter pages
        rows = impact_rows(data["adverse_impact"])
        context = {**data, "impact_rows": rows, "impact_findings": impact_findings(data["adverse_impact"])}
        figures = {"adverse_impact": figure_impact_ratios(rows)}
        return (
            _TEMPLATES.get_template("decisions.html.j2").render(**context, figures=figures, css=_STYLE),
            _TEMPLATES.get_template("decisions.md.j2").render(**context),
        )
    sections = data["items"]
    context = {
        **data,
        "metric_table": _metric_table(data["overall"], SLOT_METRICS if data.get("groups") else ()),
        "preferred": data["preferred_occupations"],
        "occupation_level": occupation_levels(data["occupation_preference"]),
        "stage1_rows": data["stage1_rates"],
        "regression": _regression_table(data["regression"]),
        "findings": other_findings(data),
        "method_legend": method_legend(data["headline"]),
        "status_warning": _status_warning(data["run"]),
        "limitations": limitations(data),
        "attribution": ONET_ATTRIBUTION,
        "methods": SET_METHODS if data.get("groups") else METHODS,
        "glossary": [
            METRICS[name] for name in GLOSSARY if name in METRICS and not (data.get("groups") and name in SLOT_METRICS)
        ],
        "drilldown": sections,
        "items_shown": ITEMS_SHOWN,
        "anchors": {(s["condition"], s["occupation"]): s["anchor"] for s in sections},
        "impact_rows": impact_rows(data["adverse_impact"]),
        "impact_findings": impact_findings(data["adverse_impact"]),
        "workforce_words": workforce_words(data.get("workforce")),
    }
    figures = {
        "headline": figure_headline(data["overall"]),
        "occupations": figure_occupations(_frame(data["occupation_preference"], PREFERENCE_COLUMNS)),
        "stage1_rates": figure_stage1(_frame(data["stage1_rates"], STAGE1_RATE_COLUMNS)),
        "pairs": figure_pairs(_frame(data["pair_values"], METRIC_COLUMNS), data["correlations"]),
        "sensitivity": figure_sensitivity(data["overall"]),
        "robustness": figure_robustness(data["robustness"]),
        "pair_shares": figure_pair_shares(data["bottom_line"]["pairs"]),
        "workforce": figure_workforce(data.get("workforce")),
        "adverse_impact": figure_impact_ratios(impact_rows(data["adverse_impact"])),
    }
    html = _TEMPLATES.get_template("report.html.j2").render(**context, figures=figures, css=_STYLE)
    markdown = _TEMPLATES.get_template("report.md.j2").render(**context)
    return html, markdown


def _frame(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    """A document's list of records as a table for the figures (with its columns even when empty)."""
    return pd.DataFrame(list(rows), columns=list(columns))


def write_report(con: duckdb.DuckDBPyConnection, run_id: str, html_path: Path | None = None) -> ReportFiles:
    """Write report.json, and report.html and report.md rendered from it (`html_path`: .html or .md; both beside)."""
    files = output_files(html_path or Path("runs") / run_id / "report.html")
    document = summary(con, run_id)
    return write_files(files, *render_report(document), document)


def output_files(path: Path) -> ReportFiles:
    """`-o` picks by suffix: the page (.html) or the Markdown summary (.md); the others go beside it."""
    if path.suffix.lower() not in (".html", ".htm", ".md"):
        raise UserError(f"-o {path}: choose a .html or .md file (the other formats are written beside it)")
    markdown_asked = path.suffix.lower() == ".md"
    return ReportFiles(
        path.with_suffix(".html") if markdown_asked else path,
        path if markdown_asked else path.with_suffix(".md"),
        path.with_suffix(".json"),
    )


def write_files(files: ReportFiles, html: str, markdown: str, data: Mapping[str, Any]) -> ReportFiles:
    """Each file whole or not at all: a crash never leaves half a report."""
    write_atomic(files.html, html)
    write_atomic(files.markdown, markdown)
    write_atomic(files.json, strict_json(data, indent=2, ensure_ascii=False) + "\n")
    return files


def render_comparison(data: Mapping[str, Any]) -> tuple[str, str]:
    """HTML page and Markdown summary of a comparison, rendered from its compare.json document alone."""
    metrics = list(dict.fromkeys(metric for row in data["leaderboard"] for metric in row["metrics"]))
    over_sets = any(run.get("name_sets") for run in data["runs"])  # its differences and ranks are over name sets
    context = {
        **data,
        "women_and_men": data.get("women_and_men", True),  # a comparison written before the key: pairs runs only
        "unit": "name sets" if over_sets else "name pairs",
        "leaderboard_metrics": metrics,
        "rank_rows": _rank_table(data),
        "side_by_side": _side_by_side_rows(data),
        "differences": _difference_rows(data["paired_differences"]),
        "attribution": ONET_ATTRIBUTION,
        "methods": SET_METHODS if over_sets else METHODS,
    }
    figures = {"leaderboard": figure_leaderboard(data), "differences": figure_differences(data)}
    html = _TEMPLATES.get_template("compare.html.j2").render(**context, figures=figures, css=_STYLE)
    markdown = _TEMPLATES.get_template("compare.md.j2").render(**context)
    return html, markdown


def _side_by_side_rows(data: Mapping[str, Any]) -> list[dict[str, Any]]:
    """(condition, metric) rows with each run's own overall value and CI, formatted."""
    rows = []
    for condition in data["conditions"]:  # every condition a run asked: runs sharing none are shown too
        for metric in COMPARED_METRICS:
            cells = [fmt_ci(data["overall"][run["run_id"]].get(condition, {}).get(metric)) for run in data["runs"]]
            if any(cell != MISSING for cell in cells):
                rows.append({"condition": condition, "metric": metric, "cells": cells})
    return rows


def _rank_table(data: Mapping[str, Any]) -> dict[str, Any]:
    """The lead condition's ranks and stage 1's grant gap: a row per run, a `rank (low-high)` cell per metric."""
    lead = data["leaderboard"][0]["condition"]
    ranks = [row for row in data["ranks"] if row["condition"] in (lead, STAGE1_CONDITION)]
    compared = dict.fromkeys((*COMPARED_METRICS, *STAGE1_METRICS))
    metrics = [metric for metric in compared if any(row["metric"] == metric for row in ranks)]
    cells = {(row["run_id"], row["metric"]): row for row in ranks}
    rows = []
    for run in data["runs"]:
        shown = []
        for metric in metrics:
            row = cells.get((run["run_id"], metric)) or {}
            rank, low, high = row.get("rank"), row.get("rank_low"), row.get("rank_high")
            interval = MISSING if low is None else f"{low}{MISSING}{high}"  # 2 (1-3), an en dash between
            shown.append(MISSING if rank is None else f"{rank} ({interval})")
        rows.append({"run_id": run["run_id"], "cells": shown})
    return {"condition": lead, "metrics": metrics, "rows": rows}
