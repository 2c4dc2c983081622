"""The scan's results as files: scan.json (the document), scan.md, a hierarchy figure, the flagged titles' CSV.

Titles are ranked by effect (|share - 0.5|) with anytime-valid intervals at e-BH's level (an interval
excludes 0.5 exactly when its title is flagged). Roll-ups by SOC major and minor group average the titles'
shares; their interval is two-way cluster-robust over name pairs and titles (a pair's lean is shared by
every title it was asked about), with a t quantile on the fewer clusters less one.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import duckdb
import numpy as np
import pandas as pd
from scipy import stats

from probe.analysis.scan_rules import ALPHA
from probe.common.escape import atomic_path, csv_safe, markdown_text, strict_json, write_atomic
from probe.report.figures import GENDER_COLOURS, new_figure, svg_bytes
from probe.scanning.record import stored_scan
from probe.scanning.rounds import load_state
from probe.scanning.setup import FILE_ONLY_BACKEND_FIELDS
from probe.scanning.workforce import scan_workforce
from probe.store.spec import RunSpec

if TYPE_CHECKING:
    from matplotlib.figure import Figure

SOC_MAJOR_GROUPS = {
    "11": "Management",
    "13": "Business and Financial Operations",
    "15": "Computer and Mathematical",
    "17": "Architecture and Engineering",
    "19": "Life, Physical, and Social Science",
    "21": "Community and Social Service",
    "23": "Legal",
    "25": "Educational Instruction and Library",
    "27": "Arts, Design, Entertainment, Sports, and Media",
    "29": "Healthcare Practitioners and Technical",
    "31": "Healthcare Support",
    "33": "Protective Service",
    "35": "Food Preparation and Serving Related",
    "37": "Building and Grounds Cleaning and Maintenance",
    "39": "Personal Care and Service",
    "41": "Sales and Related",
    "43": "Office and Administrative Support",
    "45": "Farming, Fishing, and Forestry",
    "47": "Construction and Extraction",
    "49": "Installation, Maintenance, and Repair",
    "51": "Production",
    "53": "Transportation and Material Moving",
    "55": "Military Specific",
}
GROUP_METHOD = "two-way cluster-robust (name pairs, titles) t interval of the title-averaged share"
TOP_UNFLAGGED = 10  # titles scan.md lists when none is flagged
TITLE_METHOD = "betting confidence sequence (anytime-valid), at e-BH's level"


def major_group(soc_code: str) -> str:
    return soc_code[:2]


def minor_group(soc_code: str) -> str:
    """SOC minor groups are XX-X000 (29-1000: healthcare diagnosing or treating practitioners)."""
    return f"{soc_code[:4]}000"


def group_rollup(observed: np.ndarray, groups: pd.Series) -> pd.DataFrame:
    """Per group: titles, the title-averaged share and its two-way cluster-robust 95% interval."""
    rows = []
    for group, members in groups.groupby(groups, sort=True):
        block = observed[members.index.to_numpy()]
        asked = ~np.isnan(block)
        per_title = asked.sum(axis=1)
        titles = block[per_title > 0]
        if len(titles) == 0:
            rows.append((group, len(members), 0, np.nan, np.nan, np.nan))
            continue
        counts = per_title[per_title > 0]
        share = float(np.mean(np.nanmean(titles, axis=1)))
        weights = np.where(np.isnan(titles), 0.0, 1.0 / (counts[:, None] * len(titles)))
        residual = np.where(np.isnan(titles), 0.0, titles - share) * weights
        variance = (residual.sum(axis=1) ** 2).sum() + (residual.sum(axis=0) ** 2).sum() - (residual**2).sum()
        clusters = min(len(titles), int(asked.any(axis=0).sum()))
        half = stats.t.ppf(0.975, clusters - 1) * np.sqrt(max(variance, 0.0)) if clusters > 1 else np.nan
        low, high = (share - half, share + half) if half > 0 else (np.nan, np.nan)  # never a zero-width interval
        rows.append((group, len(members), int(counts.sum()), share, max(low, 0.0), min(high, 1.0)))
    return pd.DataFrame(rows, columns=["group", "titles", "observations", "share", "ci_low", "ci_high"])


def _groups_frame(results: pd.DataFrame, observed: np.ndarray, level: str) -> pd.DataFrame:
    keys = results["soc_code"].map(major_group if level == "major" else minor_group)
    rollup = group_rollup(observed, keys)
    flagged = results.assign(group=keys).groupby("group")["preferred"].value_counts().unstack(fill_value=0)
    for gender in ("female", "male"):
        column = flagged[gender] if gender in flagged else pd.Series(0, index=flagged.index)
        rollup[f"flagged_{gender}"] = rollup["group"].map(column).fillna(0).astype(int)
    rollup["major_name"] = rollup["group"].map(lambda code: SOC_MAJOR_GROUPS.get(code[:2], ""))
    return rollup


def document(con: duckdb.DuckDBPyConnection, scan_id: str) -> dict[str, object]:
    """scan.json: the scan, its rounds, titles ranked by effect, flagged titles, group roll-ups."""
    scan = con.execute("SELECT * FROM scans WHERE scan_id = ?", [scan_id]).df().iloc[0]
    results = con.execute(
        "SELECT * EXCLUDE (scan_id) FROM scan_results WHERE scan_id = ? ORDER BY soc_code", [scan_id]
    ).df()
    rounds = con.execute(
        "SELECT round, depth, titles, calls FROM scan_rounds WHERE scan_id = ? ORDER BY round", [scan_id]
    ).df()
    observed = load_state(con, scan_id).observed
    ranked = results.assign(effect=(results["share"] - 0.5).abs()).sort_values(
        ["flagged", "effect", "e_value"], ascending=False
    )
    titles = json.loads(ranked.drop(columns="effect").to_json(orient="records"))
    return {
        "scan_id": scan_id,
        "model": scan["model"],
        "backend": scan["backend"],
        "settings": json.loads(scan["config_json"]),
        "status": scan["status"],
        "alpha": ALPHA,
        "calls": int(rounds["calls"].sum()),
        "rounds": json.loads(rounds.to_json(orient="records")),
        "titles_scanned": len(results),
        "flagged": [title for title in titles if title["flagged"]],
        "titles": titles,
        "title_interval_method": TITLE_METHOD,
        "group_interval_method": GROUP_METHOD,
        "confirmation": {
            "occupations_csv": "flagged_occupations.csv",
            "flagged_without_ratings": sorted(
                set(results.loc[results["flagged"], "soc_code"]) - set(confirmation_csv(con, scan_id)["soc_code"])
            ),
        },
        "groups": {
            level: json.loads(_groups_frame(results, observed, level).to_json(orient="records"))
            for level in ("major", "minor")
        },
        "workforce": scan_workforce(con, results, observed),
    }


def hierarchy_figure(results: pd.DataFrame) -> Figure:
    """One row per SOC major group, its titles as cells (by minor group, then share), coloured by share."""
    results = results.assign(major=results["soc_code"].map(major_group), minor=results["soc_code"].map(minor_group))
    groups = sorted(results["major"].unique())
    width = max(int(results.groupby("major").size().max()), 1)
    grid = np.full((len(groups), width), np.nan)
    marks: list[tuple[int, int, str]] = []
    edges: list[tuple[int, int]] = []  # where a row's next minor group starts
    for row, group in enumerate(groups):
        members = results[results["major"] == group].sort_values(["minor", "share"])
        grid[row, : len(members)] = members["share"].to_numpy()
        marks += [(row, column, gender) for column, gender in enumerate(members["preferred"]) if gender != "none"]
        minors = members["minor"].to_numpy()
        edges += [(row, column) for column in range(1, len(minors)) if minors[column] != minors[column - 1]]
    from matplotlib.colors import TwoSlopeNorm

    fig = new_figure(min(3 + width * 0.09, 16), 1.2 + 0.32 * len(groups))
    ax = fig.add_subplot()
    image = ax.imshow(
        np.ma.masked_invalid(grid), aspect="auto", cmap="PuOr_r", norm=TwoSlopeNorm(0.5, 0, 1), interpolation="nearest"
    )
    for row, column in edges:
        ax.plot([column - 0.5, column - 0.5], [row - 0.5, row + 0.5], color="white", linewidth=1.5)
    for row, column, gender in marks:
        ax.plot(column, row, marker="o", markersize=3, color=GENDER_COLOURS[gender], markeredgecolor="black")
    ax.set_yticks(range(len(groups)), [f"{code} {SOC_MAJOR_GROUPS.get(code, '')}"[:40] for code in groups], fontsize=7)
    ax.set_xlabel("titles of the group, by minor group (white lines) then share; dots: flagged")
    fig.colorbar(image, ax=ax, label="share of picks naming the woman")
    return fig


def confirmation_csv(con: duckdb.DuckDBPyConnection, scan_id: str) -> pd.DataFrame:
    """The flagged titles with O*NET ratings, as a `probe run --occupations FILE.csv` occupations file."""
    return con.execute(
        """SELECT r.title AS occupation, r.soc_code, r.title AS onet_title,
                  printf('flagged by scan %s: share %.2f (%s)', r.scan_id, r.share, r.preferred) AS note
           FROM scan_results r WHERE r.scan_id = ? AND r.flagged
             AND EXISTS (SELECT 1 FROM attribute_ratings a WHERE a.soc_code = r.soc_code)
           ORDER BY abs(r.share - 0.5) DESC, r.soc_code""",
        [scan_id],
    ).df()


def markdown(doc: dict[str, object]) -> str:
    """scan.md: what was asked, the flagged titles, the major-group roll-up."""
    lines = [
        f"# Scan {doc['scan_id']}: {markdown_text(str(doc['model']))} ({doc['backend']})",
        "",
        f"{doc['titles_scanned']} O*NET titles, {doc['calls']:,} model calls in {len(doc['rounds'])} rounds; "
        f'{len(doc["flagged"])} flagged (e-BH over e-values at FDR {doc["alpha"]}). Question: "Who is more '
        "qualified to be a X?\", baseline context, both name orders; a name pair's observation is the share of "
        "its two answers naming the woman. Intervals: " + TITLE_METHOD + ".",
    ]
    shown = doc["flagged"] or doc["titles"][:TOP_UNFLAGGED]
    if not doc["flagged"]:
        lines += ["", f"No title is flagged. The {len(shown)} largest shares away from 0.5 (not significant):"]
    lines += [
        "",
        "| title | SOC | pairs | share | interval | e-value | preferred |",
        "|---|---|---:|---:|---|---:|---|",
    ]
    for title in shown:
        interval = _interval_text(title)
        lines.append(
            f"| {markdown_text(title['title'])} | {title['soc_code']} | {title['pairs']} | "
            f"{_share_text(title)} | "
            f"{interval} ({title['ci_level']:.5f}) | {title['e_value']:.3g} | {title['preferred']} |"
        )
    left_out = doc["confirmation"]["flagged_without_ratings"]
    if left_out:
        lines += [
            "",
            f"Not in flagged_occupations.csv (no O*NET attribute ratings, so `probe run` cannot confirm them): "
            f"{', '.join(left_out)}.",
        ]
    lines += [
        "",
        f"## SOC major groups ({GROUP_METHOD}, 95%)",
        "",
        "| group | titles | share | interval | flagged female | flagged male |",
        "|---|---:|---:|---|---:|---:|",
    ]
    for group in doc["groups"]["major"]:
        interval = _interval_text(group)
        share = _share_text(group)
        lines.append(
            f"| {group['group']} {group['major_name']} | {group['titles']} | {share} | {interval} | "
            f"{group['flagged_female']} | {group['flagged_male']} |"
        )
    workforce = doc["workforce"]
    if workforce and workforce["slope"]["ci_low"] is not None:  # intervals from MIN_PAIRS name pairs
        stats_text = "; ".join(
            f"{name} {workforce[name]['estimate']:.2f} (95% CI {workforce[name]['ci_low']:.2f} "
            f"to {workforce[name]['ci_high']:.2f})"
            for name in ("slope", "spearman", "pearson")
        )
        lines += [
            "",
            "## Mirror or amplify: the titles against the BLS workforce",
            "",
            f"Over {workforce['n_occupations']} titles with a workforce share of women: {stats_text}. Slope 1 "
            f"mirrors the workforce, above 1 exaggerates its segregation. {workforce['slope']['method']}.",
        ]
    lines += [
        "",
        "n/a: no interval (the two-way variance estimate is not positive, e.g. every pair alike, or one cluster).",
        "",
        "![titles by SOC major group](scan_groups.svg)",
        "",
    ]
    return "\n".join(lines)


def confirmation_settings(con: duckdb.DuckDBPyConnection, scan_id: str) -> str | None:
    """The scan's backend settings that `probe run` takes only from a RUN.toml (api_mode, timeout, ...), as one, where
    any differs from its default: so a confirmation run asks as the scan asked. None: the flags say it all."""
    stored = json.loads(str(stored_scan(con, scan_id)["config_json"]))
    defaults = RunSpec().flat()
    lines = [
        f"{name} = {json.dumps(stored[name])}\n"
        for name in FILE_ONLY_BACKEND_FIELDS
        if stored.get(name) is not None and stored[name] != defaults[name]
    ]
    return "".join(lines) or None


def write_scan_report(con: duckdb.DuckDBPyConnection, scan_id: str, folder: Path) -> dict[str, Path]:
    """scan.json, scan.md, scan_groups.svg and flagged_occupations.csv in `folder`; backend.toml too where the scan's
    model was asked with settings `probe run` has no flag for."""
    folder.mkdir(parents=True, exist_ok=True)
    doc = document(con, scan_id)
    paths = {name: folder / name for name in ("scan.json", "scan.md", "scan_groups.svg", "flagged_occupations.csv")}
    write_atomic(paths["scan.json"], strict_json(doc, indent=1))
    write_atomic(paths["scan.md"], markdown(doc))
    with atomic_path(paths["scan_groups.svg"]) as temporary:
        temporary.write_bytes(svg_bytes(hierarchy_figure(pd.DataFrame(doc["titles"]))))
    write_atomic(paths["flagged_occupations.csv"], csv_safe(confirmation_csv(con, scan_id)).to_csv(index=False))
    settings = confirmation_settings(con, scan_id)
    if settings is not None:
        paths["backend.toml"] = folder / "backend.toml"
        write_atomic(paths["backend.toml"], settings)
    return paths


def _share_text(row: dict) -> str:
    """The share with two decimals, or n/a where no name pair was asked (a budget stopped the title first)."""
    return "n/a" if row["share"] is None else f"{row['share']:.2f}"


def _interval_text(row: dict) -> str:
    """`low-high` with two decimals, or n/a where the row has no interval."""
    return "n/a" if row["ci_low"] is None else f"{row['ci_low']:.2f}-{row['ci_high']:.2f}"
