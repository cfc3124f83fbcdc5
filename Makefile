# The two commands: `make run` (worker + embedded Temporal dev server) and `make test`.
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-stamp
CONFIG ?= examples/toolcalls.toml

.PHONY: run test test-browser lint typecheck check record-histories bench bench-overhead bench-search bench-documents clean

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e '.[dev,documents,integrations,codec,s3,inbox]'
	touch $(STAMP)

run: $(STAMP)
	$(BIN)/toolcalls worker --dev --inbox --config $(CONFIG)

test: $(STAMP) test-browser
	$(BIN)/pytest

# The inbox's browser tests drive Debian's chromium (Playwright's own browser download is not
# used); CI runs on a fresh machine as root.
test-browser:
	@command -v chromium >/dev/null 2>&1 || { \
	  apt-get update -q && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; }

lint: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(STAMP)
	$(BIN)/mypy

check: lint typecheck test

record-histories: $(STAMP)
	$(BIN)/python -m tests.record_histories

bench: $(STAMP)
	$(BIN)/python -m bench.local_activities

bench-overhead: $(STAMP)
	$(BIN)/python -m bench.overhead

bench-search: $(STAMP)
	$(BIN)/python -m bench.search_files

bench-documents: $(STAMP)
	$(BIN)/python -m bench.documents

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache
