PY ?= python3.11
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: venv test test-all check lint demo bench clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV) || python3 -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[test,flower]'
	touch $(STAMP)

venv: $(STAMP)

test: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 tests

test-all: $(STAMP)
	$(BIN)/python -m pytest -q -n 2 -m '' tests

lint: $(STAMP)
	$(BIN)/ruff check selection fl_oracle tests benchmarks
	$(BIN)/ruff format --check selection fl_oracle tests benchmarks
	$(BIN)/lint-imports

check: lint test

demo: $(STAMP)
	$(BIN)/fedsel demo --out results/demo

bench: $(STAMP)
	$(BIN)/python benchmarks/solvers.py
	$(BIN)/python benchmarks/domains.py
	$(BIN)/python benchmarks/oracle.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache
