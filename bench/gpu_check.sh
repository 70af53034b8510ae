#!/usr/bin/env bash
# GPU check for the kernels issue, for a machine with one H200 (or any CUDA GPU with Triton). Run once on an H200 on
# 2026-12-04 (bench/results/gpu_check.{json,log}); rerun it when a GPU is lent, and record the figures in the note.
#
#   bash bench/gpu_check.sh            # ~6-9 minutes on an H200; every stage has its own timeout
#
# 1. Triton kernels for real (CUDA, fp32 and bf16) against `reference`, forward + backward, on the captured /
#    random / adversarial inputs of kernels.verify.
# 2. A ~1B-active Qwen3-MoE (random init, bf16 autocast): `kernels.tuner.tune` profiles a step, races every
#    backend available on CUDA (reference, fused, compiled, triton, sorted, grouped_mm, ...), writes the table, and
#    times the training step without and with it; MFU from training.flops (6 N_active + 12 L H d S per token)
#    against the H200 bf16 dense peak of the device table.
# Output: printed, and bench/results/gpu_check.json (+ the table in bench/results/gpu_table.json).
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PY:-.venv/bin/python}
[ -x "$PY" ] || PY=python3
OUT_DIR=${OUT:-bench/results}
mkdir -p "$OUT_DIR"
"$PY" -c "import torch, triton; assert torch.cuda.is_available(); print(torch.cuda.get_device_name(), 'torch', torch.__version__, 'triton', triton.__version__)"

STAGES=${GPU_CHECK_STAGES:-"1 2"}  # e.g. GPU_CHECK_STAGES=2 to rerun the step alone
if [[ " $STAGES " == *" 1 "* ]]; then
echo "== 1. Triton kernels vs reference on CUDA =="
timeout 180 "$PY" - <<'PYEOF'
import sys, torch
from kernels.verify import compare, variants
dev = "cuda"
def leaf(*s, seed=0):
    return torch.randn(*s, generator=torch.Generator().manual_seed(seed)).to(dev).requires_grad_(True)
ang = torch.randn(4, 256, 64, generator=torch.Generator().manual_seed(9)).to(dev)
cases = [("rms_norm", (leaf(8, 256, 2048), leaf(2048, seed=1), 1e-6)),
         ("rms_norm", (leaf(8, 16, 256, 128), leaf(128, seed=1), 1e-6)),
         ("swiglu", (leaf(4096, 1024), leaf(4096, 1024, seed=1))),
         ("rope", (leaf(4, 16, 256, 128), leaf(4, 4, 256, 128, seed=1), torch.cat([ang.cos()] * 2, -1),
                   torch.cat([ang.sin()] * 2, -1)))]
bad = 0
for dtype in ("float32", "bfloat16"):
    for op, args in cases:
        for name, inputs in variants(op, args):
            c = compare(op, "triton", inputs, {}, dtype, dev)
            bad += not c.ok
            print(f"{op:9s} {dtype:9s} {name:9s} ok={c.ok} rel_err={c.max_error:.2e} {c.detail}")
print("triton vs reference:", "ALL OK" if not bad else f"{bad} FAILED")
sys.exit(1 if bad else 0)
PYEOF
fi

[[ " $STAGES " == *" 2 "* ]] || exit 0
echo "== 2. ~1B-active MoE training step, without and with the tuned table =="
timeout ${GPU_CHECK_STEP_TIMEOUT:-420} "$PY" - "$OUT_DIR" <<'PYEOF'
import json, sys, time
from pathlib import Path
import torch
from transformers import AutoModelForCausalLM, Qwen3MoeConfig
from kernels.tuner import tune
from training.flops import active_matmul_params, device_peak, flops_per_token

out_dir = Path(sys.argv[1])
ROWS, SEQ = 4, 2048
cfg = Qwen3MoeConfig(vocab_size=32000, hidden_size=2048, num_hidden_layers=20, num_attention_heads=16,
                     num_key_value_heads=4, head_dim=128, intermediate_size=4096, moe_intermediate_size=1024,
                     num_experts=32, num_experts_per_tok=4, norm_topk_prob=True, max_position_embeddings=SEQ,
                     tie_word_embeddings=False, router_aux_loss_coef=0.0)
torch.manual_seed(0)
model = AutoModelForCausalLM.from_config(cfg, dtype=torch.float32).cuda()
active = active_matmul_params(model)
print(f"params total {sum(p.numel() for p in model.parameters()) / 1e9:.2f} B, active matmul {active / 1e9:.2f} B")
batch = torch.randint(0, cfg.vocab_size, (ROWS, SEQ), device="cuda")
t0 = time.time()
table, results, steps = tune(model, batch, "bfloat16", "cuda", repeats=5, step_repeats=3,
                             out=out_dir / "gpu_table.json", progress=lambda s: print("  ", s, flush=True))
fpt = flops_per_token(model, SEQ)
peak, src = device_peak("cuda", torch.bfloat16)
# MFU after: against the highest peak among the dtypes the tuned table's GEMMs run in (as the trainer does).
from kernels.patch import gemm_dtypes
peak_after, src_after = max(device_peak("cuda", getattr(torch, d)) for d in sorted(gemm_dtypes(table, "cuda", "bfloat16")))
tokens = ROWS * SEQ
rows = []
for r in results:
    ref = next(c for c in r.candidates if c.backend == "reference")
    for c in r.candidates:
        rows.append({"op": r.op, "shape": r.shape, "backend": c.backend, "ok": c.ok, "ms": c.ms,
                     "speedup": ref.ms / c.ms if c.ok else None, "winner": c.backend == r.winner, "detail": c.detail})
        print(f"  {r.op:27s} {r.shape:28s} {c.backend:18s} ok={c.ok!s:5s} {c.ms:8.3f} ms"
              f"{'  <- winner' if c.backend == r.winner else ''} {c.detail[:60]}")
summary = {"device": torch.cuda.get_device_name(), "tokens_per_step": tokens, "flops_per_token": fpt,
           "peak_flops": peak, "peak_source": src, "step_s_before": steps["before_s"], "step_s_after": steps["after_s"],
           "speedup": steps["before_s"] / steps["after_s"],
           "mfu_before": tokens * fpt / steps["before_s"] / peak, "mfu_after": tokens * fpt / steps["after_s"] / peak_after,
           "peak_source_after": src_after,
           "tune_wall_s": time.time() - t0, "max_memory_gb": torch.cuda.max_memory_allocated() / 2**30,
           "candidates": rows}
print(f"step: before {steps['before_s']:.3f} s (MFU {100 * summary['mfu_before']:.1f}%), after "
      f"{steps['after_s']:.3f} s (MFU {100 * summary['mfu_after']:.1f}%), {summary['speedup']:.2f}x; "
      f"peak {src}; tune wall {summary['tune_wall_s']:.0f} s")
(out_dir / "gpu_check.json").write_text(json.dumps(summary, indent=2, default=str))
PYEOF
