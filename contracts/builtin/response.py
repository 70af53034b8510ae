"""Checks on the response text alone (before execution): is there code, is it well-formed, is it the asked API."""

from __future__ import annotations

import re

from contracts.api import Verdict, contract
from contracts.codefacts import imported_modules
from contracts.extract import SOLVER_MODULES, code_blocks, extract_code
from contracts.sample import Sample

API_MODULES = {"gurobipy": "gurobipy", "pyomo": "pyomo", "ortools": "ortools", "coptpy": "coptpy",
               "docplex": "docplex", "pulp": "pulp", "highspy": "highspy", "cplex": "cplex"}


@contract(stage="before_execution", severity="reject", cost=0.01)
def has_code(sample: Sample) -> Verdict:
    """The attempt carries a program: its extracted code, or a code block in its response."""
    if sample.attempt.code.strip():
        return Verdict.passed("code present", chars=len(sample.attempt.code), source="attempt.code")
    blocks = code_blocks(sample.attempt.response)
    code = extract_code(sample.attempt.response)
    if code is None:
        return Verdict.failed("no program found in the response", n_blocks=len(blocks))
    return Verdict.passed("code extracted from the response", chars=len(code), n_blocks=len(blocks),
                          source="response")


_SENTINELS = re.compile(r"<\|endoftext\|>|<\|im_end\|>|<\|im_start\|>|<\|eot_id\|>|</s>|<eos>|\[/?INST\]")
_PLACEHOLDERS = re.compile(
    r"\bTODO\b|\bFIXME\b|lorem ipsum|<insert[^>]*>|\byour[_ ]\w+[_ ]here\b|raise NotImplementedError|"
    r"^\s*\.\.\.\s*$|#\s*\.\.\.|[<\[{]\s*placeholder\s*[>\]}]", re.IGNORECASE | re.MULTILINE)


@contract(stage="before_execution", severity="reject", cost=0.02, min_chars=20, max_chars=60_000,
          max_non_latin_share=0.2, max_repeated_line=25)
def sanity(sample: Sample, min_chars: int, max_chars: int, max_non_latin_share: float,
           max_repeated_line: int) -> Verdict:
    """Length within bounds, mostly Latin script, no placeholder or chat-sentinel text, no degenerate repetition."""
    text = sample.attempt.response or sample.attempt.code
    problems: list[str] = []
    if not min_chars <= len(text) <= max_chars:
        problems.append(f"length {len(text)} outside [{min_chars}, {max_chars}]")
    # Language is judged on the prose (comments in another script do not make a program unusable).
    prose = _prose(sample.attempt.response) if sample.attempt.response else ""
    letters = [c for c in prose if c.isalpha()]
    non_latin = sum(ord(c) > 0x24F for c in letters) / len(letters) if letters else 0.0
    if non_latin > max_non_latin_share:
        problems.append(f"{non_latin:.0%} of letters are not Latin script")
    if m := _SENTINELS.search(text):
        problems.append(f"sentinel {m.group(0)!r}")
    if m := _PLACEHOLDERS.search(text):
        problems.append(f"placeholder {m.group(0).strip()!r}")
    lines = [ln.strip() for ln in text.splitlines() if len(ln.strip()) > 10]
    if lines:
        top = max(lines.count(ln) for ln in set(lines))
        if top > max_repeated_line:
            problems.append(f"a line repeats {top} times")
    if problems:
        return Verdict.failed("; ".join(problems), problems=problems, non_latin_share=round(non_latin, 4))
    return Verdict.passed("sane", chars=len(text), non_latin_share=round(non_latin, 4))


def _prose(text: str) -> str:
    for _, body in code_blocks(text):
        text = text.replace(body, "")
    return text


@contract(stage="before_execution", severity="warn", cost=0.02, min_reasoning_chars=40, headings=())
def response_format(sample: Sample, min_reasoning_chars: int, headings: tuple[str, ...] | list[str]) -> Verdict:
    """The response has reasoning prose, one fenced python program, and any required section headings."""
    text = sample.attempt.response
    if not text.strip():
        return Verdict.skipped("no response text (bare program)")
    blocks = code_blocks(text)
    prose = re.sub(r"(`{3,}|~{3,}).*?(\1|\Z)", "", text, flags=re.DOTALL).strip()
    missing: list[str] = []
    if len(prose) < min_reasoning_chars:
        missing.append(f"reasoning ({len(prose)} chars < {min_reasoning_chars})")
    if not any(tag in {"python", "py", "python3", ""} for tag, _ in blocks):
        missing.append("a fenced python code block")
    lower = text.lower()
    missing += [f"section {h!r}" for h in headings if h.lower() not in lower]
    if missing:
        return Verdict.failed("missing " + ", ".join(missing), missing=missing)
    return Verdict.passed("reasoning and code present", reasoning_chars=len(prose), n_blocks=len(blocks))


@contract(stage="before_execution", severity="reject", cost=0.05)
def uses_requested_api(sample: Sample) -> Verdict:
    """A program written for ``attempt.api`` imports that API (and not only another solver's)."""
    api = sample.attempt.api
    if not api:
        return Verdict.skipped("no API was requested")
    module = API_MODULES.get(api, api)
    mods = imported_modules(sample.code)
    solvers = sorted(m for m in mods if m in SOLVER_MODULES)
    if module in mods:
        return Verdict.passed(f"imports {module}", requested=api, solver_imports=solvers)
    return Verdict.failed(f"requested {api} but the program imports {solvers or 'no solver'}", requested=api,
                          solver_imports=solvers)
