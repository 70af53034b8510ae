"""The trainer and launcher: CPT and SFT on curated shards (CPU / CUDA / Ascend NPU).

Modules, in the order data flows through them:
``config`` (TOML recipes), ``tokenizer`` (digit-split BPE + ChatML template), ``data`` (shards -> packed rows with
per-document positions, SFT assistant-only targets, weighted mixtures), ``models`` (tiny HF configs or a local
checkpoint), ``moe`` (aux loss, DeepSeek-V3 bias update, expert load), ``flops`` (FLOPs/token, peak, MFU),
``device`` (cpu/cuda/npu, process group, FSDP2), ``trainer`` (the loop, checkpoints, resume), ``progressive``
(staged OR share with a general-loss guard), ``selection`` (CPT checkpoint choice by proxy SFT + Pass@1),
``launch`` (one process or torchrun), ``synthetic`` (export-format shards from the generators, for tests).
Training reads shard files only: nothing here imports the store or curation.
"""
