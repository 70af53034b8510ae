# The README's two commands: `make demo` and `make test`. Everything installs into .venv/ at the repo root.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo flywheel-demo test lint clean bench

install: $(STAMP)

$(STAMP): pyproject.toml Makefile
	# System packages: bubblewrap (sandbox isolation), chromium (headless check of `flywheel report` pages), and the
	# glpk / cbc executables that real-world Pyomo programs call through SolverFactory.
	@missing=""; command -v bwrap >/dev/null 2>&1 || missing="$$missing bubblewrap"; \
	  command -v chromium >/dev/null 2>&1 || missing="$$missing chromium"; \
	  command -v glpsol >/dev/null 2>&1 || missing="$$missing glpk-utils"; \
	  command -v cbc >/dev/null 2>&1 || missing="$$missing coinor-cbc"; \
	  if [ -n "$$missing" ]; then \
	    echo "installing system packages:$$missing"; \
	    (apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing) >/dev/null 2>&1 \
	      || echo "warning: could not install$$missing (the sandbox falls back to its non-bwrap isolation; report rendering is not browser-checked)"; \
	  fi
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	# torch is pinned to the CPU build that lies on this machine's disk; never let pip pick a CUDA build.
	$(BIN)/pip install -q torch==2.13.0
	$(BIN)/pip install -q -e '.[dev]'
	touch $(STAMP)

demo: install
	$(BIN)/flywheel run-round

# The flywheel end to end on CPU (issue 9): writes reports/flywheel/ (plots + results.md/json); resumable.
flywheel-demo: install
	$(BIN)/python -m flywheel.demo --size full --work runs/flywheel-demo --reports reports/flywheel

lint: install
	$(BIN)/ruff check .

test: install
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q

bench: install
	for b in bench/*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) flywheel-store .pytest_cache .ruff_cache
