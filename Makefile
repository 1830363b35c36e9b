# One-command set-up: `make run` starts the whole system, `make test` runs the whole suite.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
PIP := $(PY) -m pip --disable-pip-version-check
# A stamp per requirements content: editing a requirements file reinstalls.
RUN_STAMP := $(VENV)/.run-$(shell cat requirements.txt | sha1sum | cut -c1-12)
TEST_STAMP := $(VENV)/.test-$(shell cat requirements.txt requirements-test.txt tests/oidc/package-lock.json | sha1sum | cut -c1-12)

.PHONY: run test lint install install-test bench clean

$(PY):
	@echo "==> creating virtual environment in $(VENV) with $(PYTHON)"
	$(PYTHON) -m venv $(VENV)
	$(PIP) install --quiet --upgrade pip

$(RUN_STAMP): $(PY) requirements.txt
	@echo "==> installing requirements.txt"
	$(PIP) install --quiet -r requirements.txt
	@touch $@

$(TEST_STAMP): $(PY) requirements.txt requirements-test.txt tests/oidc/package-lock.json
	@echo "==> installing requirements-test.txt"
	$(PIP) install --quiet -r requirements-test.txt
	npm ci --prefix tests/oidc --no-audit --no-fund --silent
	@touch $@ $(RUN_STAMP)

install: $(RUN_STAMP)
install-test: $(TEST_STAMP)

run: install
	$(PY) manage.py serve

lint: install-test
	$(VENV)/bin/ruff check .

test: install-test lint
	$(PY) -m pytest

clean:
	rm -rf $(VENV) var/test
