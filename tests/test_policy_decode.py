"""The ``hf:`` decode loop (``flywheel.policies.backends.decode``): rows leave the batch when they end, yet greedy
tokens equal transformers' ``generate`` row for row; a row stops once its code block has closed; dtype follows the
measurement and is part of the cache identity."""

from __future__ import annotations

import warnings
from pathlib import Path

import pytest
import torch

from flywheel.config import PolicySection
from flywheel.policies.backends.decode import code_block_closed, decode, stream
from flywheel.policies.backends.hf import HFBackend
from flywheel.policies.spec import parse_spec
from tests.test_policy_hf import build_checkpoint


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory) -> Path:
    return build_checkpoint(tmp_path_factory.mktemp("ckpt"), seed=3)


def _model_and_batch(path: Path):
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tok = AutoTokenizer.from_pretrained(path)
    tok.padding_side = "left"
    model = AutoModelForCausalLM.from_pretrained(path, dtype=torch.float32).eval()
    prompts = ["Maximize profit from 3 products", "A factory", "Minimize the cost of shipping goods from plants to "
               "customers with capacities", "x"]
    enc = tok(prompts, return_tensors="pt", padding=True, add_special_tokens=False)
    return tok, model, enc


@pytest.mark.parametrize("eos_token", [None, "most_likely"])
def test_greedy_equals_generate_row_for_row_while_rows_leave(checkpoint, eos_token) -> None:
    tok, model, enc = _model_and_batch(checkpoint)
    new = 24
    ref = model.generate(**enc, max_new_tokens=new, do_sample=False, pad_token_id=tok.pad_token_id,
                         eos_token_id=tok.eos_token_id)[:, enc["input_ids"].shape[1]:].tolist()
    eos = None
    if eos_token:
        # A token that one row emits early and another late, as end of sequence: rows then leave at different steps,
        # which is what the loop's cache pruning must survive. (The random model never emits its real EOS.)
        eos = ref[1][3]
        ref = model.generate(**enc, max_new_tokens=new, do_sample=False, pad_token_id=tok.pad_token_id,
                             eos_token_id=eos)[:, enc["input_ids"].shape[1]:].tolist()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        out = decode(model, enc["input_ids"], enc["attention_mask"], max_new=new, eos=eos,
                     pick=lambda logits, rows: logits.argmax(-1))
    # The cache goes in under the forward's current name (transformers 5.x warns on `past_key_values`, removes it
    # in 5.40): a deprecated keyword here would break decoding on the next transformers.
    assert not [w for w in caught if "past_key_values" in str(w.message)], [str(w.message) for w in caught]
    lengths = set()
    for got, want in zip(out, ref, strict=True):
        want = want[: want.index(eos)] if eos is not None and eos in want else want
        want = [t for t in want if t != tok.pad_token_id] if eos is not None else want
        assert got.tokens == want
        assert got.finish_reason == ("stop" if len(got.tokens) < new else "length")
        lengths.add(len(got.tokens))
    if eos_token:
        assert len(lengths) > 1, "rows should have ended at different steps"


def test_a_row_stops_when_its_solver_block_closes() -> None:
    assert not code_block_closed("Here:\n```python\nimport gurobipy as gp\nm = gp.Model()\n")
    assert code_block_closed("Here:\n```python\nimport gurobipy as gp\nm = gp.Model()\n```")
    assert code_block_closed("```\nfrom pyomo.environ import *\n```\nmore")
    assert not code_block_closed("```python\ndata = [1, 2]\n```\n")  # a data block: the program is still to come
    assert not code_block_closed("```text\nimport gurobipy\n```")


def test_stop_after_code_cuts_the_tail(checkpoint) -> None:
    """A scripted "model" that writes a code block then rambles: the loop stops at the closing fence."""
    from transformers import AutoTokenizer

    tok = AutoTokenizer.from_pretrained(checkpoint)
    script = tok("```python\nimport gurobipy\n```\nand then some more words words words",
                 add_special_tokens=False)["input_ids"]

    class Scripted(torch.nn.Module):
        config = None

        def forward(self, input_ids, past_key_values=None, **_):  # noqa: ANN001, ANN003, ANN202
            step = past_key_values.get_seq_length() - 2 if past_key_values.get_seq_length() else -1
            logits = torch.zeros(input_ids.shape[0], 1, len(tok))
            logits[:, 0, script[min(step + 1, len(script) - 1)]] = 1.0
            past_key_values.update(torch.zeros(input_ids.shape[0], 1, input_ids.shape[1], 2),
                                   torch.zeros(input_ids.shape[0], 1, input_ids.shape[1], 2), 0)
            return type("Out", (), {"logits": logits})()

    from transformers import LlamaConfig

    model = Scripted()
    model.config = LlamaConfig(num_hidden_layers=1)
    ids = torch.zeros(1, 2, dtype=torch.long)
    out = decode(model, ids, torch.ones_like(ids), max_new=len(script) + 5, eos=None,
                 pick=lambda logits, rows: logits.argmax(-1), text_of=lambda t: tok.decode(t))
    text = tok.decode(out[0].tokens)
    assert out[0].finish_reason == "stop"
    assert text.rstrip().endswith("```") and "more words" not in text
    free = decode(model, ids, torch.ones_like(ids), max_new=len(script), eos=None,
                  pick=lambda logits, rows: logits.argmax(-1))
    assert "more words" in tok.decode(free[0].tokens)


def test_dtype_is_measured_recorded_and_keys_the_cache(checkpoint) -> None:
    from training.precision import probe_dtype

    assert HFBackend(parse_spec(f"hf:{checkpoint}"), PolicySection()).dtype == "fp32"  # the default: see config
    auto = HFBackend(parse_spec(f"hf:{checkpoint}"), PolicySection(hf_dtype="auto"))
    assert auto.dtype in ("fp32", "bf16")
    assert auto.identity["dtype"] == auto.dtype and auto.sampling_options["dtype"] == auto.dtype
    fp32 = HFBackend(parse_spec(f"hf:{checkpoint}"), PolicySection(hf_dtype="fp32"))
    bf16 = HFBackend(parse_spec(f"hf:{checkpoint}"), PolicySection(hf_dtype="bf16"))
    assert fp32.identity != bf16.identity  # a reply cached in one dtype is never served for the other
    bf16._load()
    assert next(bf16._model.parameters()).dtype == torch.bfloat16
    # On this machine auto picks what the probe measures for the checkpoint's MLP shape (32 x 64: a tie is fp32).
    assert probe_dtype(32, 64, 64)["chosen"] in ("fp32", "bf16")


def _guard_stop(tokens: list[int], span: int) -> int | None:
    from flywheel.policies.backends.decode import RepeatGuard

    return RepeatGuard.stop_after(tokens, span)


@pytest.mark.parametrize("period", [1, 3, 17, 64])
def test_repeat_guard_fires_once_the_looping_suffix_reaches_the_span(period) -> None:
    """A prefix, then one span of ``period`` tokens over and over: the guard fires on the first token at which the
    periodic suffix is ``span`` long and holds three copies (the prefix's last token differs, so the suffix starts
    after it)."""
    rng = torch.Generator().manual_seed(period)
    prefix = [1000 + i for i in range(30)]
    unit = torch.randint(0, 900, (period,), generator=rng).tolist()
    if period > 1:
        unit[0] = unit[-1] + 1  # a unit that is not itself periodic with a shorter period
    tokens = prefix + unit * (400 // period + 2)
    span = 96
    # The suffix from the first unit token on is periodic with `period`; it reaches `span` tokens at this length.
    assert _guard_stop(tokens, span) == len(prefix) + max(span, 3 * period)
    assert _guard_stop(tokens, 10_000) is None  # never looping that long


def test_repeat_guard_ignores_spans_longer_than_it_looks_for_and_fresh_text() -> None:
    long_unit = list(range(65))  # one span of 65 tokens repeated: longer than REPEAT_PERIOD
    assert _guard_stop(long_unit * 8, 128) is None
    counting = [t for i in range(200) for t in (7, 1000 + i, 8)]  # '("P", i): ...' with a changing number
    assert _guard_stop(counting, 96) is None


def test_decode_stops_a_looping_row_with_reason_repeat(checkpoint) -> None:
    """A scripted "model" that opens a block and then writes the same dict entry forever: with ``repeat_stop`` the
    row ends once the loop spans that many tokens; without it, at the token limit. The other row is untouched."""
    from transformers import LlamaConfig

    loop = [11, 12, 13, 14, 15]  # one entry, 5 tokens

    class Looper(torch.nn.Module):
        config = LlamaConfig(num_hidden_layers=1)

        def forward(self, input_ids, past_key_values=None, **_):  # noqa: ANN001, ANN003, ANN202
            step = past_key_values.get_seq_length()
            logits = torch.zeros(input_ids.shape[0], 1, 64)
            for row in range(input_ids.shape[0]):
                # a row whose prompt is token 1 loops; the other counts up through 20..59 (never periodic here)
                looping = int(input_ids[row, -1]) in (1, *loop)
                logits[row, 0, loop[step % 5] if looping else 20 + step % 40] = 1.0
            past_key_values.update(torch.zeros(input_ids.shape[0], 1, input_ids.shape[1], 2),
                                   torch.zeros(input_ids.shape[0], 1, input_ids.shape[1], 2), 0)
            return type("Out", (), {"logits": logits})()

    ids = torch.tensor([[1], [2]])
    out = decode(Looper(), ids, torch.ones_like(ids), max_new=40, eos=None,
                 pick=lambda logits, rows: logits.argmax(-1), repeat_stop=20)
    assert out[0].finish_reason == "repeat" and len(out[0].tokens) == 20
    assert out[1].finish_reason == "length" and len(out[1].tokens) == 40
    free = decode(Looper(), ids, torch.ones_like(ids), max_new=40, eos=None, pick=lambda logits, rows: logits.argmax(-1))
    assert [d.finish_reason for d in free] == ["length", "length"] and len(free[0].tokens) == 40


def test_repeat_stop_keys_the_cache_only_when_on(checkpoint) -> None:
    off = HFBackend(parse_spec(f"hf:{checkpoint}"), PolicySection())
    on = HFBackend(parse_spec(f"hf:{checkpoint}"), PolicySection(repeat_stop=200))
    assert "repeat_stop" not in off.sampling_options  # replies cached before the setting existed are still served
    assert on.sampling_options["repeat_stop"] == 200 and on.sampling_options != off.sampling_options


def _prompts(tok) -> list[list[int]]:
    texts = ["Maximize profit from 3 products", "A factory", "Minimize the cost of shipping goods from plants to "
             "customers with capacities", "x", "Schedule nurses over a week with", "A farmer has 40 acres",
             "Blend two oils", "Route trucks from one depot to five stores at least cost"]
    return [tok(t, add_special_tokens=False)["input_ids"] for t in texts]


def test_refill_greedy_equals_generate_prompt_by_prompt(checkpoint) -> None:
    """Eight prompts through two slots: rows end at different steps (an early-and-late token as EOS) and the next
    prompt joins the running batch, left-padded to it; each row's greedy tokens are still ``generate``'s for that
    prompt alone, and ``on_done`` hears every row once, as it ends."""
    tok, model, _ = _model_and_batch(checkpoint)
    prompts, new = _prompts(tok), 20
    alone = [model.generate(torch.tensor([p]), attention_mask=torch.ones(1, len(p), dtype=torch.long),
                            max_new_tokens=new, do_sample=False, pad_token_id=tok.pad_token_id)[0, len(p):].tolist()
             for p in prompts]
    # As EOS, the token that ends the rows at the most different steps (the first such in reading order): which
    # tokens the fixture's tiny model emits depends on its training data, so the test picks, not hard-codes, one.
    def ends(token: int) -> set[int]:
        return {ref.index(token) if token in ref else len(ref) for ref in alone}

    eos = max((t for ref in alone for t in ref), key=lambda t: len(ends(t)))
    want = [ref[: ref.index(eos)] if eos in ref else ref for ref in alone]
    heard: list[int] = []
    out = stream(model, prompts, slots=2, max_new=new, eos=eos, pick=lambda logits, rows: logits.argmax(-1),
                 pad_id=tok.pad_token_id, on_done=lambda i, d: heard.append(i))
    assert [d.tokens for d in out] == want
    assert [d.finish_reason for d in out] == ["stop" if len(w) < new else "length" for w in want]
    assert sorted(heard) == list(range(len(prompts))) and heard != list(range(len(prompts)))  # ended out of order
    assert len({len(w) for w in want}) > 2


def test_refill_holds_at_most_slots_rows_and_trims_the_cache(checkpoint) -> None:
    """Every forward sees at most ``slots`` rows, and the keys it attends over never span more than the longest
    prompt plus the token limit: the columns left behind by departed rows are cut (without the cut, the width
    would grow with every prompt that joins)."""
    tok, model, _ = _model_and_batch(checkpoint)
    prompts, new = _prompts(tok) * 3, 12
    seen: list[tuple[int, int]] = []
    model.register_forward_pre_hook(
        lambda _, args, kwargs: seen.append((kwargs["input_ids"].shape[0], kwargs["attention_mask"].shape[1])),
        with_kwargs=True)
    # Rows whose index is 2 mod 5 end at once (token 7 is EOS), the others run to the limit: departures at
    # staggered steps, each followed by a newcomer.
    out = stream(model, prompts, slots=3, max_new=new, eos=7, pad_id=tok.pad_token_id,
                 pick=lambda logits, rows: torch.tensor(rows) % 5 + 5)
    assert all(rows <= 3 for rows, _ in seen)
    assert max(width for _, width in seen) <= max(map(len, prompts)) + new
    assert len(out) == len(prompts) and all(d.finish_reason in ("stop", "length") for d in out)
    assert sum(len(d.tokens) for d in out) > 0


def test_refill_waits_for_an_empty_batch_on_sliding_window_caches() -> None:
    from transformers.cache_utils import DynamicCache, DynamicLayer, DynamicSlidingWindowLayer

    from flywheel.policies.backends.decode import _joinable

    plain, windowed = DynamicCache(), DynamicCache()
    plain.layers, windowed.layers = [DynamicLayer()], [DynamicLayer(), DynamicSlidingWindowLayer(sliding_window=4)]
    assert _joinable(plain) and not _joinable(windowed)


def test_hf_run_hands_on_rows_as_they_end_and_fails_only_the_rest(checkpoint) -> None:
    """``HFBackend.run`` streams: rows that ended before the backend broke keep their completions; only the rows
    still waiting or in flight become infrastructure failures (not the model's answer)."""
    import asyncio

    from flywheel.policies.backends.base import ChatRequest, Completion, InfraFailure

    backend = HFBackend(parse_spec(f"hf:{checkpoint}"), PolicySection(concurrency=2))
    backend._load()
    calls = {"n": 0}

    def breaker(*_):  # noqa: ANN002, ANN202
        calls["n"] += 1
        # Forwards 1-4 (one prefill, three steps) end rows 0 and 1 at their 4-token limit; 5-6 start rows 2 and 3.
        if calls["n"] > 6:
            raise RuntimeError("simulated out of memory")

    backend._model.register_forward_pre_hook(breaker)
    requests = [ChatRequest(key=str(i), messages=({"role": "user", "content": f"problem {i}"},), temperature=0.0,
                            top_p=1.0, max_tokens=4, seed=i) for i in range(5)]
    got: dict[str, object] = {}
    asyncio.run(backend.run(requests, lambda req, out: got.setdefault(req.key, out)))
    assert sorted(got) == [str(i) for i in range(5)]
    assert all(isinstance(got[k], Completion) for k in ("0", "1"))
    assert all(isinstance(got[k], InfraFailure) and "simulated" in got[k].message for k in ("2", "3", "4"))
