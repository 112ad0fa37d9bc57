"""A chip and the pod it sits in (MODEL.md §A.7, §B.5), checked when it is built: a chip of
your own from a JSON file fails with a message naming the field."""

from __future__ import annotations

import math

from ..ground.records import record
from ..ground.refusals import is_number, is_positive, is_whole, require

WRAPAROUND_RULES = ("cube", "full-axis", "switched")
LARGEST_POD = 2**24  # chips in a pod: 500 times the largest preset's 32,768 GPUs
# PyTorch's cuBLAS workspace of a handle but on Hopper and Blackwell, 4096 KiB x 2 + 16 KiB x 8
# (aten/src/ATen/cuda/CublasHandlePool.cpp, getChosenWorkspaceSize) [bytes]
BLAS_WORKSPACE = 4096 * 1024 * 2 + 16 * 1024 * 8


@record
class Chip:
    """One accelerator and the pod it sits in (MODEL.md §A.7). SI units: FLOP/s, bytes, bytes/s.

    ``wraparound`` says which slice axes are rings: ``"cube"`` (TPU v4p/v5p) when the slice is
    made of whole 4x4x4 cubes, every axis wraps; ``"full-axis"`` (v5e/v6e) an axis wraps only
    when it is as long as the pod's; ``"switched"`` (GPUs) there is no torus at all.

    A GPU (MODEL.md §B.5) has ``node_size`` > 0: its NVLink domain. ``ici_bw`` is then the NVLink
    egress per GPU, ``scaleout_bw`` the NIC per GPU, and ``pod_shape`` is (nodes, node_size).
    """

    name: str
    flops: float  # C, peak bf16 matmul FLOP/s
    hbm_bytes: float
    hbm_bw: float  # HBM bandwidth [bytes/s]
    ici_bw: float  # W_ici, bidirectional, per mesh axis [bytes/s]
    pod_shape: tuple[int, ...]  # the largest slice, one length per ICI axis
    dcn_bw: float  # W_dcn, egress per chip [bytes/s]
    wraparound: str = "cube"
    node_size: int = 0  # GPUs per NVLink domain; 0 for a TPU torus
    scaleout_bw: float = 0.0  # a GPU's NIC [bytes/s]
    flops_fp8: float = 0.0  # peak dense fp8 matmul FLOP/s; 0: no fp8 matmuls
    power: float = 0.0  # rated board power [W], for a run's energy; 0: none published
    id: str = ""  # the preset's key ("h100"), by which its tables find it; "" for your own chip
    hbm_limit: float = 0.0  # what the runtime lets a program allocate [bytes]; 0: hbm_bytes
    # held outside the framework's allocator: CUDA's context and NCCL's buffers [bytes]
    runtime_bytes: float = 0.0
    # the matmul library's workspace of one handle, held through the allocator [bytes]; None:
    # PyTorch's default, 32 MiB on Hopper and Blackwell and 8 MiB + 128 KiB before them (a GPU),
    # none on a TPU (MODEL.md §E.1)
    blas_workspace: float | None = None

    def __post_init__(self):
        require(self, "name", isinstance(self.name, str), "a string")
        require(self, "id", isinstance(self.id, str), "a string")
        for field in ("flops", "hbm_bytes", "hbm_bw", "ici_bw", "dcn_bw"):
            require(self, field, is_positive(getattr(self, field)), "a number > 0 and < 1e30")
        limit = self.hbm_limit
        ok = is_number(limit) and 0 <= limit < 1e30
        require(self, "hbm_limit", ok, "bytes from 0 (HBM's own) to 1e30")
        held = self.runtime_bytes
        ok = is_number(held) and 0 <= held < (self.hbm_limit or self.hbm_bytes)
        require(self, "runtime_bytes", ok, "bytes from 0 to below the HBM a program may use")
        power = self.power
        ok = isinstance(power, (int, float)) and not isinstance(power, bool) and 0 <= power < 1e6
        require(self, "power", ok, "watts from 0 (none published) to 1e6")
        shape = self.pod_shape
        ok = (
            isinstance(shape, (tuple, list))
            and 0 < len(shape) <= 4
            and all(is_whole(n, 2**20) for n in shape)
        )
        ok = ok and math.prod(shape) <= LARGEST_POD
        require(
            self,
            "pod_shape",
            ok,
            "1 to 4 axis lengths from 1 to 2**20 each, of 2**24 chips at most",
        )
        object.__setattr__(self, "pod_shape", tuple(shape))
        rule = self.wraparound
        require(
            self,
            "wraparound",
            isinstance(rule, str) and rule in WRAPAROUND_RULES,
            f"one of {WRAPAROUND_RULES}",
        )
        require(
            self,
            "node_size",
            is_whole(self.node_size, 2**20, smallest=0),
            "a whole number from 0 to 2**20",
        )
        nic = self.scaleout_bw
        require(self, "scaleout_bw", is_number(nic) and 0 <= nic < 1e30, "a number >= 0 and < 1e30")
        fp8 = self.flops_fp8
        require(self, "flops_fp8", is_number(fp8) and 0 <= fp8 < 1e30, "a number >= 0 and < 1e30")
        if self.node_size:
            gpu = len(shape) == 2 and shape[1] == self.node_size
            require(self, "node_size", gpu, "the second axis of pod_shape (nodes, GPUs per node)")
            require(
                self,
                "scaleout_bw",
                nic >= 1e-30,
                "a number > 0 and < 1e30 on a GPU (node_size > 0)",
            )
        if self.blas_workspace is None:  # PyTorch's default on a GPU; a TPU has none
            object.__setattr__(self, "blas_workspace", BLAS_WORKSPACE * (self.node_size > 0))
        ok = is_number(self.blas_workspace) and 0 <= self.blas_workspace < 2**34
        require(self, "blas_workspace", ok, "bytes from 0 to 2**34")

    @property
    def usable_hbm(self) -> float:
        """The HBM a framework's allocator may fill [bytes]: what the runtime reports (XLA's
        bytes_limit, CUDA's total memory) less what it holds outside the allocator (CUDA's
        context, NCCL's buffers); what a framework's peak is held against (MODEL.md §E.5)."""
        return (self.hbm_limit or self.hbm_bytes) - self.runtime_bytes

    @property
    def is_gpu(self) -> bool:
        return self.node_size > 0

    @property
    def ici_axes(self) -> int:
        return len(self.pod_shape)

    @property
    def pod_chips(self) -> int:
        return math.prod(self.pod_shape)

    @property
    def default_slice(self) -> tuple[int, ...]:
        """The slice asked about when none is given: a TPU's full pod; on GPUs about 1,024 of
        them in whole nodes (the preset's pod of 32,768 is room, not a typical cluster)."""
        if not self.is_gpu:
            return self.pod_shape
        return (max(1, min(self.pod_shape[0], 1024 // self.node_size)), self.node_size)
