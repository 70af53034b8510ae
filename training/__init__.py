"""The trainer and launcher: CPT and SFT on curated shards (CPU / CUDA / Ascend NPU).

Modules, in the order data flows through them:
``config`` (TOML recipes), ``tokenizer`` (digit-split BPE + ChatML template), ``data`` (shards -> packed rows with
per-document positions, SFT assistant-only targets, weighted mixtures), ``models`` (tiny HF configs or a local
checkpoint), ``moe`` (aux loss, DeepSeek-V3 bias update, expert load), ``flops`` (FLOPs/token, peak, MFU),
``device`` (cpu/cuda/npu, process group, FSDP2), ``trainer`` (the loop, checkpoints, resume), ``progressive``
(staged OR share with a general-loss guard), ``launch`` (one process or torchrun).
Training reads shards and writes checkpoints; it imports only ``kernels`` and ``solvers`` from the project (the
layers in pyproject.toml). CPT checkpoint selection, which generates problems and runs the sandbox, is evaluation
(``flywheel.evaluate.selection``); shards written straight from the generators are curation
(``flywheel.curation.synthetic``).
"""
