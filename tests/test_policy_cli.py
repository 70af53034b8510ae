"""``flywheel policy check|sample|list`` against a real scripted HTTP server on 127.0.0.1."""

from __future__ import annotations

import json

import typer
from support.scripted_server import ScriptedServer
from typer.testing import CliRunner

from flywheel.commands import policy


def _app() -> typer.Typer:
    app = typer.Typer()
    policy.register(app)
    app.command("noop", hidden=True)(lambda: None)  # a second command keeps "policy" a sub-command group
    return app


def test_check_prints_latency_and_reply():
    with ScriptedServer(delay_s=0.05) as server:
        res = CliRunner().invoke(_app(), ["policy", "check", f"openai:fake@{server.url}", "--format", "json"])
    assert res.exit_code == 0, res.output
    out = json.loads(res.output)
    assert out["ok"] and out["wall_s"] >= 0.05 and "gurobipy" in out["reply"]  # the scripted server's delay


def test_check_reports_a_failing_server_and_exits_1():
    with ScriptedServer(script={0: ["500!"]}) as server:
        res = CliRunner().invoke(_app(), ["policy", "check", f"openai:fake@{server.url}", "--format", "json"])
    assert res.exit_code == 1
    assert json.loads(res.output)["kind"] == "server_error"


def test_sample_writes_attempts_and_list_names_templates(tmp_path):
    problems = tmp_path / "p.jsonl"
    problems.write_text('{"id": "a", "question": "Maximise 3x with x <= 4.", "answer": 12}\n')
    out = tmp_path / "attempts.jsonl"
    with ScriptedServer() as server:
        res = CliRunner().invoke(_app(), ["policy", "sample", f"openai:fake@{server.url}", "--problems-file",
                                          str(problems), "--samples", "2", "--out", str(out), "--cache",
                                          str(tmp_path / "cache"), "--format", "json"])
    assert res.exit_code == 0, res.output
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["attempt"]["sample_index"] for r in rows] == [0, 1]
    assert all("m.optimize()" in r["attempt"]["code"] for r in rows)
    listed = CliRunner().invoke(_app(), ["policy", "list", "--format", "json"])
    names = {r["name"] for r in json.loads(listed.output)}
    assert {"openai", "hf", "vllm", "formulation_code/v1", "backtranslation/v1"} <= names
