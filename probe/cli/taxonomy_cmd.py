"""`probe taxonomy ...`: import an O*NET release, show an occupation's top attributes, search titles."""

from pathlib import Path
from typing import Annotated

import typer
from rich.table import Table

from probe.cli.app import DbOption, app
from probe.common.escape import literal_console, terminal_text
from probe.pipeline import taxonomy
from probe.pipeline.front import DEFAULT_DB, occupations

taxonomy_app = typer.Typer(help="The O*NET occupation-attribute store.", no_args_is_help=True)
app.add_typer(taxonomy_app, name="taxonomy")


@taxonomy_app.command("import")
def import_command(
    path: Annotated[Path, typer.Argument(help="An O*NET text release: its folder or its .zip.")],
    db: DbOption = DEFAULT_DB,
) -> None:
    """Replace the O*NET ratings and titles with a release; all or nothing."""
    summary = taxonomy.import_release(db, path)
    literal_console().print(
        f"imported {summary['release']} from {path} into {db}: {summary['occupations']:,} occupations "
        f"({summary['rated_occupations']:,} rated), {summary['alternate_titles']:,} alternate titles, "
        f"{summary['attribute_ratings']:,} attribute ratings; {summary['curated_occupations']} curated "
        f"occupations with {summary['occupation_attributes']:,} top-{occupations.DEFAULT_TOP_K} attributes"
    )


@taxonomy_app.command("show")
def show_command(
    occupation: Annotated[str, typer.Argument(help="A curated occupation, an O*NET-SOC code or an O*NET title.")],
    top_k: Annotated[int, typer.Option("--top-k", help="Attributes per category.")] = occupations.DEFAULT_TOP_K,
    db: DbOption = DEFAULT_DB,
) -> None:
    """Print an occupation's top skills, knowledge and abilities with their O*NET importance and level."""
    shown = taxonomy.show(db, occupation, top_k)
    row, attributes = shown.occupation, shown.attributes
    table = Table(
        title=f"{row.occupation}: {row.soc_code} {row.onet_title}",
        caption=" ".join(part for part in (row.note, _release_line(shown.release)) if isinstance(part, str) and part),
    )
    for column in ("category", "rank", "attribute"):
        table.add_column(column)
    table.add_column("importance (1-5)", justify="right")
    table.add_column("level (0-7)", justify="right")
    for category, group in attributes.groupby("category", sort=False):
        for position, item in enumerate(group.itertuples()):
            table.add_row(
                category if position == 0 else "",
                str(item.rank),
                terminal_text(item.element_name),
                f"{item.importance:.2f}",
                f"{item.level:.2f}",
                end_section=position == len(group) - 1,
            )
    literal_console().print(table)


def _release_line(release: str | None) -> str:
    return f"Source: {release} (O*NET, USDOL/ETA, CC BY 4.0)." if release else ""


@taxonomy_app.command("search")
def search_command(
    text: Annotated[str, typer.Argument(help="Words of an O*NET title or alternate title.")],
    limit: Annotated[int, typer.Option("--limit", help="Most rows to show.")] = 20,
    db: DbOption = DEFAULT_DB,
) -> None:
    """Find O*NET occupations by title or alternate title; rated ones can be probed (pass the code)."""
    found = taxonomy.search(db, text, limit)
    if found.empty:
        literal_console().print(f"no O*NET title or alternate title contains {text!r}")
        return
    table = Table(title=f"O*NET occupations matching {text!r}")
    for column in ("soc_code", "title", "matched title", "match", "ratings", "curated as"):
        table.add_column(column)
    for item in found.itertuples():
        cells = (
            item.soc_code,
            item.title,
            item.matched_title,
            item.match,
            "yes" if item.has_ratings else "no",
            item.curated_as if isinstance(item.curated_as, str) else "",
        )
        table.add_row(*(terminal_text(cell) for cell in cells))  # titles come from O*NET files
    literal_console().print(table)
