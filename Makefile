# The README's two commands: `make demo` and `make test`. Everything installs into .venv/ at the repo root.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test lint clean bench

install: $(STAMP)

$(STAMP): pyproject.toml Makefile
	@command -v bwrap >/dev/null 2>&1 || { (apt-get update -qq && apt-get install -y -qq bubblewrap) >/dev/null 2>&1 || echo "warning: bubblewrap could not be installed; the sandbox falls back to its non-bwrap isolation"; }
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch is pinned to the CPU build that lies on this machine's disk; never let pip pick a CUDA build.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

demo: install
	$(BIN)/flywheel run-round

lint: install
	$(BIN)/ruff check .

test: install
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

bench: install
	for b in bench/*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) flywheel-store .pytest_cache .ruff_cache
