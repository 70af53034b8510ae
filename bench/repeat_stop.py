"""Does ``[policy] repeat_stop`` change any verdict, and what does it save? Replayed on completions already made.

Every ``hf:`` completion in the policy caches under ``--runs`` (the evaluations and rounds this machine ran, greedy
and sampled) is tokenized again with its checkpoint's tokenizer and fed token by token through the decode loop's
``RepeatGuard`` at each span tried. For each span:

- ``fires_on_finished``: completions that ended by themselves (end of sequence, or their code block closed) on which
  the guard would have stopped the row first: each is a completion the setting would have changed. Must be 0.
- ``changed_program``: completions that ran to the token limit where the text cut at the guard's stop and the whole
  text give different programs (``contracts.extract.extract_code``) and either of them parses: only then could the
  verdict move (two programs that do not parse are both a ``syntax_error``; no program is ``no_code`` either way).
  Must be 0.
- ``tokens_saved``: completion tokens the guard would not have generated, as a share of all completion tokens.

    python bench/repeat_stop.py --runs runs --spans 128,200,256

Writes bench/results/repeat_stop.json.
"""

from __future__ import annotations

import argparse
import ast
import json
import sqlite3
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench._machine import machine  # noqa: E402
from contracts.extract import extract_code  # noqa: E402
from flywheel.policies.backends.decode import REPEAT_PERIOD, RepeatGuard  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results"


def _program(text: str) -> tuple[str | None, bool]:
    code = extract_code(text)
    if code is None:
        return None, False
    try:
        ast.parse(code)
        return code, True
    except (SyntaxError, ValueError):
        return code, False


def completions(runs: Path) -> list[dict]:
    """(checkpoint, text, finish_reason) of every distinct hf: reply cached under ``runs``."""
    seen: dict[str, dict] = {}
    for db in sorted(runs.rglob("policy_cache.sqlite")):
        con = sqlite3.connect(f"file:{db}?mode=ro", uri=True)
        for key, text, reason, meta in con.execute("select key, text, finish_reason, meta from responses"):
            m = json.loads(meta or "{}")
            if m.get("endpoint") == "local" and Path(m.get("model", "")).is_dir():
                seen.setdefault(key, {"model": m["model"], "text": text, "finish_reason": reason})
        con.close()
    return list(seen.values())


def stop_at(tokens: list[int], span: int) -> int | None:
    """``RepeatGuard.stop_after`` in numpy (the same rule: at token i, for some p, the run of tokens equal to the one p before
    is >= 2p and >= span - p); checked against ``RepeatGuard.stop_after`` on the first completions."""
    a = np.asarray(tokens)
    best = None
    for p in range(1, min(REPEAT_PERIOD, len(a) - 1) + 1):
        eq = np.concatenate([np.zeros(p, bool), a[p:] == a[:-p]])
        # run length ending at each index: index minus the last index where eq was False
        idx = np.arange(len(a))
        last_false = np.maximum.accumulate(np.where(~eq, idx, -1))
        run = idx - last_false
        hit = np.flatnonzero((run >= 2 * p) & (run + p >= span))
        if hit.size and (best is None or hit[0] + 1 < best):
            best = int(hit[0]) + 1
    return best


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=Path, default=Path("runs"))
    ap.add_argument("--spans", default="128,200,256")
    args = ap.parse_args()
    from transformers import AutoTokenizer

    rows = completions(args.runs)
    spans = [int(s) for s in args.spans.split(",")]
    toks: dict[str, object] = {}
    stats = {s: {"fires_on_finished": 0, "fired_on_length": 0, "changed_program": 0, "tokens_saved": 0}
             for s in spans}
    total_tokens, by_reason, examples, checked = 0, {}, {s: [] for s in spans}, 0
    by_model: dict[str, dict] = {}
    for row in rows:
        tok = toks.setdefault(row["model"], AutoTokenizer.from_pretrained(row["model"]))
        ids = tok(row["text"], add_special_tokens=False)["input_ids"]
        total_tokens += len(ids)
        bm = by_model.setdefault(row["model"], {"completions": 0, "tokens": 0, **{f"saved@{s}": 0 for s in spans}})
        bm["completions"] += 1
        bm["tokens"] += len(ids)
        by_reason[row["finish_reason"]] = by_reason.get(row["finish_reason"], 0) + 1
        whole = None
        for s in spans:
            at = stop_at(ids, s)
            if checked < 40:  # the numpy replay must be the guard itself
                assert at == RepeatGuard.stop_after(ids, s), (at, RepeatGuard.stop_after(ids, s), s)
                checked += 1
            if at is None:
                continue
            st = stats[s]
            if row["finish_reason"] != "length":
                st["fires_on_finished"] += 1
                if len(examples[s]) < 3:
                    examples[s].append(tok.decode(ids[max(0, at - 120):at]))
                continue
            st["fired_on_length"] += 1
            st["tokens_saved"] += len(ids) - at
            bm[f"saved@{s}"] += len(ids) - at
            whole = whole or _program(row["text"])
            cut = _program(tok.decode(ids[:at]))
            if cut[0] != whole[0] and (cut[1] or whole[1]):
                st["changed_program"] += 1
    for s in spans:
        stats[s]["tokens_saved_share"] = round(stats[s]["tokens_saved"] / max(total_tokens, 1), 4)
    result = {"bench": "repeat_stop", "machine": machine(), "completions": len(rows), "finish_reasons": by_reason,
              "completion_tokens": total_tokens, "by_span": stats, "by_model": by_model, "examples_fired_on_finished": examples,
              "command": "python bench/repeat_stop.py " + " ".join(sys.argv[1:])}
    RESULTS.mkdir(exist_ok=True)
    (RESULTS / "repeat_stop.json").write_text(json.dumps(result, indent=1) + "\n")
    print(f"{len(rows)} completions ({by_reason}), {total_tokens} tokens")
    print(f"{'span':>5} {'fires/finished':>15} {'fired/length':>13} {'changed prog':>13} {'saved':>7}")
    for s in spans:
        st = stats[s]
        print(f"{s:>5} {st['fires_on_finished']:>15} {st['fired_on_length']:>13} {st['changed_program']:>13} "
              f"{st['tokens_saved_share']:>7.1%}")
    print("tokens saved per checkpoint at each span:")
    for model, bm in by_model.items():
        shares = " ".join(f"{bm[f'saved@{s}'] / max(bm['tokens'], 1):6.1%}" for s in spans)
        print(f"  {Path(model).name[:28]:<28} {bm['completions']:>5} {shares}")


if __name__ == "__main__":
    main()
