# The two commands: `make run` (worker + embedded Temporal dev server) and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
# The commit before the scale work: bench-scale measures the worker's CPU against it.
SCALE_BASELINE := 4410f6b
CONFIG ?= examples/toolcalls.toml
# Python caches compiled modules (__pycache__, ignored by git) even where the environment says
# not to: every `toolcalls` command, worker and helper process a test starts would otherwise
# compile the package's modules again (about 0.35 s of CPU each).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: run test test-servers test-browser lint typecheck docs check dist record-histories bench bench-overhead bench-inline bench-search bench-documents bench-scale bench-sandbox clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,documents,integrations,codec,s3,otel,mcp,inbox,docs,pydantic-ai,openai-agents,langgraph,cedar]'
	touch $(STAMP)

# The example deployment's file tools work under this folder (examples/toolcalls.toml).
SCRATCH := /tmp/toolcalls-scratch

run: $(STAMP)
	mkdir -p $(SCRATCH)
	$(BIN)/toolcalls worker --dev --inbox --config $(CONFIG)

# The suite on PYTEST_WORKERS pytest-xdist processes, each with its own dev server, Dovecot and
# Radicale (docs/testing.md); PYTEST_WORKERS=0 runs it in this process.
PYTEST_WORKERS ?= 3
test: $(STAMP) test-servers test-browser
	$(BIN)/pytest $(if $(filter 0,$(PYTEST_WORKERS)),,-n $(PYTEST_WORKERS) --dist worksteal) --durations=25

# Servers and programs the tests run for real, from Debian's packages when missing: Dovecot (IMAP)
# and bubblewrap (the process tools' sandbox). The tests start Dovecot with a configuration of
# their own (own ports and directories); a system service the package may start is never used.
SUDO := $(shell [ "$$(id -u)" -eq 0 ] || echo sudo)
test-servers:
	@command -v dovecot >/dev/null 2>&1 || test -x /usr/sbin/dovecot || { \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q dovecot-imapd; }
	@command -v bwrap >/dev/null 2>&1 || { \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q bubblewrap; }

# The inbox's browser tests drive Debian's chromium (Playwright's own browser download is not
# used); like test-servers, it uses sudo when not run as root.
test-browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get update -q && \
	  $(SUDO) env DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; }

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

# The site in site/, strict: a broken link or anchor, or a page the nav leaves out, fails the build.
# NO_MKDOCS_2_WARNING quiets Material's banner about MkDocs 2, which says nothing about our pages.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

check: lint typecheck docs test

# The wheel and the sdist in dist/ (the wheel built from the sdist), checked as PyPI would.
dist: $(STAMP)
	rm -rf dist build toolcalls.egg-info
	$(BIN)/python -m build
	$(BIN)/twine check --strict dist/*

record-histories: $(STAMP)
	$(BIN)/python -m tests.record_histories

bench: $(STAMP)
	$(BIN)/python -m bench.local_activities

bench-overhead: $(STAMP)
	$(BIN)/python -m bench.overhead

bench-inline: $(STAMP)
	$(BIN)/python -m bench.inline

bench-search: $(STAMP)
	$(BIN)/python -m bench.search_files

bench-documents: $(STAMP)
	$(BIN)/python -m bench.documents

bench-sandbox: $(STAMP)
	$(BIN)/python -m bench.sandbox

bench-scale: $(STAMP)
	$(BIN)/python -m bench.scale --calls 1000 10000 --baseline $(SCALE_BASELINE)

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache site dist build
