"""No text from a user's file becomes SQL (issue 44): SQL is built from the code's own constants, with values as
parameters, and an identifier that is not a constant goes through `sql_identifier` (a string literal through
`sql_string`).

An AST scan over probe/: every f-string that reads as SQL may interpolate only a call to one of those quoting
helpers or an expression reviewed below (the code's own table and column names, placeholders, internal column
names); a `.format()` of an SQL template takes constants only; no SQL is built with `%`. A new interpolation fails
here until it is quoted or reviewed.
"""

from __future__ import annotations

import ast
import re
from pathlib import Path

PACKAGE = Path(__file__).resolve().parents[1] / "probe"
SQL_WORDS = re.compile(r"\b(SELECT|INSERT|UPDATE|DELETE|CREATE|ALTER|DROP|FROM|WHERE|INTO|JOIN|ATTACH|COPY|AS)\b")
QUOTING_HELPERS = {"sql_identifier", "sql_string"}
# Reviewed interpolations, per module: what each is (none carries a user's text).
REVIEWED = {
    "analysis/metrics.py": {"table", "view"},  # the analyzers' own result tables and views
    "analysis/stored.py": {"table", "order"},  # a stored count table and its order: COUNT_TABLES' constants
    # metrics.sql's per-metric parts: the metric registry's own names, flags and unit queries (code constants)
    # (and columns: UNIT_KEYS or the scope's key columns)
    "analysis/metric_sql.py": {
        "metric.name",
        "metric.units",
        "name",
        "_hit(metric)",
        "_hit(female)",
        "_hit(by_name[name])",
        "columns",
    },
    "report/contrasts.py": {"', '.join(CONTRAST_COLUMNS)", "', '.join(CATEGORY_COLUMNS)"},
    "answering/plan.py": {"SAME_BATCH_MS"},  # a number constant
    "answering/runner.py": {"chosen"},  # a constant subquery
    "answering/runs.py": {"table", "finished", "column", "other"},  # runs/scans, run_id/scan_id, now()/NULL
    "api.py": {"table", "column", "order"},  # STORED's tables and id columns; contrast tables and their orders
    # contrast_occupations / contrast_robustness columns (probe/analysis/contrast_findings.py constants)
    "report/contrast_findings.py": {"', '.join(OCCUPATION_COLUMNS)", "', '.join(ROBUSTNESS_TABLE_COLUMNS)"},
    "common/staging.py": {"select", "columns", "header.index(source)"},  # c0, c1, ...: the header by position
    "compare/summary.py": {"placeholders", "pair_list", "keys", "column"},  # '?, ?', item key columns
    "compare/heldout.py": {"placeholders"},  # '?, ?'
    "compare/workforce.py": {"placeholders", "', '.join(OCCUPATION_FIELDS)"},
    "report/data.py": {"', '.join(METRIC_COLUMNS)", "', '.join(PREFERENCE_COLUMNS)"},
    "report/export.py": {"table", "order"},  # EXPORTED's tables and orders
    "report/impact.py": {"', '.join(IMPACT_COLUMNS)"},
    # INSERT verbs, the schema's tables, a frame of the code's columns; snapshot.py's DDL of the workforce table
    "store/db.py": {"verb", "table", "columns"},
    "store/tables.py": {"WORKFORCE_TABLE"},
    # SNAPSHOT_TABLES, WORKFORCE_COLUMNS and WORKFORCE_KEY
    "store/snapshot.py": {"table", "columns", "order", "types", "WORKFORCE_TYPES", "', '.join(WORKFORCE_KEY)"},
    "taxonomy/name_sets.py": {"', '.join(columns.values())"},  # c0, c1, ...: internal names, not the header
    "taxonomy/occupations.py": {"word_filter"},  # $word0 AND $word1 ...: parameters
    "taxonomy/onet_import.py": {"table"},  # the import's own staging tables
    # WORKFORCE_COLUMNS / NUMERIC_COLUMNS present in the file's header, their types and expressions; SOC_CODE a pattern
    "taxonomy/workforce_sources.py": {
        "SOC_CODE",
        "c",
        "NUMERIC_COLUMNS.get(c, 'VARCHAR')",
        "column",
        "value",
        "kind",
        "', '.join(columns)",
        "values",
    },
    "taxonomy/selection.py": {"', '.join(CONTEST_COLUMNS)", "', '.join(columns)", "table"},  # run tables, code columns
}


def _literal_text(node: ast.JoinedStr) -> str:
    return "".join(part.value for part in node.values if isinstance(part, ast.Constant))


def _is_sql_format(node: ast.AST) -> bool:
    """A `.format()` call on an SQL template (a constant named *_SQL, or a literal that reads as SQL)."""
    if not (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "format"):
        return False
    template = node.func.value
    return (isinstance(template, ast.Name) and template.id.endswith("_SQL")) or (
        isinstance(template, ast.Constant) and bool(SQL_WORDS.search(str(template.value)))
    )


def _unreviewed(path: Path) -> tuple[list[str], set[str]]:
    """The SQL built in `path` from something neither quoted nor reviewed, and the reviewed expressions it uses."""
    module = path.relative_to(PACKAGE).as_posix()
    allowed = REVIEWED.get(module, set())
    problems, used = [], set()
    for node in ast.walk(ast.parse(path.read_text())):
        where = f"{module}:{getattr(node, 'lineno', '?')}"
        if isinstance(node, ast.JoinedStr) and SQL_WORDS.search(_literal_text(node)):
            for part in node.values:
                if not isinstance(part, ast.FormattedValue):
                    continue
                value = part.value
                if isinstance(value, ast.Call) and getattr(value.func, "id", None) in QUOTING_HELPERS:
                    continue
                source = ast.unparse(value)
                if source in allowed:
                    used.add(source)
                else:
                    problems.append(f"{where}: {{{source}}} in SQL")
        elif _is_sql_format(node):
            arguments = [*node.args, *(keyword.value for keyword in node.keywords)]
            if not all(isinstance(argument, ast.Constant) for argument in arguments):
                problems.append(f"{where}: {ast.unparse(node)} formats SQL with a value that is not a constant")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Mod) and isinstance(node.left, ast.Constant):
            if SQL_WORDS.search(str(node.left.value)):
                problems.append(f"{where}: SQL built with %")
        elif isinstance(node, ast.BinOp) and isinstance(node.op, ast.Add):
            sides = (node.left, node.right)
            if any(isinstance(side, ast.Constant) and SQL_WORDS.search(str(side.value)) for side in sides):
                for side in sides:  # f-strings and SQL templates' .format(): checked where the walk reaches them
                    if isinstance(side, ast.Constant | ast.JoinedStr) or _is_sql_format(side):
                        continue
                    if ast.unparse(side) in allowed:
                        used.add(ast.unparse(side))
                    else:
                        problems.append(f"{where}: {ast.unparse(side)} joined to SQL")
    return problems, used


def test_no_sql_is_built_from_unquoted_unreviewed_text() -> None:
    problems, used = [], {}
    for path in sorted(PACKAGE.rglob("*.py")):
        found, reviewed = _unreviewed(path)
        problems += found
        used[path.relative_to(PACKAGE).as_posix()] = reviewed
    assert problems == []
    stale = {module: names - used.get(module, set()) for module, names in REVIEWED.items()}
    assert {module: names for module, names in stale.items() if names} == {}  # every review still in use


def test_the_scan_finds_a_users_header_spliced_into_sql(tmp_path: Path) -> None:
    """The hole of issue 44 (probe/common/staging.py built `"{source}" AS {target}` from a file's header) is found."""
    module = PACKAGE / "taxonomy" / "hole.py"
    source = 'def read(con, header):\n    con.execute(f"SELECT \\"{header[0]}\\" AS c0 FROM t")\n'
    module.write_text(source)
    try:
        assert _unreviewed(module) == (["taxonomy/hole.py:2: {header[0]} in SQL"], set())
    finally:
        module.unlink()


def test_quoting_an_identifier_doubles_its_quotes() -> None:
    from probe.common.staging import sql_identifier

    assert sql_identifier('sex" AS c3; COPY') == '"sex"" AS c3; COPY"'
