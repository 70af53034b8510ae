"""Fused training kernels and the kernel tuner."""
