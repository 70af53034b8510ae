"""Triton kernels (imported lazily by the ``triton`` backends; needs the ``triton`` package).

Written for CUDA. On a machine without a GPU they run under ``TRITON_INTERPRET=1`` (the tests do, in fp32: bf16 is
unreliable in the interpreter). Each file: forward and backward kernels plus the autograd Function that calls them.
"""
