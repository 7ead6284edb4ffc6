# Every target does its own set-up: a fresh clone needs only python3 (>= 3.11) and make.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed

.PHONY: run test lint bench demo soak clean

$(STAMP): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $(STAMP)

# make run ARGS=--emulate: the offline quick start (strict emulators, no keys).
run: $(STAMP)
	$(BIN)/toolcall-guard serve $(ARGS)

test: $(STAMP)
	$(BIN)/pytest -q

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy proxy

demo: $(STAMP)
	$(BIN)/python -m proxy.demo

bench: $(STAMP)
	$(BIN)/python -m bench

soak: $(STAMP)
	$(BIN)/python -m bench.soak

clean:
	rm -rf $(VENV) data .mypy_cache .ruff_cache
