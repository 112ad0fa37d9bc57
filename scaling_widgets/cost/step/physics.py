"""What each chip does, as microbenchmarks measured it (MODEL.md §F.1): never fitted on a
training run.

Four curves per chip, each fitted by ``benchmarks/fit_physics.py`` on the published
measurements in ``benchmarks/data/`` (every row cited there) and tested against them by
``tests/cost/test_chip_physics.py``:

- dense GEMMs: a share of the bf16 peak e(g) = e_max·g/(g + g_half), g the GEMM's FLOPs 2·M·N·K
  (small GEMMs fill fewer of the chip's units and waves); in fp8 its own curve, a share of the
  fp8 peak;
- fused attention: the forward pass at a share a_max·s'/(s' + s_half)·H/(H + H_half) of the
  peak, s' the keys a query sees on average (s, or s/2 under causal masking), H the head
  dimension; the backward pass at ``attention_backward`` times that;
- memory-bound kernels: a share of the HBM bandwidth;
- collectives: the share of each tier's bandwidth a ring reaches (bus bandwidth over the link's),
  and a latency per step of the ring, inside a node (or on ICI) and across nodes; inside a node
  whose NVSwitch reduces in the network (NVLink SHARP, "NVLS": third-generation NVSwitch, Hopper
  on), an all-reduce sends each chip's array once and receives the sum once, at its own share of
  NVLink, and NCCL runs whichever of the ring and NVLS is faster;
- how much identical chips differ in speed: the spread of many chips' times on one kernel.
"""

from __future__ import annotations

from dataclasses import fields

import numpy as np
from numpy.typing import ArrayLike

from ..ground.records import record
from ..hardware.chip import Chip


@record
class ChipPhysics:
    """A chip's measured curves (MODEL.md §F.1); shares are of the datasheet's peaks."""

    e_max: float = 0.8  # share of the bf16 peak large GEMMs reach
    g_half: float = 1e10  # FLOPs of a GEMM that reaches half of it [FLOP]
    e_max_fp8: float = 0.7  # the same in fp8, as a share of the fp8 peak
    g_half_fp8: float = 2e10
    attention_max: float = 0.6  # share of the peak fused attention's forward pass reaches
    attention_half: float = 1024.0  # keys a query sees at half of it [tokens]
    attention_head_half: float = 32.0  # head dimension at half of it
    attention_backward: float = 0.8  # backward pass efficiency over the forward's
    hbm_efficiency: float = 0.85  # share of the HBM bandwidth memory-bound kernels reach
    link_ici: float = 0.8  # share of a tier's bandwidth a ring reaches: TPU ICI
    link_nvlink: float = 0.8  # NVLink inside a node
    link_nvls: float = 0.0  # an all-reduce through the NVSwitch's reduction (NVLS); 0: none
    link_nic: float = 0.8  # one NIC per GPU across nodes
    link_dcn: float = 0.8  # between TPU pods
    latency: float = 5e-6  # per step of a collective's ring inside a node or on ICI [s]
    latency_nic: float = 5e-6  # the same across nodes
    # the spread (a standard deviation) of identical chips' speed on compute-bound work: each
    # step waits for the slowest of the job's chips (0: no measurements, every chip alike)
    speed_spread: float = 0.0


# What a chip without measurements of its own is given: plausible shares, not a fit.
DATASHEET = ChipPhysics()
NAMES = tuple(f.name for f in fields(ChipPhysics))

# chip id -> its curves, as ``benchmarks/fit_physics.py`` printed them (2026-12-07), fitted on the
# rows of ``benchmarks/data/`` with the chip's name. What a chip's rows do not measure comes, in
# order, from its own die measured under another name (the kernels: GEMM knees and attention, H200
# the H100's, GB200 the B200's), else the median of the measured chips of its kind (g_half as a
# time, g_half/C), else ``DATASHEET``. So: TPU v4p's GEMMs, ICI and latency and TPU v5p's GEMMs are
# their kind's median; the A100's NIC and the B200's HBM too; every TPU's HBM share and share of the
# data-center network are the v6e's (one copy of 32 MiB, one all-reduce across v6e-256 slices at 4.1
# GB/s a chip, a third of its share of the network); no TPU has attention rows the fit can use
# (datasheet). The spread of identical chips' speed is measured on 219 A100s (ResNet-50 training,
# one GPU each; 392 V100s' SGEMMs, no preset, spread alike): every GPU takes the A100's, no TPU has
# any (datasheet: chips alike). A100, H200 and GB200 were measured at large GEMMs only (GB200's
# smaller GEMM ran faster: no knee): their g_half is their die's time constant, the A100's the GPUs'
# median. B200's fp8 knee is OpenXLA's sm_100 table (B200 or GB200, SKU not stated) like its bf16
# one. Attention is FlashAttention-2's on A100 and H100, FlashAttention-4's on B200. The collectives
# are fitted on messages of a megabyte and more (what a training step sends); the TPU v5e's ICI
# latency ends on its bound of a microsecond (two rows, both bandwidth-bound). Inside a node, the
# ring's share is fitted on the rows a ring ran (NVLS off, gathers, scatters, or NCCL's choice where
# the ring was the faster) and NVLS's on the all-reduces that ran through the switch or may have
# (NCCL's choice): H100 0.82 and 0.64, H200 0.81 and 0.59, B200 0.75 and 0.48 of NVLink. A ring
# moves 2(n - 1)/n of the array, NVLS the array once, so NVLS wins the all-reduces of more GPUs.
# GB200's rows are all NVLS: its ring is its kind's median. The A100's NVSwitch has no NVLS.
PHYSICS: dict[str, ChipPhysics] = {
    "tpu-v4p": ChipPhysics(e_max=0.9066, g_half=3.004e+10, hbm_efficiency=0.8497, link_ici=0.9672,
                           link_dcn=0.3291, latency=4.797e-06),
    "tpu-v5e": ChipPhysics(e_max=0.9409, g_half=2.096e+10, hbm_efficiency=0.8497, link_ici=1.001,
                           link_dcn=0.3291, latency=1e-06),
    "tpu-v5p": ChipPhysics(e_max=0.9066, g_half=5.013e+10, hbm_efficiency=0.8497, link_ici=0.9594,
                           link_dcn=0.3291, latency=4.797e-06),
    "tpu-v6e": ChipPhysics(e_max=0.8723, g_half=1.031e+11, hbm_efficiency=0.8497, link_ici=0.9672,
                           link_dcn=0.3291, latency=5.404e-06),
    "a100": ChipPhysics(e_max=0.8602, g_half=1.772e+09, attention_max=0.8484, attention_half=254.9,
                        attention_head_half=18.69, attention_backward=0.8312, hbm_efficiency=0.8711,
                        link_nvlink=0.7696, link_nic=0.9351, latency=6.116e-06,
                        latency_nic=2.481e-06, speed_spread=0.02052),
    "h100": ChipPhysics(e_max=0.8112, g_half=4.677e+09, e_max_fp8=0.6454, g_half_fp8=1.325e+10,
                        attention_max=0.388, attention_half=219.6, attention_head_half=11.2,
                        attention_backward=0.8968, hbm_efficiency=0.7564, link_nvlink=0.8213,
                        link_nvls=0.6378, link_nic=0.9615, latency=2.911e-05,
                        latency_nic=1.941e-06, speed_spread=0.02052),
    "h200": ChipPhysics(e_max=0.8674, g_half=4.677e+09, e_max_fp8=0.8057, g_half_fp8=1.325e+10,
                        attention_max=0.388, attention_half=219.6, attention_head_half=11.2,
                        attention_backward=0.8968, hbm_efficiency=0.6978, link_nvlink=0.8115,
                        link_nvls=0.5911, link_nic=0.9138, latency=3.71e-06,
                        latency_nic=2.503e-06, speed_spread=0.02052),
    "b200": ChipPhysics(e_max=0.6769, g_half=9.224e+09, e_max_fp8=0.7193, g_half_fp8=2.179e+10,
                        attention_max=0.8605, attention_half=600.7, attention_head_half=21.54,
                        attention_backward=0.8967, hbm_efficiency=0.7387, link_nvlink=0.7547,
                        link_nvls=0.4756, link_nic=0.9564, latency=5.377e-06,
                        latency_nic=6.68e-06, speed_spread=0.02052),
    "gb200-nvl72": ChipPhysics(e_max=0.6378, g_half=1.025e+10, e_max_fp8=0.6322,
                               g_half_fp8=2.421e+10, attention_max=0.8605, attention_half=600.7,
                               attention_head_half=21.54, attention_backward=0.8967,
                               hbm_efficiency=0.721, link_nvlink=0.7905, link_nvls=0.4921,
                               link_nic=0.8565, latency=4.299e-06, latency_nic=2.46e-06,
                               speed_spread=0.02052),
}  # fmt: skip
# The H800 is the H100's die and HBM with its NVLink cut (presets.py): its kernels and the shares
# of each link they reach are the H100's; its links' bandwidths are its own chip's.
PHYSICS["h800"] = PHYSICS["h100"]
# The A100 40GB and the H100 96GB are the A100's and the H100's dies with another HBM: their
# kernels, and the shares of HBM's and each link's bandwidth they reach, are those chips'.
PHYSICS["a100-40gb"] = PHYSICS["a100"]
PHYSICS["h100-96gb"] = PHYSICS["h100"]
# Nobody measured a B300's kernels or a V100's in the sources the fit reads: the GB300 takes the
# GB200's Blackwell curves, the V100 the A100's shares of its own datasheet figures (the spread of
# identical chips was measured on 392 V100s' SGEMMs alike the A100s').
PHYSICS["gb300-nvl72"] = PHYSICS["gb200-nvl72"]
PHYSICS["v100"] = PHYSICS["a100"]


def physics_of(chip: Chip) -> ChipPhysics:
    """A chip's measured curves, or ``DATASHEET``'s plausible shares for a chip with none.

    Parameters
    ----------
    chip : Chip
        The chip, looked up by its id.

    Returns
    -------
    physics : ChipPhysics
        ``PHYSICS``' entry for the chip's id, else ``DATASHEET``.
    """
    return PHYSICS.get(chip.id, DATASHEET)


def matmul_efficiency(*, gemm_flops: ArrayLike, e_max: float, g_half: float) -> float | np.ndarray:
    """e_mm(g) = e_max·g/(g + g_half): small GEMMs (high TP, tiny microbatches) run less well.

    Parameters
    ----------
    gemm_flops : float or array_like
        g, the per-chip FLOPs of the GEMM, 2·M·N·K [FLOP].
    e_max : float
        e_max, the share of the peak large GEMMs reach.
    g_half : float
        g_half, the FLOPs of a GEMM that reaches half of e_max [FLOP].

    Returns
    -------
    efficiency : float or np.ndarray
        The share of the chip's peak the GEMM runs at.

    References
    ----------
    .. [1] docs/MODEL.md §F.1 (chip physics: GEMMs) and §C.1 (the matmuls of a microbatch).

    Examples
    --------
    >>> matmul_efficiency(gemm_flops=[1e8, 1e9, 1e12], e_max=0.8, g_half=1e9).round(3)
    array([0.073, 0.4  , 0.799])
    """
    g = np.asarray(gemm_flops, dtype=float)
    return e_max * g / (g + g_half)


def attention_efficiency(
    *,
    keys: ArrayLike,
    head_dim: ArrayLike,
    attention_max: float,
    attention_half: float,
    attention_head_half: float,
) -> float | np.ndarray:
    """Fused attention's forward pass, e_att = a_max·s'/(s' + s_half)·H/(H + H_half): short
    sequences and narrow heads give each tile less work per load.

    Parameters
    ----------
    keys : float or array_like
        s', the keys a query sees on average (s, or s/2 under causal masking) [tokens].
    head_dim : float or array_like
        H, the head dimension [features].
    attention_max : float
        a_max, the share of the peak the forward pass reaches at long sequences and wide
        heads.
    attention_half : float
        s_half, the keys a query sees at half of a_max [tokens].
    attention_head_half : float
        H_half, the head dimension at half of a_max [features].

    Returns
    -------
    efficiency : float or np.ndarray
        The share of the chip's peak the forward pass runs at.

    References
    ----------
    .. [1] docs/MODEL.md §F.1 (chip physics: fused attention) and §C.1 (the matmuls of a
       microbatch).

    Examples
    --------
    >>> attention_efficiency(keys=[512, 8192], head_dim=128, attention_max=0.7,
    ...                      attention_half=512, attention_head_half=16).round(3)
    array([0.311, 0.586])
    """
    s, H = np.asarray(keys, dtype=float), np.asarray(head_dim, dtype=float)
    return attention_max * s / (s + attention_half) * H / (H + attention_head_half)


def slowest_of(chips: ArrayLike) -> np.ndarray:
    """How many spreads the slowest of n chips lies behind the typical one: the expected largest
    of n standard normal draws, Φ⁻¹((n − 0.375)/(n + 0.25)) (Blom's approximation, its tail
    inverted by Abramowitz and Stegun's 26.2.23; within 1 % of the exact expectation): 0 for one
    chip, 1.43 for 8, 2.59 for 128, 3.96 for 16,384 (MODEL.md §F.1).

    Parameters
    ----------
    chips : int or array_like
        N, the chips of the job; fewer than one counts as one [chips].

    Returns
    -------
    z : np.ndarray
        The slowest chip's lag, in spreads (≥ 0).

    References
    ----------
    .. [1] docs/MODEL.md §C.2 (the slowest chip) and §F.1 (the spread of identical chips'
       speed).
    .. [2] G. Blom, *Statistical Estimates and Transformed Beta-Variables*, Wiley, 1958.
    .. [3] M. Abramowitz and I. A. Stegun, *Handbook of Mathematical Functions*, National
       Bureau of Standards, 1964, formula 26.2.23.

    Examples
    --------
    >>> slowest_of([1, 8, 128, 16384]).round(2).tolist()
    [0.0, 1.43, 2.59, 3.96]
    """
    n = np.maximum(np.asarray(chips, dtype=float), 1.0)
    t = np.sqrt(-2 * np.log(0.625 / (n + 0.25)))  # the tail beyond: 1 − (n − 0.375)/(n + 0.25)
    z = t - (2.515517 + 0.802853 * t + 0.010328 * t**2) / (
        1 + 1.432788 * t + 0.189269 * t**2 + 0.001308 * t**3
    )
    return np.maximum(z, 0.0)
