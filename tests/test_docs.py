"""The manual: every `probe ...` command line of README.md and docs/ parses as the CLI would parse it, the CLI
reference lists every command with its own --help, and the README stays short (issue 47, item 7).

The build itself (`mkdocs build --strict`) runs in `make test`, before the tests."""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]


def _manual_module():
    spec = importlib.util.spec_from_file_location("docs_commands", ROOT / "docs" / "commands.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


commands = _manual_module()
MANUAL_LINES = [
    (path.relative_to(ROOT).as_posix(), line)
    for path in commands.manual_files(ROOT)
    for line in commands.shell_lines(path.read_text())
]


def test_the_manual_has_command_lines_in_every_kind_of_place() -> None:
    pages = {page for page, _ in MANUAL_LINES}
    assert {"README.md", "docs/getting-started.md", "docs/gates.md", "docs/scan.md", "docs/backends.md"} <= pages
    assert len(MANUAL_LINES) >= 100


@pytest.mark.parametrize(("page", "line"), MANUAL_LINES, ids=[f"{page}:{line[:60]}" for page, line in MANUAL_LINES])
def test_every_command_line_of_the_manual_parses(page: str, line: str) -> None:
    commands.parse_command_line(line)


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("probe runz --preset quick", "no such command 'runz'"),
        ("probe run extra", "unexpected extra arguments ['extra']"),
        ("probe taxonomy shows doctor", "no such command 'shows'"),
        ("probe schema report compare", "unexpected extra arguments ['compare']"),
    ],
)
def test_a_command_line_the_cli_would_refuse_is_caught(line: str, message: str) -> None:
    with pytest.raises(commands.CommandLineError, match="^" + line.replace("[", r"\[") + ": "):
        commands.parse_command_line(line)
    with pytest.raises(commands.CommandLineError) as caught:
        commands.parse_command_line(line)
    assert str(caught.value).endswith(message)


@pytest.mark.parametrize(
    ("line", "message"),
    [("probe run --presets quick", "No such option: --presets"), ("probe gate RUN --policy", "requires an argument")],
)
def test_an_unknown_option_or_a_missing_value_is_caught(line: str, message: str) -> None:
    with pytest.raises(Exception, match=message) as caught:  # typer's own UsageError (its copy of click)
        commands.parse_command_line(line)
    assert type(caught.value).__name__ in ("NoSuchOption", "BadOptionUsage")


def test_placeholders_and_shell_around_a_command_are_read_as_the_reader_would() -> None:
    assert commands._arguments("probe export RUN_ID --format hf-dataset|lm-eval|inspect -o DIR") == [
        "export",
        "RUN_ID",
        "--format",
        "hf-dataset",
        "-o",
        "DIR",
    ]
    assert commands._arguments("probe run --names names.csv ...   # your own pairs") == ["run", "--names", "names.csv"]
    assert commands._arguments("probe run --model ...") == ["run", "--model", "..."]
    assert commands._arguments("probe schema report > report.schema.json") == ["schema", "report"]
    assert commands._arguments("probe compare A B [--heldout-metric bias|consistency]") == [
        "compare",
        "A",
        "B",
        "--heldout-metric",
        "bias",
    ]
    text = "```bash\nOPENAI_API_KEY=... probe run --backend openai \\\n    --model m\n```\nsee `probe runs` and `ls`"
    assert list(commands.shell_lines(text)) == ["probe run --backend openai --model m", "probe runs"]


def test_the_cli_reference_gives_every_command_its_own_help() -> None:
    reference = commands.cli_reference()
    paths = [" ".join(path) for path, _ in commands.command_paths(commands.probe_command())]
    assert {"run", "report", "compare", "gate", "scan", "schema", "batch export", "import lm-eval"} <= set(paths)
    for path in paths:
        assert f"\n## probe {path}\n" in reference
    assert "Usage: probe schema [OPTIONS] {document}" in reference
    assert "╭" not in reference  # plain click layout, no rich boxes


def test_the_readme_is_short_and_keeps_its_two_commands() -> None:
    readme = (ROOT / "README.md").read_text()
    assert len(readme.splitlines()) < 200
    assert "make demo" in readme and "make test" in readme
    makefile = (ROOT / "Makefile").read_text()
    assert "\ndemo: " in makefile and "\ntest: " in makefile and "mkdocs build --strict" in makefile


def test_every_page_of_the_manual_is_in_its_navigation() -> None:
    nav = (ROOT / "mkdocs.yml").read_text()
    pages = {path.name for path in (ROOT / "docs").glob("*.md")}
    assert {page for page in pages if f": {page}\n" not in nav} == set()
