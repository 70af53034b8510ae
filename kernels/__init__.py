"""Fused training kernels and the kernel tuner.

Layers as in Liger-Kernel: ``kernels.ops`` (one file per op, backends registered by name in ``kernels.registry``),
``kernels.modules`` (forwards / modules that call ops through a tuning table), ``kernels.patch`` (``apply`` /
``revert`` on HF models). ``kernels.tuner`` chooses the backends and writes the table; ``kernels.peak`` measures the
CPU matmul peak used for MFU.
"""

from kernels.patch import apply, patched_ops, revert
from kernels.table import TuningTable

__all__ = ["TuningTable", "apply", "patched_ops", "revert"]
