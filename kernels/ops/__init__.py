"""One module per op; importing this package registers every backend (see ``kernels.registry``)."""

from kernels.ops import (
    attention,
    fused_linear_cross_entropy,
    linear,
    moe_dispatch,
    moe_router,
    rms_norm,
    rope,
    swiglu,
)

__all__ = ["attention", "fused_linear_cross_entropy", "linear", "moe_dispatch", "moe_router", "rms_norm", "rope", "swiglu"]
