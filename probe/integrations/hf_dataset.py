"""`probe export --format hf-dataset`: a folder `datasets.load_dataset(DIR, CONFIG)` loads as it is, ready for
`huggingface-cli upload`.

data/<configuration>.parquet per configuration (stage1; taxonomy, baseline, control; answers with option scores),
each one `test` split, and README.md: the dataset card, whose YAML header is the Hub's metadata (configs,
features, licences, size) and whose body says how the items were built, their licences and the paper.
"""

from __future__ import annotations

from pathlib import Path

import jinja2
import pyarrow as pa
import pyarrow.parquet as pq
import yaml

from probe.common.escape import markdown_text, write_atomic
from probe.common.version import __version__
from probe.integrations.source import ANSWERS, Exported

SPLIT = "test"
TEMPLATES = jinja2.Environment(
    loader=jinja2.FileSystemLoader(Path(__file__).with_name("templates")),
    undefined=jinja2.StrictUndefined,
    trim_blocks=True,
    lstrip_blocks=True,
    keep_trailing_newline=True,
)
TEMPLATES.filters["md"] = markdown_text
TEMPLATES.filters["listing"] = lambda value: ", ".join(map(str, value)) if isinstance(value, list) else value
# The Hub's size buckets (size_categories), by upper bound.
SIZE_CATEGORIES = ((1_000, "n<1K"), (10_000, "1K<n<10K"), (100_000, "10K<n<100K"), (1_000_000, "100K<n<1M"))


def data_path(configuration: str) -> str:
    """Where a configuration's rows are, relative to the dataset folder."""
    return f"data/{configuration}.parquet"


def write_tables(exported: Exported, out_dir: Path) -> dict[str, pa.Table]:
    """The configurations' Parquet files under out_dir/data/; returns them by name (dataset order)."""
    tables = exported.item_rows()
    answers = exported.answer_rows()
    if answers is not None:
        tables[ANSWERS] = answers
    for name, table in tables.items():
        path = out_dir / data_path(name)
        path.parent.mkdir(parents=True, exist_ok=True)
        sink = pa.BufferOutputStream()
        pq.write_table(table, sink)
        write_atomic(path, sink.getvalue().to_pybytes())
    return tables


def write_dataset(exported: Exported, out_dir: Path) -> list[Path]:
    """The dataset folder: Parquet per configuration and the card; returns the files written."""
    tables = write_tables(exported, out_dir)
    card = out_dir / "README.md"
    write_atomic(card, dataset_card(exported, tables))
    return [*(out_dir / data_path(name) for name in tables), card]


def dataset_card(exported: Exported, tables: dict[str, pa.Table]) -> str:
    """README.md: the Hub's YAML metadata, then what the data is, how it was built, licences and citation."""
    rows = {name: table.num_rows for name, table in tables.items()}
    total = sum(count for name, count in rows.items() if name != ANSWERS)
    metadata = {
        "pretty_name": "Taxonomy-based gender-bias probe" + (f" (run {exported.run_id})" if exported.run_id else ""),
        "language": ["en"],
        "license": ["cc-by-4.0", "apache-2.0"],
        "task_categories": ["question-answering", "multiple-choice"],
        "tags": ["gender-bias", "fairness", "o-net", "checklist", "taxonomy-probe"],
        "size_categories": [next((name for bound, name in SIZE_CATEGORIES if total < bound), "1M<n<10M")],
        "configs": [{"config_name": name, "data_files": [{"split": SPLIT, "path": data_path(name)}]} for name in rows],
        "dataset_info": [
            {
                "config_name": name,
                "features": _features(table.schema),
                "splits": [{"name": SPLIT, "num_bytes": table.nbytes, "num_examples": table.num_rows}],
            }
            for name, table in tables.items()
        ],
    }
    header = yaml.safe_dump(metadata, sort_keys=False, allow_unicode=True, width=1000)
    body = TEMPLATES.get_template("dataset_card.md.j2").render(
        exported=exported, rows=rows, answers=ANSWERS, version=__version__
    )
    return f"---\n{header}---\n\n{body}"


def _features(schema: pa.Schema) -> list[dict[str, str]]:
    """The `datasets` feature list of a Parquet schema, as the card's YAML spells it."""
    features = []
    for field in schema:
        if pa.types.is_list(field.type):
            features.append({"name": field.name, "list": _dtype(field.type.value_type)})
        else:
            features.append({"name": field.name, "dtype": _dtype(field.type)})
    return features


def _dtype(arrow_type: pa.DataType) -> str:
    return {pa.string(): "string", pa.int64(): "int64", pa.float64(): "float64"}[arrow_type]
