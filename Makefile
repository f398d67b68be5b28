# Entry points. `make demo` and `make test` work on a fresh Debian 12 machine as root (see README).
SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin
# This checkout's own collections folder (its committed link scc.nlp_training -> the checkout): nothing is shared
# with another checkout on the machine.
export ANSIBLE_COLLECTIONS_PATH := $(CURDIR)/.cache/collections
export PATH := $(CURDIR)/$(BIN):$(PATH)

.PHONY: bootstrap bootstrap-demo demo test lint sanity unit molecule e2e clean

## Everything the tests need (requirements/ci.txt); bootstrap-demo: only what the demo needs (requirements/demo.txt).
bootstrap:
	./scripts/bootstrap.sh test

bootstrap-demo:
	./scripts/bootstrap.sh demo

## The main job on the built-in local test cluster: test bed up, deploy, validate, a short BERT run.
demo: bootstrap-demo
	$(BIN)/sccnlp up

## What CI runs: lint, ansible-test sanity, unit tests, loopback integration tests, the 3-node cluster scenario, the GPU-stack and runtime ones, the demo end to end on nodes without egress, from an offline bundle (e2e).
test: bootstrap
	./scripts/test.sh

lint: bootstrap
	./scripts/test.sh lint

sanity: bootstrap
	./scripts/test.sh sanity

unit: bootstrap
	./scripts/test.sh unit

molecule: bootstrap
	./scripts/test.sh molecule

e2e: bootstrap
	./scripts/test.sh e2e

clean:
	-$(BIN)/sccnlp testbed down
	rm -rf $(VENV) .tox .pytest_cache .ruff_cache
