# One entry point for people, pre-commit and CI alike.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install lint test test-fast bench run loadtest clean docs

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[dev]"
	touch $(STAMP)

install: $(STAMP)

lint: install
	$(BIN)/ruff check core workers api threadfold loadtests bench tests
	$(BIN)/mypy

# The README's test command: installs, lints, then runs every test.
test: lint
	$(BIN)/python -m pytest -n 2 -m "not serial"
	$(BIN)/python -m pytest -m serial

test-fast: install
	$(BIN)/python -m pytest -m "not differential and not slow"

# A benchmark of bench/ (`threadfold bench --help` lists them): make bench BENCH="redis --quick".
BENCH ?= core
bench: install
	$(BIN)/threadfold bench $(BENCH)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache .hypothesis

# The main job on a fresh machine: install, then the whole local stack (a private
# redis-server unless REDIS_URL is set) with the demo conversation. Ctrl-C stops it.
run: install
	$(BIN)/threadfold up --demo

loadtest: install
	$(BIN)/threadfold loadtest --duration $${DURATION:-60} --users $${USERS:-50}
