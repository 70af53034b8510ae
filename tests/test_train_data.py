"""Trainer data path: tokenizer, SFT prompt masking, packing without cross-document attention, FLOPs accounting."""

from __future__ import annotations

import pytest
import torch

from flywheel.curation.synthetic import problem_rows
from training.data import IGNORE, Document, Mixture, Source, pack, row_lengths, tokenize_row, trim_tail
from training.flops import active_matmul_params, flops_per_token
from training.models import TINY_CONFIGS, build_model, enable_activation_checkpointing
from training.tokenizer import IM_END, render_chat, train_tokenizer


@pytest.fixture(scope="module")
def rows() -> list[dict]:
    return problem_rows(12, seed=3)


@pytest.fixture(scope="module")
def tok(rows):
    return train_tokenizer([render_chat(r["messages"])[0] for r in rows] * 3, vocab_size=400)


def test_chat_template_matches_python_rendering_and_digits_split(tok, rows) -> None:
    msgs = rows[0]["messages"]
    assert tok.apply_chat_template(msgs, tokenize=False) == render_chat(msgs)[0]
    pieces = [tok.decode([i]) for i in tok("cost 12345 and 0.75", add_special_tokens=False)["input_ids"]]
    digits = [p for p in pieces if any(c.isdigit() for c in p)]
    assert digits and all(len(p.strip()) == 1 for p in digits), pieces


def test_sft_targets_are_exactly_the_assistant_tokens(tok, rows) -> None:
    for row in rows[:4]:
        doc = tokenize_row(row, tok)
        packed = pack([doc], seq_len=len(doc.ids) + 5, pad_id=tok.pad_token_id, split_long=False)
        labels = packed.labels[0].tolist()
        target_ids = [t for t in labels if t != IGNORE]
        answer = row["messages"][-1]["content"]
        expected = tok(answer + IM_END, add_special_tokens=False)["input_ids"]
        # The targets are the assistant answer and its end-of-turn token, on token ids, nothing else.
        assert target_ids == expected
        prompt = tok(render_chat(row["messages"][:-1])[0], add_special_tokens=False)["input_ids"]
        first_target = next(i for i, t in enumerate(labels) if t != IGNORE)
        # Label i predicts token i+1: no label before the assistant header's end can be a target.
        assert first_target >= len(prompt)


def _docs(n: int, lengths: list[int], vocab: int, seed: int) -> list[Document]:
    g = torch.Generator().manual_seed(seed)
    return [Document(torch.randint(4, vocab, (n_,), generator=g).tolist(), [True] * n_) for n_ in lengths[:n]]


@pytest.mark.parametrize("arch", sorted(set(TINY_CONFIGS) - {"qwen3_moe_demo"}))  # demo = same class, larger
def test_packed_forward_equals_unpacked_forward(arch: str) -> None:
    vocab = 300
    model = build_model(arch, "", vocab, {}, seed=0).eval()
    docs = _docs(4, [17, 9, 30, 12], vocab, seed=1)
    packed = pack(docs, seq_len=48, pad_id=1, split_long=True)
    assert len(packed) == 2  # row 0: docs of 17 + 9 (30 does not fit after 26); row 1: 30 + 12
    with torch.no_grad():
        out = model(input_ids=packed.input_ids, position_ids=packed.position_ids, use_cache=False).logits
        leaked = model(input_ids=packed.input_ids, position_ids=torch.arange(48).expand(len(packed), -1),
                       use_cache=False).logits
    where = [(0, 0), (0, 17), (1, 0), (1, 30)]
    for doc, (row, start) in zip(docs, where, strict=True):
        alone = model(input_ids=torch.tensor([doc.ids]), use_cache=False).logits[0]
        got = out[row, start:start + len(doc.ids)]
        # fp32, same kernels, different mask shapes: differences are summation-order noise (~1e-6 of logits ~1).
        torch.testing.assert_close(got, alone, atol=2e-5, rtol=1e-4)
    # Negative control: with positions that do not restart, the second document sees the first and differs.
    assert not torch.allclose(leaked[0, 17:26], out[0, 17:26], atol=1e-3)


def test_pack_layout_positions_and_shifted_labels() -> None:
    docs = [Document([5, 6, 7], [True] * 3), Document([8, 9], [True, True]), Document(list(range(10, 16)), [True] * 6)]
    p = pack(docs, seq_len=6, pad_id=1, split_long=True)
    assert p.input_ids.tolist() == [[5, 6, 7, 8, 9, 1], [10, 11, 12, 13, 14, 15]]
    assert p.position_ids.tolist() == [[0, 1, 2, 0, 1, 0], [0, 1, 2, 3, 4, 5]]
    # The last token of each document predicts nothing; padding predicts nothing.
    assert p.labels.tolist() == [[6, 7, IGNORE, 9, IGNORE, IGNORE], [11, 12, 13, 14, 15, IGNORE]]


def test_trim_tail_layout() -> None:
    # Row 0: a document with targets on 2..4 only, then padding; row 1: two documents, targets up to column 6.
    docs = [Document([5, 6, 7, 8, 9, 10], [False, False, True, True, True, False]), Document(list(range(20, 25)), [True] * 5),
            Document([30, 31, 32], [False, True, True])]
    p = pack(docs, seq_len=10, pad_id=1, split_long=False)
    t = trim_tail(p)
    assert t.input_ids.shape == (2, 7)  # the last target of either row sits in column 6 (row 1: predicts 31 -> 32)
    assert t.input_ids.tolist() == [r[:7] for r in p.input_ids.tolist()]
    assert t.labels.tolist() == [r[:7] for r in p.labels.tolist()]
    # Row 0's tail after its last target (column 3) continues its positions instead of restarting for the padding.
    assert t.position_ids.tolist()[0] == [0, 1, 2, 3, 4, 5, 6]
    assert t.position_ids.tolist()[1] == p.position_ids.tolist()[1][:7]  # real document boundary kept
    empty = pack([Document([5, 6], [False, False])], seq_len=4, pad_id=1, split_long=False)
    assert trim_tail(empty).input_ids.shape == (1, 1)


@pytest.mark.parametrize("arch", ["qwen3_tiny", "llama_tiny"])
def test_trim_tail_keeps_loss_and_gradients(arch: str) -> None:
    """Cutting the tail and renumbering it changes no target's logit (causal attention): same loss, same grads."""
    vocab = 300
    g = torch.Generator().manual_seed(5)
    docs = []
    for n_, prompt in ((40, 25), (22, 10), (31, 31), (18, 6)):
        docs.append(Document(torch.randint(4, vocab, (n_,), generator=g).tolist(), [i >= prompt for i in range(n_)]))
    p = pack(docs, seq_len=64, pad_id=1, split_long=False)
    t = trim_tail(p)
    assert t.input_ids.shape[1] < p.input_ids.shape[1]
    results = []
    for batch in (p, t):
        model = build_model(arch, "", vocab, {}, seed=0)
        logits = model(input_ids=batch.input_ids, position_ids=batch.position_ids, use_cache=False).logits
        loss = torch.nn.functional.cross_entropy(logits.flatten(0, 1), batch.labels.flatten(), ignore_index=IGNORE,
                                                 reduction="sum")
        loss.backward()
        results.append((float(loss), {k: q.grad.clone() for k, q in model.named_parameters() if q.grad is not None}))
    (full, g_full), (trimmed, g_trim) = results
    assert trimmed == pytest.approx(full, rel=1e-5)  # fp32; only mask shapes differ (summation-order noise)
    # The kernel-patched trainer takes HF's own loss, which views the labels flat: a strided column slice raised.
    assert t.input_ids.is_contiguous() and t.labels.is_contiguous()
    model = build_model(arch, "", vocab, {}, seed=0)
    hf = model(input_ids=t.input_ids, position_ids=t.position_ids, labels=t.labels, shift_labels=t.labels,
               num_items_in_batch=1, use_cache=False).loss
    assert float(hf) == pytest.approx(full, rel=1e-5)
    for k in g_full:
        torch.testing.assert_close(g_trim[k], g_full[k], atol=1e-6, rtol=1e-4)


def test_mixture_is_deterministic_and_resumable() -> None:
    a = pack(_docs(4, [10] * 4, 50, 0) * 4, 20, 1, True)
    b = pack(_docs(4, [20] * 4, 50, 1) * 2, 20, 1, True)

    def mix() -> Mixture:
        return Mixture([Source("a", "", 3.0, a, a), Source("b", "", 1.0, b, b)], seed=7)

    m1, m2 = mix(), mix()
    first = [m1.next_batch(s, 4).input_ids for s in range(3)]
    state = m1.state_dict()
    later = [m1.next_batch(s, 4).input_ids for s in range(3, 6)]
    for s in range(3):
        assert torch.equal(m2.next_batch(s, 4).input_ids, first[s])
    m3 = mix()
    m3.load_state_dict(state)
    for s, expect in zip(range(3, 6), later, strict=True):
        assert torch.equal(m3.next_batch(s, 4).input_ids, expect)
    # Weights decide the source of every row: weight 0 never draws, 3:1 draws about 3:1.
    a_rows = {tuple(r) for r in a.input_ids.tolist()}
    m4 = mix()
    m4.set_weights({"a": 0.0, "b": 1.0})
    assert not any(tuple(r) in a_rows for r in m4.next_batch(0, 16).input_ids.tolist())
    m5 = mix()
    drawn = torch.cat([m5.next_batch(s, 50).input_ids for s in range(4)]).tolist()
    share_a = sum(tuple(r) in a_rows for r in drawn) / len(drawn)
    # 200 draws at p = 0.75: the binomial standard deviation is 0.031, so +-0.12 is about 4 sigma.
    assert abs(share_a - 0.75) < 0.12


def test_length_groups_cut_padding_and_keep_every_row_once_per_epoch() -> None:
    """``data.length_groups``: a step's rows have similar lengths (trim_tail then keeps fewer padded columns), every
    row is still drawn exactly once per epoch, and the order stays a function of (seed, cursor)."""
    lengths = torch.randint(33, 65, (48,), generator=torch.Generator().manual_seed(4)).tolist()
    rows = pack(_docs(48, lengths, 50, seed=5), 64, 1, split_long=False)  # > 32 tokens: one document per row
    assert len(rows) == 48 and sorted(row_lengths(rows).tolist()) == sorted(n - 1 for n in lengths)
    ids = [tuple(r) for r in rows.input_ids.tolist()]

    def epoch(groups: int) -> tuple[float, list[tuple[int, ...]]]:
        mix = Mixture([Source("a", "", 1.0, rows, rows)], seed=3, length_groups=groups)
        batches = [mix.next_batch(s, 4) for s in range(12)]
        fill = sum(float((b.labels != IGNORE).sum()) / trim_tail(b).labels.numel() for b in batches) / 12
        return fill, [tuple(r) for b in batches for r in b.input_ids.tolist()]

    plain, plain_rows = epoch(0)
    grouped, grouped_rows = epoch(16)
    assert sorted(plain_rows) == sorted(grouped_rows) == sorted(ids)  # a permutation: each row once
    # Uniform lengths 33-64 in batches of 4: about 0.8 of a plain batch's columns carry targets; sorted runs of 16
    # leave a 4-row batch a span of ~6 tokens, so > 0.9 (and it is a deterministic draw: seed 3 / 5 / 4).
    assert plain < 0.87 and grouped > 0.9, (plain, grouped)
    assert epoch(16) == (grouped, grouped_rows)


def test_flops_counts_only_active_experts() -> None:
    dense = build_model("qwen3_tiny", "", 256, {}, seed=0)
    linear = sum(m.weight.numel() for m in dense.modules() if isinstance(m, torch.nn.Linear))
    assert active_matmul_params(dense) == linear
    moe = build_model("qwen3_moe_tiny", "", 256, {}, seed=0)
    experts = sum(p.numel() for n, p in moe.named_parameters() if ".experts." in n)
    others = sum(p.numel() for n, p in moe.named_parameters()
                 if p.dim() >= 2 and ".experts." not in n and "embed_tokens" not in n)
    assert active_matmul_params(moe) == pytest.approx(others + experts * 2 / 4)  # top-2 of 4 experts
    cfg = moe.config
    assert flops_per_token(moe, 128) == pytest.approx(
        6 * active_matmul_params(moe) + 12 * cfg.num_hidden_layers * cfg.num_attention_heads * cfg.head_dim * 128)


def _loss_and_grads(model, balancer, batch) -> tuple[float, dict[str, torch.Tensor], dict[str, list[float]]]:
    balancer.recording = True
    out = model(input_ids=batch.input_ids, position_ids=batch.position_ids, use_cache=False)
    ce = torch.nn.functional.cross_entropy(out.logits.flatten(0, 1), batch.labels.flatten(), ignore_index=IGNORE)
    loss = ce + balancer.aux_loss()
    balancer.recording = False
    loss.backward()
    grads = {n: p.grad.clone() for n, p in model.named_parameters() if p.grad is not None}
    routed = {name: float(stats.load.sum()) for name, stats in balancer.stats.items()}
    balancer.end_step(world=False)
    return float(loss.detach()), grads, routed


@pytest.mark.parametrize("arch", ["qwen3_moe_tiny", "deepseek_v3_tiny"])
def test_activation_checkpointing_changes_neither_loss_grads_nor_expert_load(arch: str) -> None:
    from training.moe import MoEBalancer

    batch = pack(_docs(4, [40, 30, 50, 20], 300, seed=2), 64, 1, True)
    results = []
    for checkpointing in (False, True):
        model = build_model(arch, "", 300, {}, seed=0)
        model.train()
        if checkpointing:
            enable_activation_checkpointing(model)
        balancer = MoEBalancer(model, aux_coef=0.01, bias_rate=1e-3)
        results.append(_loss_and_grads(model, balancer, batch))
    (l0, g0, load0), (l1, g1, load1) = results
    assert l0 == l1
    # Recomputing the forward in backward repeats the same fp32 ops: gradients agree to rounding of the
    # re-associated sums (1e-6 relative is far below any gradient's magnitude here).
    for name in g0:
        torch.testing.assert_close(g1[name], g0[name], rtol=1e-6, atol=1e-7)
    # Recomputed forwards are not counted again: each of the 4 x 64 tokens is routed to top_k=2 experts once.
    assert load0 == load1 and load0 and all(v == 4 * 64 * 2 for v in load1.values())
