"""The manual's generated pages and its command check, written from the code so they cannot drift from it.

The MkDocs hooks (mkdocs.yml `hooks:`) fill the CLI reference from the commands' own --help and the report schema
page from the published JSON Schemas; tests/test_docs.py parses every `probe ...` line of the manual with
`parse_command_line`. Offline: nothing here reaches the network.
"""

from __future__ import annotations

import json
import re
import shlex
from collections.abc import Iterator
from pathlib import Path

import click

CLI_MARKER = "<!-- cli-reference -->"
SCHEMA_MARKER = re.compile(r"<!-- schema: (\w+) -->")
FENCE = re.compile(r"^\s*```")
INLINE_CODE = re.compile(r"`([^`]+)`")


def probe_command() -> click.Group:
    """The `probe` command line as click sees it (typer builds it)."""
    import typer

    from probe.cli import app

    return typer.main.get_command(app)


def command_paths(group: click.Group, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], click.Command]]:
    """Every command and subcommand under `group`, depth first in the order `probe --help` lists them."""
    ctx = click.Context(group, info_name="probe")
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        yield (*prefix, name), command
        if isinstance(command, click.Group):
            yield from command_paths(command, (*prefix, name))


def plain_help(path: tuple[str, ...], command: click.Command) -> str:
    """A command's --help as the terminal prints it with TYPER_USE_RICH=0 (plain click layout, no boxes)."""
    import typer.core

    parent = click.Context(probe_command(), info_name="probe")
    for name in path[:-1]:
        parent = click.Context(parent.command.get_command(parent, name), info_name=name, parent=parent)
    context = click.Context(command, info_name=path[-1] if path else "probe", parent=parent if path else None,
                            terminal_width=100, max_content_width=100)
    with_rich = typer.core.HAS_RICH
    typer.core.HAS_RICH = False
    try:
        return command.get_help(context)
    finally:
        typer.core.HAS_RICH = with_rich


def cli_reference() -> str:
    """Markdown: `probe --help`, then a section per command with its --help."""
    root = probe_command()
    sections = ["## probe", "", "```text", plain_help((), root), "```", ""]
    for path, command in command_paths(root):
        sections += [f"## probe {' '.join(path)}", "", "```text", plain_help(path, command), "```", ""]
    return "\n".join(sections)


def schema_block(name: str) -> str:
    """A published JSON Schema as a fenced JSON block."""
    from probe.report.schema import published_schema

    return "```json\n" + json.dumps(published_schema(name), indent=2) + "\n```"


def on_page_markdown(markdown: str, page, config, files) -> str:  # the signature MkDocs calls hooks with
    """MkDocs hook: fills the generated parts of cli.md and schema.md."""
    if CLI_MARKER in markdown:
        markdown = markdown.replace(CLI_MARKER, cli_reference())
    return SCHEMA_MARKER.sub(lambda match: schema_block(match.group(1)), markdown)


def shell_lines(markdown: str) -> Iterator[str]:
    """Every line of a code block, and every inline code span, that starts with `probe ` (environment variables
    before it dropped; a trailing backslash joins the next line)."""
    in_fence, pending = False, ""
    for line in markdown.splitlines():
        if FENCE.match(line):
            in_fence, pending = not in_fence, ""
            continue
        candidates = [pending + line.strip()] if in_fence else INLINE_CODE.findall(line)
        pending = ""
        for text in candidates:
            if in_fence and text.endswith("\\"):
                pending = text[:-1] + " "
                continue
            command = re.sub(r"^([A-Z_]+=\S+\s+)+", "", text.strip())
            if command.startswith("probe "):
                yield command


def _arguments(command_line: str) -> list[str]:
    """The words after `probe`, with a comment dropped and the manual's placeholders made concrete: `[...]`
    optional parts kept, `a|b` alternatives take the first, a lone `...` (more options) dropped unless it is an
    option's value."""
    words = shlex.split(command_line, comments=True)[1:]
    concrete: list[str] = []
    for word in words:
        word = word.strip("[]")
        if word == "..." and not (concrete and concrete[-1].startswith("--")):
            continue
        concrete.append(word.split("|")[0] if "|" in word and not word.startswith("|") else word)
    return [word for word in concrete if word]


def parse_command_line(command_line: str) -> None:
    """Parse `probe ...` as the CLI would, without running it; raises click.UsageError on an unknown command or
    option, an option without its value, or an argument too many. Values are not converted (a file named in the
    manual need not exist here)."""
    command: click.Command = probe_command()
    args, parent, name = _arguments(command_line), None, "probe"
    while True:
        context = command.make_context(name, list(args), parent=parent, resilient_parsing=True)
        if not isinstance(command, click.Group):
            if context.args:
                raise click.UsageError(f"unexpected extra arguments {context.args}", context)
            return
        rest = [*context._protected_args, *context.args]
        if not rest:
            return
        name, subcommand, args = command.resolve_command(context, rest)
        if subcommand is None:
            raise click.UsageError(f"no such command {rest[0]!r}", context)
        command, parent = subcommand, context


def manual_files(root: Path) -> list[Path]:
    """README.md and every page of the manual."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]
