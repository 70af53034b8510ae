"""`flywheel export` and `flywheel stats` over a real store: dedup, decontamination, split by cluster, mixture,
Parquet that Hugging Face `datasets` loads, manifest, and the rows recorded in the store.

The store is filled through the store's own row helpers with real generated problems, real two-solver ground
truth and real rendered programs. Executions are recorded as a clean sandbox run would record them (the final solve
reports the ground-truth objective) and verdicts as a contract suite would: the sandbox and contracts are tested in
their own files, and curation only reads what they store.
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pyarrow.parquet as pq
import pytest
from cli_here import flywheel_here
from support.perturb import paraphrase

from contracts.verdicts import VerdictRow, verdict_id
from flywheel.generators.base import generate_problem
from flywheel.store import Store
from flywheel.store.rows import attempt_row, execution_row, problem_row, solve_rows
from solvers.ground_truth import solve_ground_truth
from solvers.ir import Model
from solvers.records import Attempt, ExecStatus, Execution, SolveCall, SolveStatus
from solvers.render import render

REPO = Path(__file__).resolve().parents[1]
SHARED = REPO.parent / "shared" / "benchmarks"
pytestmark = pytest.mark.skipif(not SHARED.is_dir(), reason="shared benchmark copy not present")
FAMILIES = ("diet", "transportation", "production_planning", "blending", "assignment")
REASONING = ("Let x be the amount of each option. We minimise the total cost subject to meeting every requirement; "
             "all quantities are non-negative, so this is a linear program that any LP solver handles.\n\n")


def _attempt(problem_id: str, code: str, policy: str = "reference", response: str = "", index: int = 0) -> Attempt:
    aid = hashlib.sha256(f"{problem_id}|{policy}|{index}".encode()).hexdigest()[:16]
    # A reference attempt stores the bare program as its response, as run-round does.
    return Attempt(attempt_id=aid, problem_id=problem_id, policy=policy, api="gurobipy", code=code,
                   response=response or code, sample_index=index,
                   label_source="generator" if policy == "reference" else "teacher")


def _clean_run(a: Attempt, objective: float | None) -> Execution:
    call = SolveCall(api="gurobipy", solver="gurobi", solver_version="13", status=SolveStatus.OPTIMAL,
                     objective=objective, solve_time_s=0.01)
    return Execution(program_id=a.attempt_id, status=ExecStatus.OK, solves=(call,), wall_s=0.4)


def _shuffled(model: Model) -> Model:
    d = json.loads(model.to_json())
    rename = {v["name"]: f"q{k}" for k, v in enumerate(d["variables"])}
    for v in d["variables"]:
        v["name"] = rename[v["name"]]
    for c in d["constraints"]:
        c["terms"] = [[rename[a], 2.0 * b] for a, b in c["terms"]][::-1]
        c["rhs"] *= 2.0
    d["constraints"].reverse()
    d["objective"]["terms"] = [[rename[a], b] for a, b in d["objective"]["terms"]]
    return Model.model_validate(d)


@pytest.fixture(scope="module")
def store_path(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("curation") / "store"
    rng = np.random.default_rng(0)
    nl4opt = [json.loads(x) for x in (SHARED / "nl4opt" / "test.jsonl").read_text().splitlines()]
    problems, attempts, executions, verdicts = [], [], [], []

    def add(problem, attempt, accepted=True, round_=1):
        problems.append((round_, problem))
        attempts.append((round_, attempt))
        executions.append((round_, attempt, _clean_run(attempt, problem.ground_truth.objective)))
        verdicts.append((round_, VerdictRow(
            verdict_id=verdict_id(attempt.attempt_id, "objective_matches", "1"), sample_id=attempt.attempt_id,
            attempt_id=attempt.attempt_id, problem_id=problem.problem_id, suite="default",
            contract="objective_matches", version="1", stage="post", severity="reject",
            outcome="pass" if accepted else "fail", score=1.0 if accepted else 0.0,
        ).model_dump()))

    base = []
    for f in FAMILIES:
        for seed in range(3):
            p = generate_problem(f, seed, 2, 0.0)
            p = p.model_copy(update={"ground_truth": solve_ground_truth(p.ir)})
            base.append(p)
            add(p, _attempt(p.problem_id, render(p.ir, "gurobipy")))
    p0, p1, p2 = base[0], base[3], base[6]
    # A second, reasoning response to an existing problem (same cluster by problem, round 2: not representative).
    add(p0, _attempt(p0.problem_id, render(p0.ir, "gurobipy"), "teacher", REASONING + "```python\nx\n```", 1), True, 2)
    # A near-duplicate: p0's question lightly paraphrased, as an imported problem without a model.
    add(p0.model_copy(update={"problem_id": "para-of-p0", "question": paraphrase(p0.question, rng), "ir": None}),
        _attempt("para-of-p0", "print(1)"))
    # A structural copy: p1's model renamed and scaled, told as a different story.
    add(p1.model_copy(update={"problem_id": "retold-p1", "ir": _shuffled(p1.ir),
                              "question": "A cooperative of farms ships grain to mills; plan the cheapest shipments."}),
        _attempt("retold-p1", "print(2)"))
    # A planted benchmark paraphrase: must be dropped, and the contamination row must name nl4opt-7.
    add(p2.model_copy(update={"problem_id": "bench-copy", "question": paraphrase(nl4opt[7]["question"], rng),
                              "ir": None}), _attempt("bench-copy", "print(3)"))
    # A rejected sample: excluded unless --include-rejected.
    p_rej = generate_problem("diet", 99, 3, 0.0)
    p_rej = p_rej.model_copy(update={"ground_truth": solve_ground_truth(p_rej.ir)})
    add(p_rej, _attempt(p_rej.problem_id, "print('wrong')"), accepted=False)
    # A reasoning-only teacher sample on its own problem: its response becomes the SFT assistant turn.
    p_t = generate_problem("blending", 42, 2, 0.0)
    p_t = p_t.model_copy(update={"ground_truth": solve_ground_truth(p_t.ir)})
    add(p_t, _attempt(p_t.problem_id, "print(4)", "teacher", REASONING + "```python\nprint(4)\n```"))

    with Store.open(path) as st, st.lock():
        for r in (1, 2):
            st.write("problems", r, [problem_row(p) for rr, p in problems if rr == r])
            st.write("attempts", r, [attempt_row(a) for rr, a in attempts if rr == r])
            st.write("executions", r, [execution_row(a.attempt_id, e) for rr, a, e in executions if rr == r])
            st.write("solves", r, [s for rr, a, e in executions if rr == r for s in solve_rows(a.attempt_id, e)])
            st.write("verdicts", r, [v for rr, v in verdicts if rr == r])
    return path


@pytest.fixture(scope="module")
def mix_file(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("mix") / "mix.toml"
    # A third of clusters to validation so a 17-cluster store has both sides populated.
    path.write_text("seed = 3\nvalidation = 0.3\n[weights.family]\nassignment = 0.0\ndiet = 2.0\n")
    return path


@pytest.fixture(scope="module")
def sft(store_path: Path, mix_file: Path, tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    out = tmp_path_factory.mktemp("shards") / "sft"
    cmd = [sys.executable, "-m", "flywheel.cli", "export", "--stage", "sft", "--out", str(out), "--store",
           str(store_path), "--mix", str(mix_file), "--benchmark", str(SHARED / "nl4opt"), "--format", "json"]
    done = subprocess.run(cmd, capture_output=True, text=True, cwd=REPO, timeout=300)
    assert done.returncode == 0, done.stderr
    return out, json.loads(done.stdout)


def test_export_dedups_decontaminates_and_records(sft: tuple[Path, dict], store_path: Path) -> None:
    out, manifest = sft
    counts = manifest["counts"]
    assert counts["selected"] == 20  # 15 base + teacher second response + paraphrase + retold + bench copy + teacher
    # Joins: teacher response (same problem), paraphrase (near), retold (structural).
    assert counts["joins"] == {"problem": 1, "near": 1, "structural": 1}
    assert counts["clusters"] == 17 and counts["duplicates_dropped"] == 3
    assert counts["contaminated_samples"] == 1 and counts["contamination_hits"]
    with Store.open(store_path, create=False) as st:
        import flywheel.curation.tables  # noqa: F401 - registers the curation tables before the views are built

        st.refresh()
        hit = st.query("SELECT * FROM contamination WHERE shard_id = ?", [manifest["shard_id"]]).to_pylist()
        # nl4opt-7 (pulled text) and, from the shipped contamination index, optibench-266: OptiBench includes that
        # NL4Opt question, so both benchmarks are named.
        assert {(h["problem_id"], h["benchmark"], h["item_id"]) for h in hit} == {
            ("bench-copy", "nl4opt", "nl4opt-7"), ("bench-copy", "optibench", "optibench-266")}
        clusters = st.query("SELECT * FROM clusters WHERE shard_id = ?", [manifest["shard_id"]]).to_pylist()
        assert len(clusters) == counts["selected"]
        by_problem = {c["problem_id"]: c for c in clusters}
        assert by_problem["para-of-p0"]["split"] == "duplicate" and "near" in by_problem["para-of-p0"]["reasons"]
        assert by_problem["retold-p1"]["split"] == "duplicate"
        assert by_problem["bench-copy"]["split"] == "contaminated"
        # Never one cluster on both sides.
        sides: dict[str, set[str]] = {}
        for c in clusters:
            sides.setdefault(c["cluster_id"], set()).add(c["split"])
        assert all(not {"train", "validation"} <= s for s in sides.values())
        shard = st.query("SELECT * FROM shards WHERE shard_id = ?", [manifest["shard_id"]]).to_pylist()
        assert len(shard) == 1 and shard[0]["stage"] == "sft" and json.loads(shard[0]["counts_json"]) == counts
    for name, meta in manifest["files"].items():
        assert hashlib.sha256((out / name).read_bytes()).hexdigest() == meta["sha256"]
    assert json.loads((out / "manifest.json").read_text()) == manifest
    assert "accepted" in manifest["selection"]["sql"]


def test_split_is_by_problem_and_mixture_applies(sft: tuple[Path, dict]) -> None:
    out, manifest = sft
    train = pq.read_table(out / "train.parquet").to_pylist()
    val = pq.read_table(out / "val.parquet").to_pylist()
    assert train and val
    assert not {r["problem_id"] for r in train} & {r["problem_id"] for r in val}
    assert not {r["cluster_id"] for r in train} & {r["cluster_id"] for r in val}
    assert all(r["family"] != "assignment" for r in train)  # weight 0
    diet = [r["problem_id"] for r in train if r["family"] == "diet"]
    assert diet and all(diet.count(pid) == 2 for pid in diet)  # weight 2: every diet sample twice
    assert len(train) == manifest["counts"]["train"] and len(val) == manifest["counts"]["val"]
    for r in train + val:
        roles = [m["role"] for m in r["messages"]]
        assert roles == ["user", "assistant"] and r["messages"][0]["content"]
        assert r["source"] in ("generator", "teacher")
    teacher = [r for r in train + val if r["policy"] == "teacher"]
    assert teacher and teacher[0]["messages"][1]["content"].startswith("Let x be")
    reference = [r for r in train + val if r["policy"] == "reference" and r["family"] == "diet"]
    answer = reference[0]["messages"][1]["content"]
    # No reasoning in a bare program: the assistant turn is the verified formulation, then the fenced program.
    assert answer.startswith("Model diet") and "\n\n```python\n" in answer and "gurobipy" in answer
    jsonl = [json.loads(x) for x in (out / "train.jsonl").read_text().splitlines()]
    assert jsonl == train  # the JSONL twin holds the same rows


def test_parquet_loads_with_hugging_face_datasets_from_the_repo_root(sft: tuple[Path, dict], tmp_path: Path) -> None:
    out, manifest = sft
    code = (
        "import datasets, json, sys\n"
        f"d = datasets.load_dataset('parquet', data_files={{'train': {str(out / 'train.parquet')!r}, "
        f"'validation': {str(out / 'val.parquet')!r}}}, cache_dir={str(tmp_path / 'hf')!r})\n"
        "print(json.dumps({'file': datasets.__file__, 'train': d['train'].num_rows, "
        "'validation': d['validation'].num_rows, 'first': d['train'][0]['messages']}))\n"
    )
    env = {**os.environ, "HF_DATASETS_OFFLINE": "1", "HF_HUB_OFFLINE": "1", "HF_HOME": str(tmp_path / "hf_home")}
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, capture_output=True, text=True, env=env,
                          timeout=240)
    assert done.returncode == 0, done.stderr[-2000:]
    got = json.loads(done.stdout.strip().splitlines()[-1])
    # Run from the repo root, where datasets/ (the benchmark cards) must not shadow the library.
    assert "site-packages" in got["file"] and not got["file"].startswith(str(REPO / "datasets"))
    assert got["train"] == manifest["counts"]["train"] and got["validation"] == manifest["counts"]["val"]
    assert [m["role"] for m in got["first"]] == ["user", "assistant"]


def test_cpt_export_rejected_and_suite_selection(store_path: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    base = ["--store", str(store_path), "--benchmark", str(SHARED / "nl4opt"), "--format", "json"]
    code, out, err = flywheel_here(capsys, monkeypatch, "export", "--stage", "cpt", "--out", str(tmp_path / "cpt"),
                                   "--suite", "default", "--where", "family = 'diet'", *base)
    assert code == 0, err
    manifest = json.loads(out)
    rows = pq.read_table(tmp_path / "cpt" / "train.parquet").to_pylist()
    rows += pq.read_table(tmp_path / "cpt" / "val.parquet").to_pylist()
    assert {r["family"] for r in rows} == {"diet"} and manifest["counts"]["selected"] == 5  # 3 + teacher + para
    doc = rows[0]["text"]
    assert "## Problem" in doc and "## Solver program (gurobipy)" in doc and "optimal objective value of" in doc
    code, out, _ = flywheel_here(capsys, monkeypatch, "export", "--stage", "sft", "--out", str(tmp_path / "all"),
                                 "--include-rejected", "--where", "family = 'diet'", *base)
    assert code == 0 and json.loads(out)["counts"]["selected"] == 6  # the rejected diet sample too
    code, _, err = flywheel_here(capsys, monkeypatch, "export", "--stage", "sft", "--out", str(tmp_path / "x"),
                                 "--suite", "defualt", *base)
    assert code == 2 and "did you mean 'default'" in err
    code, _, err = flywheel_here(capsys, monkeypatch, "export", "--stage", "sft", "--out", str(tmp_path / "cpt"), *base)
    assert code == 2 and "not empty" in err  # an existing shard is never overwritten silently


def test_stats_pass_rates_and_failure_taxonomy(store_path: Path, capsys, monkeypatch) -> None:
    code, out, err = flywheel_here(capsys, monkeypatch, "stats", "--store", str(store_path), "--format", "json")
    assert code == 0, err
    data = json.loads(out)
    diet = [r for r in data["pass_rates"] if r["family"] == "diet" and r["round"] == 1 and r["policy"] == "reference"]
    total = sum(r["samples"] for r in diet)
    accepted = sum(r["accepted"] for r in diet)
    assert (total, accepted) == (5, 4)  # three seeds + the paraphrase accepted; the rejected one (difficulty 3)
    assert all(r["median_solve_s"] is not None for r in diet)
    failures = [(r["family"], r["reason"], r["count"]) for r in data["failures"]]
    assert failures == [("diet", "contract:objective_matches", 1)]
    code, out, _ = flywheel_here(capsys, monkeypatch, "stats", "--store", str(store_path))
    assert code == 0 and "pass rates" in out and "failure taxonomy" in out


@pytest.mark.slow
def test_export_from_a_real_round(tmp_path: Path, capsys, monkeypatch) -> None:
    """run-round (real generators, ground truth, sandbox, contracts) -> export -> shard: the stages fit together."""
    store = tmp_path / "store"
    code, _, err = flywheel_here(capsys, monkeypatch, "run-round", "--store", str(store), "--problems", "4",
                                 "--families", "diet,production_planning", "--seed", "11", "--workers", "2")
    assert code == 0, err
    code, out, err = flywheel_here(capsys, monkeypatch, "export", "--stage", "sft", "--out", str(tmp_path / "sft"),
                                   "--store", str(store), "--benchmark", str(SHARED / "nl4opt"), "--format", "json")
    assert code == 0, err
    manifest = json.loads(out)
    with Store.open(store, create=False) as st:
        accepted = st.scalar("SELECT count(*) FROM samples WHERE accepted")
    assert accepted >= 1 and manifest["counts"]["selected"] == accepted
    rows = [*pq.read_table(tmp_path / "sft" / "train.parquet").to_pylist(),
            *pq.read_table(tmp_path / "sft" / "val.parquet").to_pylist()]
    assert len(rows) == manifest["counts"]["train"] + manifest["counts"]["val"] >= 1
    for r in rows:
        user, assistant = r["messages"]
        assert user["role"] == "user" and user["content"]
        assert assistant["content"].startswith(f"Model {r['family']}") and "```python\n" in assistant["content"]


def test_index_alone_flags_the_planted_paraphrase(store_path: Path, tmp_path: Path, capsys, monkeypatch) -> None:
    """Nothing pulled (an empty cache): the shipped contamination index still drops the nl4opt paraphrase, and only it."""
    monkeypatch.setenv("FLYWHEEL_BENCHMARK_CACHE", str(tmp_path / "empty-cache"))
    monkeypatch.delenv("FLYWHEEL_CONTAMINATION_INDEX", raising=False)
    code, out, err = flywheel_here(capsys, monkeypatch, "export", "--stage", "sft", "--out", str(tmp_path / "o"),
                                   "--store", str(store_path), "--format", "json")
    assert code == 0, err
    manifest = json.loads(out)
    assert manifest["decontamination"]["benchmarks"] == [] and manifest["decontamination"]["contamination_index"]
    assert manifest["counts"]["contaminated_samples"] == 1
    with Store.open(store_path, create=False) as st:
        import flywheel.curation.tables  # noqa: F401 - registers the curation tables before the views are built

        st.refresh()
        hit = st.query("SELECT * FROM contamination WHERE shard_id = ?", [manifest["shard_id"]]).to_pylist()
    # The hits name the exact items: nl4opt-7 and its copy in OptiBench.
    assert {(h["problem_id"], h["item_id"]) for h in hit} == {("bench-copy", "nl4opt-7"), ("bench-copy", "optibench-266")}
