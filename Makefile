# Every target does its own set-up: a fresh clone needs only python3 (>= 3.11) and make.
# Two installs into one .venv: `make run` installs the runtime alone (the proxy's dependencies
# and the SDKs the README's examples use; no test tools), `make test` adds the development
# set (`.[dev]`: test tools, linters, the client libraries the suite drives).
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
RUNTIME_STAMP := $(VENV)/.installed-runtime
DEV_STAMP     := $(VENV)/.installed-dev
VERSION := $(shell sed -n 's/^version = "\(.*\)"$$/\1/p' pyproject.toml)
# The tag deploy/kubernetes/*.yaml run: `make image` builds exactly it.
IMAGE   ?= toolcall-guard:$(VERSION)

.PHONY: run test lint bench demo soak image docker-test clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)

$(RUNTIME_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet -e '.[quickstart]'
	touch $@

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	touch $@ $(RUNTIME_STAMP)

# make run ARGS=--emulate: the offline quick start (strict emulators, no keys).
run: $(RUNTIME_STAMP)
	$(BIN)/toolcall-guard serve $(ARGS)

test: $(DEV_STAMP)
	$(BIN)/pytest -q

lint: $(DEV_STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/mypy proxy

# make demo ARGS='--emulate --port 28780': the closing line points at that port.
demo: $(RUNTIME_STAMP)
	$(BIN)/python -m proxy.demo $(ARGS)

bench: $(DEV_STAMP)
	$(BIN)/python -m bench

soak: $(DEV_STAMP)
	$(BIN)/python -m bench.soak

# The container image, tagged as the Kubernetes manifests expect (needs a Docker engine). Its
# base: the official python:3.11-slim, or one made from Debian's packages when no registry
# answers (deploy/base-image.sh).
image:
	docker build --build-arg BASE_IMAGE=$$(deploy/base-image.sh) -t $(IMAGE) .

# Builds the image, runs it, sends a broken history through it, reads the record back after a
# restart, validates docker-compose.yml (deploy/docker-test.sh; needs a Docker engine).
docker-test:
	IMAGE=$(IMAGE) deploy/docker-test.sh

clean:
	rm -rf $(VENV) data .mypy_cache .ruff_cache
