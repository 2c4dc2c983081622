"""Shared fixtures."""

import json
import re
import shutil
from collections.abc import Iterator
from pathlib import Path

import duckdb
import pytest

from probe import pipeline
from probe.common.resources import resource_dir
from probe.dataset import prompts
from probe.report import render
from probe.scanning import rounds
from probe.store import db
from tests.documents import check_document
from tests.support import ONET_RELEASE, FakeBackend


@pytest.fixture(scope="session", autouse=True)
def private_cache(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    """Model hashes and converted GGUFs go to a folder of this session, not the user's ~/.cache."""
    folder = tmp_path_factory.mktemp("cache")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("XDG_CACHE_HOME", str(folder))
        yield folder


@pytest.fixture(scope="session", autouse=True)
def documents_follow_their_schema() -> Iterator[None]:
    """Every report.json and compare.json any test writes is validated against its published JSON Schema (the one
    place both are written: probe.report.render.write_files, through write_atomic)."""
    write_atomic = render.write_atomic

    def write_checked(path: Path, content: str | bytes) -> None:
        if Path(path).suffix == ".json":
            check_document(json.loads(content))
        write_atomic(path, content)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(render, "write_atomic", write_checked)
        yield


@pytest.fixture
def onet_release() -> Path:
    if not ONET_RELEASE.is_dir():
        pytest.skip(f"O*NET release not found at {ONET_RELEASE}")
    return ONET_RELEASE


@pytest.fixture(scope="session")
def seeded_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A database seeded once from the shipped taxonomy snapshot; tests take copies of it."""
    path = tmp_path_factory.mktemp("seed") / "probe.duckdb"
    db.connect(path).close()
    return path


@pytest.fixture
def runs_db_file(runs_db: Path, tmp_path: Path) -> Path:
    """A fresh copy of runs_db (the steady, first and narrow runs), for tests that write to it."""
    return Path(shutil.copy(runs_db, tmp_path / "probe.duckdb"))


@pytest.fixture(scope="session")
def runs_db(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """One database with three replay runs (not yet analysed): steady, first-named, and a narrower one (the rules of
    tests/report/test_report.py). Built once a session for the report's and the gates' tests, which take copies."""
    from tests.report.test_report import first_named_choice, replay_run, steady_choice

    tmp = tmp_path_factory.mktemp("report")
    db_file = tmp / "probe.duckdb"
    replay_run(db_file, tmp, "steady", steady_choice)
    replay_run(db_file, tmp, "first", first_named_choice)
    replay_run(db_file, tmp, "narrow", steady_choice, occupations=("nurse", "pilot"), top_k=1)
    return db_file


@pytest.fixture
def db_file(seeded_db: Path, tmp_path: Path) -> Path:
    """A fresh copy of the seeded database (seeding once keeps the tests fast)."""
    return Path(shutil.copy(seeded_db, tmp_path / "probe.duckdb"))


@pytest.fixture
def use_backend(monkeypatch: pytest.MonkeyPatch):
    """Make runs and scans answer with the given backend instance (both places that create a backend)."""

    def install(backend: FakeBackend) -> FakeBackend:
        for module in (pipeline, rounds):
            monkeypatch.setattr(module, "create_backend", lambda config: backend)
        return backend

    return install


@pytest.fixture
def con() -> Iterator[duckdb.DuckDBPyConnection]:
    """An in-memory database with the product's schema and no taxonomy: for hand-built runs (RunBuilder)."""
    connection = duckdb.connect()
    connection.execute(db.SCHEMA)
    yield connection
    connection.close()


@pytest.fixture
def broken_prompts(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A copy of prompts/ that the renderer reads instead of the shipped one (caches cleared around it)."""
    copy = tmp_path / "prompts"
    shutil.copytree(resource_dir("prompts"), copy)
    monkeypatch.setattr(prompts, "resource_dir", lambda name: copy)
    prompts._environment.cache_clear()
    prompts.attribute_sentence.cache_clear()
    prompts._context.cache_clear()
    yield copy
    prompts._environment.cache_clear()
    prompts.attribute_sentence.cache_clear()
    prompts._context.cache_clear()


# The slowest test files (CPU seconds, each measured alone: BENCHMARKS.md, "make test: the slowest files first"),
# handed out first to `make test`'s two processes (xdist with --no-loadscope-reorder keeps this order; its default
# would start the files with the fewest tests last, and a long one of them would leave the other process idle).
SLOWEST_FIRST = (
    "tests/backends/test_engine_agreement.py",
    "tests/backends/test_cached_runs.py",
    "tests/integrations/test_lm_eval_roundtrip.py",
    "tests/backends/test_served_llamacpp.py",
    "tests/backends/test_backend_hf_causal.py",
    "tests/cli/test_bad_input.py",
    "tests/answering/test_reliability_kill.py",
    "tests/integrations/test_inspect_roundtrip.py",
    "tests/report/test_report_pages.py",
    "tests/store/test_study.py",
    "tests/report/test_report.py",
    "tests/report/test_findings.py",
    "tests/answering/test_plan.py",
    "tests/store/test_bad_files.py",
    "tests/backends/test_gemma.py",
    "tests/gates/test_gate_example.py",
    "tests/backends/test_failing_servers.py",
    "tests/backends/test_backend_llamacpp.py",
    "tests/cli/test_refused_input.py",
    "tests/cli/test_runs_cli.py",
    "tests/cli/test_hostile_input.py",
    "tests/backends/test_hostile_replies.py",
)


def serial_files() -> list[str]:
    """The Makefile's SERIAL_FILES: the only files `make test`'s serial phase collects (its parallel phase
    deselects every `serial` test)."""
    makefile = Path(__file__).resolve().parents[1] / "Makefile"
    assignment = re.search(r"^SERIAL_FILES\s*[:?]?=((?:.*\\\n)*.*)$", makefile.read_text(), re.MULTILINE)
    if assignment is None:
        raise pytest.UsageError(f"{makefile}: no SERIAL_FILES = line (the files of `make test`'s serial phase)")
    return assignment.group(1).replace("\\\n", " ").split()


def serial_tests_outside_the_serial_files(items: list[pytest.Item]) -> list[str]:
    """The `serial` tests among `items` that no file of SERIAL_FILES holds: `make test` would run them in neither
    phase."""
    serial = [item.nodeid for item in items if item.get_closest_marker("serial") is not None]
    named = set(serial_files()) if serial else set()
    return [nodeid for nodeid in serial if nodeid.partition("::")[0] not in named]


@pytest.hookimpl(tryfirst=True)  # before `-m 'not serial'` deselects them
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """A `serial` test outside SERIAL_FILES fails the run; then the files of SLOWEST_FIRST first, in its order, and
    every other file after them, in collection order."""
    stray = serial_tests_outside_the_serial_files(items)
    if stray:
        raise pytest.UsageError(
            f"{stray[0]}: marked serial, but its file is not in the Makefile's SERIAL_FILES (`make test` would run "
            "it in neither phase); add the file there"
        )
    rank = {path: index for index, path in enumerate(SLOWEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.partition("::")[0], len(rank)))
