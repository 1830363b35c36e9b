# One-command set-up: `make run` starts the whole system, `make test` runs the whole suite.
PYTHON ?= $(shell command -v python3.11 || command -v python3)
VENV := .venv
PY := $(VENV)/bin/python
# No byte-compiling of all 2 GB at install (over a minute on one core): a module is compiled on first import,
# and its bytecode kept, even where the environment turns that off: every process of a run (each test worker,
# each process a test starts, each role of `make run`) would otherwise compile all it imports again.
unexport PYTHONDONTWRITEBYTECODE
PIP := $(PY) -m pip --disable-pip-version-check
# uv installs the requirements (downloads and unpacks in parallel: about half pip's time for torch and the
# rest), from the sources pip is configured with on this machine (pip.conf and PIP_* variables: find-links,
# index URLs, constraints), choosing among them as pip does. pip itself is the fallback.
UV := $(VENV)/bin/uv
UV_VERSION := $(shell sed -n 's/^\(uv==[^ ]*\).*/\1/p' requirements-test.txt)
PIP_SOURCES = $(shell { $(PIP) config list || $(PYTHON) -m pip config list; } 2>/dev/null \
	| sed -nE "s/^[^.]*\.(find-links|index-url|extra-index-url|constraint)='(.*)'$$/\1 \2/p" \
	| awk '{ for (i = 2; i <= NF; i++) print "--" $$1 "=" $$i }' | sort -u)
UV_INSTALL = $(UV) pip install --python $(PY) --quiet --index-strategy unsafe-best-match \
	$(PIP_SOURCES)
PIP_INSTALL := $(PIP) install --quiet --no-compile
# $(call install,<pip arguments>): with uv, or with pip when uv cannot.
install = { $(UV_INSTALL) $(1) || { echo "==> uv could not install $(1); pip does"; $(PIP_INSTALL) $(1); }; }
# A stamp per requirements content: editing a requirements file reinstalls.
RUN_STAMP := $(VENV)/.run-$(shell cat requirements.txt requirements-scanner.txt | sha1sum | cut -c1-12)
NPM_LOCKS := tests/oidc/package-lock.json tests/conformance/package-lock.json
TEST_STAMP := $(VENV)/.test-$(shell cat requirements.txt requirements-scanner.txt requirements-test.txt $(NPM_LOCKS) \
	| sha1sum | cut -c1-12)

# Debian packages the tests run for real, as `command:package`.
TEST_PEERS := git:git nginx:nginx-light chromium:chromium chromium-headless-shell:chromium-headless-shell kubectl:kubernetes-client redis-server:redis-server ip:iproute2

.PHONY: run test lint install install-test system-packages bench clean

# The environment is made without pip when $(PYTHON) has pip of its own (venv's ensurepip takes about 7 s):
# that pip puts uv in, and uv puts pip in (the fallback installer) in a second.
$(PY):
	@echo "==> creating virtual environment in $(VENV) with $(PYTHON)"
	@if $(PYTHON) -m pip --version >/dev/null 2>&1; then \
		$(PYTHON) -m venv --without-pip $(VENV) && \
		$(PYTHON) -m pip --disable-pip-version-check --python $(PY) install --quiet $(UV_VERSION) && \
		$(UV_INSTALL) pip; \
	else \
		$(PYTHON) -m venv $(VENV) && $(PIP) install --quiet $(UV_VERSION); \
	fi

$(RUN_STAMP): $(PY) requirements.txt requirements-scanner.txt
	@echo "==> installing requirements.txt"
	@$(call install,-r requirements.txt)
	@$(call install,--no-deps -r requirements-scanner.txt)
	@touch $@

$(TEST_STAMP): $(PY) requirements.txt requirements-scanner.txt requirements-test.txt $(NPM_LOCKS)
	@echo "==> installing requirements-test.txt and, meanwhile, the npm peers of the tests" \
		"(OIDC provider, MCP conformance suite with Node 22)"
	@{ npm ci --prefix tests/oidc --no-audit --no-fund --silent && \
		npm ci --prefix tests/conformance --no-audit --no-fund --silent; } & npm=$$!; \
	{ $(call install,-r requirements-test.txt) && $(call install,--no-deps -r requirements-scanner.txt); } || \
		{ kill $$npm 2>/dev/null; exit 1; }; \
	wait $$npm || { echo "==> npm ci failed"; exit 1; }
	@touch $@ $(RUN_STAMP)

# Installs the missing test peers with apt-get as root; otherwise says so (their tests then fail clearly).
system-packages:
	@missing=""; for peer in $(TEST_PEERS); do \
		command -v $${peer%%:*} >/dev/null 2>&1 || [ -x /usr/sbin/$${peer%%:*} ] || missing="$$missing $${peer#*:}"; \
	done; \
	if [ -z "$$missing" ]; then exit 0; fi; \
	if [ "$$(id -u)" != 0 ] || ! command -v apt-get >/dev/null 2>&1; then \
		echo "==> cannot install$$missing (apt-get as root is needed); the tests that use them will fail"; exit 0; \
	fi; \
	echo "==> installing Debian packages:$$missing"; \
	export DEBIAN_FRONTEND=noninteractive; \
	apt-get install -y -qq --no-install-recommends $$missing >/dev/null 2>&1 || \
		{ apt-get update -qq && apt-get install -y -qq --no-install-recommends $$missing; } || \
		echo "==> apt-get could not install$$missing; the tests that use them will fail"

install: $(RUN_STAMP)
install-test: $(TEST_STAMP)

run: install
	$(PY) manage.py serve

lint: install-test
	$(VENV)/bin/ruff check .
	$(VENV)/bin/lint-imports --no-cache

test: install-test system-packages lint
	$(PY) -m pytest

clean:
	rm -rf $(VENV) var/test
