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
from typing import TYPE_CHECKING

from typer.core import TyperGroup

if TYPE_CHECKING:  # typer builds its commands on its own copy of click: these are its types
    from typer.core import TyperCommand

    Command = TyperCommand | TyperGroup

CLI_MARKER = "<!-- cli-reference -->"
SCHEMA_MARKER = re.compile(r"<!-- schema: (\w+) -->")
FENCE = re.compile(r"^\s*```")
INLINE_CODE = re.compile(r"`([^`]+)`")
SHELL_OPERATORS = {">", ">>", "2>", "|", "||", "&&", ";", "&"}


class CommandLineError(ValueError):
    """A command line of the manual that `probe` would refuse."""


def probe_command() -> TyperGroup:
    """The `probe` command line as click sees it (typer builds it)."""
    import typer

    from probe.cli import app

    return typer.main.get_command(app)


def command_paths(group: TyperGroup, prefix: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], Command]]:
    """Every command and subcommand under `group`, depth first in the order `probe --help` lists them."""
    ctx = group.context_class(group, info_name="probe")
    for name in group.list_commands(ctx):
        command = group.get_command(ctx, name)
        if command is None or command.hidden:
            continue
        yield (*prefix, name), command
        if isinstance(command, TyperGroup):
            yield from command_paths(command, (*prefix, name))


def plain_help(path: tuple[str, ...], command: Command) -> str:
    """A command's --help as the terminal prints it with TYPER_USE_RICH=0 (plain click layout, no boxes)."""
    import typer.core

    root = probe_command()
    parent = root.context_class(root, info_name="probe")
    for name in path[:-1]:
        group = parent.command.get_command(parent, name)
        parent = group.context_class(group, info_name=name, parent=parent)
    context = command.context_class(
        command,
        info_name=path[-1] if path else "probe",
        parent=parent if path else None,
        terminal_width=100,
        max_content_width=100,
    )
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
                pending = text[:-1].rstrip() + " "
                continue
            command = re.sub(r"^([A-Z_]+=\S+\s+)+", "", text.strip())
            if command.startswith("probe "):
                yield command


def _arguments(command_line: str) -> list[str]:
    """The words after `probe` up to a shell operator (a redirection, a pipe), without a comment, and the manual's
    placeholders made concrete: `[...]`
    optional parts kept, `a|b` alternatives take the first, a lone `...` (more options) dropped unless it is an
    option's value."""
    words = shlex.split(command_line, comments=True)[1:]
    ends = [index for index, word in enumerate(words) if word in SHELL_OPERATORS]
    concrete: list[str] = []
    for word in words[: ends[0] if ends else None]:
        word = word.strip("[]")
        if word == "..." and not (concrete and concrete[-1].startswith("--")):
            continue
        concrete.append(word.split("|")[0] if "|" in word and not word.startswith("|") else word)
    return [word for word in concrete if word]


def parse_command_line(command_line: str) -> None:
    """Parse `probe ...` with the CLI's own option parser, without running it: an unknown command, an unknown
    option, an option without its value or an argument too many raises (CommandLineError, or typer's usage error).
    Values are neither converted nor checked (a file named in the manual need not exist here), and no callback
    runs (--help and --version parse as the flags they are)."""
    command: Command = probe_command()
    args, parent, name = _arguments(command_line), None, "probe"
    while True:
        context = command.context_class(command, info_name=name, parent=parent, **command.context_settings)
        _, rest, _ = command.make_parser(context).parse_args(list(args))
        if not isinstance(command, TyperGroup):
            if rest:
                raise CommandLineError(f"{command_line}: unexpected extra arguments {rest}")
            return
        if not rest:
            return
        subcommand = command.get_command(context, rest[0])
        if subcommand is None:
            raise CommandLineError(f"{command_line}: no such command {rest[0]!r}")
        command, parent, name, args = subcommand, context, rest[0], rest[1:]


def manual_files(root: Path) -> list[Path]:
    """README.md and every page of the manual."""
    return [root / "README.md", *sorted((root / "docs").glob("*.md"))]
