"""The device layer: which torch device, which collective backend, how to shard with FSDP2.

A registry of three devices. CPU (gloo) and CUDA (nccl) run here or on any GPU box; the Ascend NPU entry (hccl via
torch_npu) is the thin layer the issue asks for and has NOT been executed on this machine (no NPU, no torch_npu):
it follows torch_npu's documented API (``import torch_npu`` registers the ``npu`` device and the ``hccl`` backend;
FSDP2 runs on it unchanged through the device-agnostic ``torch.distributed`` API). Anything NPU-specific beyond that
(fused kernels) belongs to ``kernels/`` and is patched in through ``kernels.apply``.
"""

from __future__ import annotations

import ctypes
import functools
import os
from dataclasses import dataclass
from typing import Any

import torch
import torch.distributed as dist
from torch import nn

from solvers.errors import ConfigError, unknown_name


@dataclass(frozen=True)
class DeviceSpec:
    name: str
    backend: str
    executed_here: bool  # has this path run on the machine the code was written on?

    def torch_device(self, local_rank: int) -> torch.device:
        if self.name == "cpu":
            return torch.device("cpu")
        return torch.device(f"{self.name}:{local_rank}")

    def check(self) -> None:
        if self.name == "cuda" and not torch.cuda.is_available():
            raise ConfigError("CUDA requested but torch.cuda.is_available() is False", culprit="--device")
        if self.name == "npu":
            try:
                import torch_npu  # noqa: F401  (registers torch.npu and the hccl backend)
            except ImportError:
                raise ConfigError("device npu needs torch_npu (pip install or-flywheel[npu]) on an Ascend host",
                                  culprit="--device") from None

    def set_device(self, local_rank: int) -> None:
        if self.name == "cuda":
            torch.cuda.set_device(local_rank)
        elif self.name == "npu":  # not executed here
            torch.npu.set_device(local_rank)  # type: ignore[attr-defined]

    def synchronize(self) -> None:
        if self.name == "cuda":
            torch.cuda.synchronize()
        elif self.name == "npu":  # not executed here
            torch.npu.synchronize()  # type: ignore[attr-defined]

    def peak_memory_mb(self) -> float:
        if self.name == "cuda":
            return torch.cuda.max_memory_allocated() / 2**20
        if self.name == "npu":  # not executed here
            return torch.npu.max_memory_allocated() / 2**20  # type: ignore[attr-defined]
        import resource

        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB: process peak RSS

    def release_free_memory(self) -> bool:
        """Return the host allocator's free pages to the OS (CPU with glibc: ``malloc_trim(0)``); False where there
        is nothing to do (an accelerator's caching allocator keeps its own pool) or no such call (musl, macOS).

        Why: a training step frees GBs of activations whose sizes change with the row lengths; glibc keeps freed
        chunks below its mmap threshold (up to 32 MB) in the heap, and the heap only ever grows. Measured on
        SmolLM2-135M SFT, 2 x 2048-token micro-batches: resident memory 12.2 GB after 31 steps and 17 GB after 145
        without a trim, 3.5 GB after each step's trim and a 7.5 GB peak (the trim itself 0.08-0.14 s)."""
        if self.name != "cpu":
            return False
        trim = _malloc_trim()
        if trim is None:
            return False
        trim(0)  # 1 if pages went back, 0 if none were free: either way the heap holds no free page now
        return True


@functools.cache
def _malloc_trim() -> Any:
    try:
        return ctypes.CDLL("libc.so.6").malloc_trim
    except (OSError, AttributeError):
        return None


DEVICES: dict[str, DeviceSpec] = {
    "cpu": DeviceSpec("cpu", "gloo", True),
    "cuda": DeviceSpec("cuda", "nccl", False),
    "npu": DeviceSpec("npu", "hccl", False),
}


def get_device(name: str) -> DeviceSpec:
    if name not in DEVICES:
        raise unknown_name("device", name, list(DEVICES))
    spec = DEVICES[name]
    spec.check()
    return spec


@dataclass(frozen=True)
class World:
    rank: int
    size: int
    local_rank: int
    device: torch.device

    @property
    def distributed(self) -> bool:
        return self.size > 1

    @property
    def main(self) -> bool:
        return self.rank == 0


def init_world(device: DeviceSpec) -> World:
    """Join the process group torchrun set up (env://), or a world of one without torchrun."""
    size = int(os.environ.get("WORLD_SIZE", "1"))
    rank = int(os.environ.get("RANK", "0"))
    local = int(os.environ.get("LOCAL_RANK", "0"))
    device.set_device(local)
    if size > 1 and not dist.is_initialized():
        dist.init_process_group(device.backend)
    return World(rank, size, local, device.torch_device(local))


def shard_model(model: nn.Module, world: World) -> nn.Module:
    """FSDP2: each decoder layer is its own unit (gathered just in time), then the root (embeddings, head)."""
    if not world.distributed:
        return model
    from torch.distributed.fsdp import fully_shard

    for layer in model.model.layers:  # type: ignore[union-attr]
        fully_shard(layer)
    fully_shard(model)
    return model


def all_reduce_sum(values: list[float], world: World) -> list[float]:
    if not world.distributed:
        return values
    t = torch.tensor(values, dtype=torch.float64, device=world.device)
    dist.all_reduce(t)
    return t.cpu().tolist()
