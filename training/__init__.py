"""The trainer and launcher: CPT and SFT on curated shards (CPU / CUDA / Ascend NPU)."""
