"""Scoring programs against labelled answers: one evaluator that states its rule, shows both, explains every miss.

Each item is judged under every requested rule (``strict`` and ``orlm_lenient`` by default, see
``contracts.tolerance``). The rules only differ for numeric labels: an ``"infeasible"`` label is matched only by a
program whose final solve concludes infeasible, and items without a label are counted and excluded.

Every miss gets a class, so a report can say *why* a model fails:
``no_code`` (nothing to run), ``code`` (the program crashed before a solve: syntax, import, build or runtime error,
no solve call), ``sandbox_limit`` (a sandbox rule stopped or refused the program: memory, output or file size,
processes/threads, a refused system call or the network; not a modelling error), ``solver_outcome`` (the solve ended infeasible / unbounded / timed out where a number was expected,
or the reverse), ``tolerance_only`` (the objective misses strict but is within 1e-3 relative of the label, e.g.
rounding), ``formulation`` (the solve succeeded and reports a clearly different optimum), ``infrastructure``
(sandbox error or licence-size refusal: never counted against the model). A program that optimised the negation
of what was asked (every nonzero cost < 0: ``linprog`` with ``c = -profit``, min -profit) matches through its negated
optimum, flagged ``negated_objective`` and counted in the summary. Which execution statuses are which comes
from ``solvers.failures``, the classification every failure report shares.
"""

from __future__ import annotations

import functools
import json
import math
from collections import defaultdict
from collections.abc import Callable, Iterable, Sequence
from math import comb
from pathlib import Path
from typing import Any

from pydantic import Field, ValidationError

from contracts.equivalence.mps import read_mps
from contracts.extract import extract_code
from contracts.tolerance import RULES, compare
from solvers.errors import FlywheelError, unknown_name
from solvers.failures import exec_failure
from solvers.records import ExecStatus, Execution, Record, SolveStatus

DEFAULT_RULES = ("strict", "orlm_lenient")
INFEASIBLE = "infeasible"
# A miss within this relative distance of the label is a tolerance/rounding problem, not a formulation error:
# 1e-3 is 1000x the strict rule and well below any real modelling mistake in the benchmarks' integer data.
TOLERANCE_ONLY_RTOL = 1e-3

# The miss class of a program that never reached a final solve is its execution status's class
# (``solvers.failures``), in the evaluator's words; ``pass`` and ``code`` both mean "crashed before a solve".
_MISS_BY_EXEC = {"pass": "code", "no_code": "no_code", "code": "code", "limit": "sandbox_limit",
                 "solver": "solver_outcome", "infra": "infrastructure"}
_SUCCESS_SOLVE = {SolveStatus.OPTIMAL, SolveStatus.TIME_LIMIT_WITH_SOLUTION}


class Completion(Record):
    """One line of a completions file: a model's output for a labelled item."""

    id: str
    answer: float | str | None = None
    answers_accepted: tuple[float | str, ...] = ()
    completion: str | None = None
    code: str | None = None
    solver_api: str | None = None
    benchmark: str = ""
    sample_index: int = 0

    def program(self) -> str | None:
        if self.code is not None and self.code.strip():
            return self.code
        return extract_code(self.completion or "")

    def labels(self) -> list[float | str]:
        """Every accepted answer (corrected benchmarks sometimes accept several)."""
        out: list[float | str] = [] if self.answer is None else [self.answer]
        return out + [a for a in self.answers_accepted if a not in out]


class ItemVerdict(Record):
    """The per-item line of ``verdicts.jsonl``."""

    id: str
    benchmark: str = ""
    sample_index: int = 0
    labelled: bool
    answer: float | str | None
    exec_status: str
    solve_status: str | None = None
    objective: float | None = None
    sense: str | None = None
    passed: dict[str, bool] = Field(default_factory=dict)  # rule -> pass
    tolerance: dict[str, float] = Field(default_factory=dict)  # rule -> absolute tolerance applied
    miss_class: str | None = None  # None when the strict rule passed
    dispute: bool = False  # the program's optimum beats the label in the model's own sense (label review)
    negated_objective: bool = False  # passed with -objective: the program optimised -f (see _matches)
    error: str = ""


def load_completions(path: str | Path) -> list[Completion]:
    """Read a completions JSONL file; a bad line is an error naming the file and line number."""
    p = Path(path)
    if not p.is_file():
        raise FlywheelError("completions file not found", culprit=str(p))
    items: list[Completion] = []
    seen: dict[str, int] = defaultdict(int)
    for lineno, line in enumerate(p.read_text().splitlines(), 1):
        if not line.strip():
            continue
        try:
            raw = json.loads(line)
        except json.JSONDecodeError as exc:
            raise FlywheelError(f"line {lineno}: not JSON ({exc.msg})", culprit=str(p)) from None
        if not isinstance(raw, dict):
            raise FlywheelError(f"line {lineno}: expected a JSON object", culprit=str(p))
        if "completion" not in raw and "code" not in raw:
            raise FlywheelError(f"line {lineno}: needs 'completion' or 'code'", culprit=str(p))
        raw = {k: raw[k] for k in Completion.model_fields if k in raw}
        if "id" in raw:
            raw["id"] = str(raw["id"])
            raw.setdefault("sample_index", seen[raw["id"]])
            seen[raw["id"]] += 1
        try:
            item = Completion.model_validate(raw)
        except ValidationError as exc:
            err = exc.errors()[0]
            field = ".".join(str(x) for x in err["loc"])
            raise FlywheelError(f"line {lineno}: field {field!r}: {err['msg']}", culprit=str(p)) from None
        if isinstance(item.answer, str) and item.answer.strip().lower() != INFEASIBLE:
            try:
                item = item.model_copy(update={"answer": float(item.answer)})
            except ValueError:
                raise FlywheelError(f"line {lineno}: answer {item.answer!r} is neither a number nor "
                                    f"'{INFEASIBLE}'", culprit=str(p)) from None
        items.append(item)
    return items


def judge(item: Completion, execution: Execution | None, rules: Sequence[str] = DEFAULT_RULES) -> ItemVerdict:
    """Judge one item's execution under every rule. ``execution`` None means there was no code to run."""
    for r in rules:
        if r not in RULES:
            raise unknown_name("tolerance rule", r, list(RULES))
    labels = item.labels()
    final = execution.final_solve if execution else None
    exec_status = execution.status.value if execution else ExecStatus.NO_CODE.value
    base: dict[str, Any] = {
        "id": item.id, "benchmark": item.benchmark, "sample_index": item.sample_index, "labelled": bool(labels),
        "answer": item.answer, "exec_status": exec_status,
        "solve_status": final.status.value if final else None,
        "objective": final.objective if final and _finite(final.objective) else None,
        "sense": final.sense if final else None, "error": execution.error if execution else "no code found",
    }
    if not labels:
        return ItemVerdict(**base)
    passed: dict[str, bool] = {}
    tolerance: dict[str, float] = {}
    # parsed only for an item whose objective misses as it stands (most items match or miss without it)
    negatable = functools.cache(lambda: _optimises_negation(final))
    negated = False
    for r in rules:
        ok = False
        for label in labels:
            hit, t, neg = _matches(label, final, r, negatable)
            tolerance[r] = t
            if hit:
                ok, negated = True, negated or neg
                break
        passed[r] = ok
    if "strict" not in passed:  # the miss class is always judged against the strict rule
        passed_strict = any(_matches(label, final, "strict", negatable)[0] for label in labels)
    else:
        passed_strict = passed["strict"]
    miss = None if passed_strict else _miss_class(labels, execution, final)
    dispute = _beats_label(labels, final) if miss in ("formulation", "tolerance_only") else False
    return ItemVerdict(**base, passed=passed, tolerance=tolerance, miss_class=miss, dispute=dispute,
                       negated_objective=negated)


def _finite(x: float | None) -> bool:
    return x is not None and math.isfinite(x)


def _matches(label: float | str, final: Any, rule: str,
             negated: Callable[[], bool] = lambda: False) -> tuple[bool, float, bool]:
    """(match, tolerance used, matched through the negated objective). ``negated()``: the program optimised a negated
    quantity (``_optimises_negation``), so its answer is -objective where the objective itself misses; asked only
    then."""
    if final is None:
        return False, 0.0, False
    if isinstance(label, str):  # "infeasible": only a solve that concludes infeasible matches
        return final.status == SolveStatus.INFEASIBLE, 0.0, False
    if final.status not in _SUCCESS_SOLVE or not _finite(final.objective):
        return False, 0.0, False
    c = compare(float(final.objective), float(label), rule, mip_gap=final.mip_gap)
    if not c.match and negated():
        n = compare(-float(final.objective), float(label), rule, mip_gap=final.mip_gap)
        if n.match:
            return True, n.tolerance, True
    return c.match, c.tolerance, False


def _optimises_negation(final: Any) -> bool:
    """A program that optimises the negation of what the question asks: every objective coefficient < 0 (zeros
    aside), no quadratic term; the constant may be anything (min -(revenue - 100) is -revenue + 100). ``linprog``
    only minimises, so profit p becomes ``c = -p`` and the answer is ``-res.fun``; min -profit or max -cost in any
    API likewise. min(-f) = -max(f), so such a program's answer is its solver's optimum negated: read from the
    captured model, never from what the program prints. A model with costs of both signs (cost - revenue) is read
    as written."""
    if final is None or not final.model_mps:
        return False
    try:
        m = read_mps(final.model_mps)
    except (FlywheelError, ValueError, IndexError, KeyError):  # a section the reader lacks, a malformed line
        return False
    costs = [c for c in m.obj.values() if c != 0]
    return not m.quad and bool(costs) and all(c < 0 for c in costs)


def _miss_class(labels: list[float | str], execution: Execution | None, final: Any) -> str:
    failure = exec_failure(execution.status if execution is not None else ExecStatus.NO_CODE)
    if failure in ("no_code", "infra", "limit") or final is None:  # a limit stops a program whatever it solved
        return _MISS_BY_EXEC[failure]
    numeric = [float(x) for x in labels if not isinstance(x, str)]
    if final.status not in _SUCCESS_SOLVE or not _finite(final.objective):
        return "solver_outcome"
    if not numeric:  # label infeasible, program found an optimum
        return "solver_outcome"
    obj = float(final.objective)
    if any(abs(obj - g) <= TOLERANCE_ONLY_RTOL * (abs(g) + 1) for g in numeric):
        return "tolerance_only"
    return "formulation"


def _beats_label(labels: list[float | str], final: Any) -> bool:
    """A feasible optimum strictly better than every numeric label, in the program's own sense: review the label."""
    numeric = [float(x) for x in labels if not isinstance(x, str)]
    if not numeric or final is None or not _finite(final.objective) or final.sense not in ("minimize", "maximize"):
        return False
    obj = float(final.objective)
    margin = 1e-6 * (max(abs(g) for g in numeric) + 1)
    if final.sense == "minimize":
        return all(obj < g - margin for g in numeric)
    return all(obj > g + margin for g in numeric)


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k estimator (Chen et al. 2021): 1 - C(n-c, k) / C(n, k)."""
    if n - c < k:
        return 1.0
    return 1.0 - comb(n - c, k) / comb(n, k)


def summarise(verdicts: Iterable[ItemVerdict], rules: Sequence[str] = DEFAULT_RULES, k: int = 1) -> dict[str, Any]:
    """Per rule (and per benchmark): items, labelled items, passed, pass@1 (and pass@k), miss classes.

    With several samples per item, pass@1 is the unbiased mean over samples; ``passed`` counts items whose first
    sample passed (greedy Pass@1 when there is one sample per item).
    """
    by_item: dict[tuple[str, str], list[ItemVerdict]] = defaultdict(list)
    for v in verdicts:
        by_item[(v.benchmark, v.id)].append(v)
    groups: dict[str, list[list[ItemVerdict]]] = defaultdict(list)
    for (bench, _), samples in by_item.items():
        samples.sort(key=lambda v: v.sample_index)
        groups[bench or "all"].append(samples)
        if bench:
            groups["overall"].append(samples)
    summary: dict[str, Any] = {}
    for group, items in groups.items():
        labelled = [s for s in items if s[0].labelled]
        entry: dict[str, Any] = {"items": len(items), "labelled_items": len(labelled),
                                 "unlabelled_items": len(items) - len(labelled), "rules": {}}
        for r in rules:
            passed = sum(1 for s in labelled if s[0].passed.get(r))
            p1 = sum(pass_at_k(len(s), sum(v.passed.get(r, False) for v in s), 1) for s in labelled)
            rule_entry = {"passed": passed, "pass@1": p1 / len(labelled) if labelled else 0.0}
            if k > 1:
                pk = sum(pass_at_k(len(s), sum(v.passed.get(r, False) for v in s), k) for s in labelled)
                rule_entry[f"pass@{k}"] = pk / len(labelled) if labelled else 0.0
            entry["rules"][r] = rule_entry
        misses: dict[str, int] = defaultdict(int)
        for s in labelled:
            if s[0].miss_class:
                misses[s[0].miss_class] += 1
        entry["miss_classes"] = dict(sorted(misses.items()))
        entry["disputes"] = sorted(s[0].id for s in labelled if s[0].dispute)
        entry["negated_objective"] = sum(1 for s in labelled if s[0].negated_objective)  # passes read as -objective
        summary[group] = entry
    return summary
