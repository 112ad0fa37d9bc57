"""The published microbenchmarks of ``benchmarks/data/`` (every row cited there), what a chip's
physics (MODEL.md §F.1) predicts for each, and the fit of that physics to them.

Used by ``fit_physics.py`` (which prints the numbers ``cost/step/physics.py`` ships) and by
``tests/cost/test_chip_physics.py`` (which checks the shipped numbers against every row).
"""

from __future__ import annotations

import csv
import re
import sys
from dataclasses import dataclass
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from scaling_widgets.cost.step.collectives import collective_time  # noqa: E402
from scaling_widgets.cost.step.physics import (  # noqa: E402
    ChipPhysics,
    attention_efficiency,
    matmul_efficiency,
)
from scaling_widgets.presets import HARDWARE  # noqa: E402

DATA = Path(__file__).resolve().parent / "data"
# The files' chip names -> the presets'.
CHIPS = {chip.name.replace(" NVL72", "").replace("TPU v4p", "TPU v4"): chip
         for chip in HARDWARE.values()}  # fmt: skip


def rows(name: str) -> list[dict]:
    """The rows of ``benchmarks/data/<name>.csv``."""
    path = DATA / f"{name}.csv"
    if not path.exists():
        return []
    with path.open(newline="", encoding="utf-8") as f:
        return list(csv.DictReader(f))


# ---- GEMMs: a share of the bf16 peak against the GEMM's FLOPs 2·M·N·K --------------------------


DTYPES = {"bf16": ("bf16", "fp16"), "fp8": ("fp8",)}  # fp16 runs at the bf16 rate


THIN = 256  # rows or columns below which a GEMM is decode-shaped, not a training one


def gemm_rows(chip: str, dtype: str = "bf16") -> list[dict]:
    """A chip's GEMMs in ``dtype`` (bf16 with fp16, the same tensor-core rate; or fp8), of the
    shapes training runs: at least ``THIN`` rows and columns (a microbatch has thousands of
    tokens; a GEMM of 64 rows wastes half of each tile, which the curve by FLOPs cannot see)."""
    return [
        r
        for r in rows("gemm")
        if r["chip"] == chip
        and r["dtype"] in DTYPES[dtype]
        and min(float(r["M"]), float(r["N"])) >= THIN
    ]


def gemm_flops(row: dict) -> float:
    """2·M·N·K, times the groups of a grouped GEMM (its row gives one group's shape)."""
    groups = re.search(r"(\d+) groups?", row["how"]) if "grouped" in row["how"] else None
    count = int(groups.group(1)) if groups else 1
    return 2.0 * float(row["M"]) * float(row["N"]) * float(row["K"]) * count


def gemm_predicted(row: dict, physics: ChipPhysics) -> float:
    """The TFLOP/s the physics gives this row's GEMM, at its dtype's peak and curve."""
    chip = CHIPS[row["chip"]]
    if row["dtype"] == "fp8":
        peak, e_max, g_half = chip.flops_fp8, physics.e_max_fp8, physics.g_half_fp8
    else:
        peak, e_max, g_half = chip.flops, physics.e_max, physics.g_half
    share = matmul_efficiency(gemm_flops=gemm_flops(row), e_max=e_max, g_half=g_half)
    return float(share) * peak / 1e12


# ---- fused attention: the forward pass at a share of the peak, the backward at its own ----------


# The fused kernel the stacks run on each chip: FlashAttention-2 on Ampere and Hopper (PyTorch's
# SDPA flash backend), FlashAttention-4 on Blackwell, JAX's Pallas kernels on TPU v5p.
KERNELS = {
    "A100": ("FlashAttention-2",),
    "H100": ("FlashAttention-2",),
    "B200": ("FlashAttention-4",),
    "TPU v5p": ("Pallas flash attention", "Pallas splash attention"),
}
# Rows of a build or card the sources call unrepresentative: an FA2 build not made for Blackwell,
# a power-limited development H100, Pallas flash attention on v5e at tiles its maintainers call
# far too small (jax#24633), axlearn's v4 runs, which also read a dense bias of s x s, and its v5p
# runs, timed on the host over five calls of a few milliseconds: their rate rises with the heads
# at one shape, as launches are amortised, which a kernel's own rate does not.
UNREPRESENTATIVE = ("issues/1589", "issues/141", "issues/24633", "6789f847", "a5f0b462")


def attention_rows(chip: str) -> list[dict]:
    """A chip's bf16/fp16 rows of the kernels ``KERNELS`` names."""
    return [
        r
        for r in rows("attention")
        if r["chip"] == chip
        and r["kernel"] in KERNELS.get(chip, ())
        and r["dtype"] in ("bf16", "fp16")
        and r["pass"] in ("fwd", "bwd", "fwd+bwd")
        and not any(word in r["source"] for word in UNREPRESENTATIVE)
    ]


def attention_predicted(row: dict, physics: ChipPhysics) -> float:
    """TFLOP/s for the row's pass, as FlashAttention counts them (causal halves the FLOPs)."""
    causal = row["causal"].strip().lower() == "true"
    forward = attention_efficiency(
        keys=float(row["seq_len"]) * (0.5 if causal else 1.0),
        head_dim=float(row["head_dim"]),
        attention_max=physics.attention_max,
        attention_half=physics.attention_half,
        attention_head_half=physics.attention_head_half,
    )
    backward = forward * physics.attention_backward
    share = {"fwd": forward, "bwd": backward, "fwd+bwd": 3.5 / (1 / forward + 2.5 / backward)}[
        row["pass"]
    ]
    return float(share) * CHIPS[row["chip"]].flops / 1e12


# ---- HBM ----------------------------------------------------------------------------------------


def speed_rows(chip: str) -> list[dict]:
    """A chip's GPUs, one row each: its time on one kernel or training step over the median's."""
    return [r for r in rows("speeds") if r["chip"] == chip]


def speed_spread(data: list[dict]) -> float:
    """The spread of the chips' speed (the inverse of their relative times): the interquartile
    range over 1.349, a normal's standard deviation that a few broken nodes do not move."""
    q1, q3 = np.percentile([1 / float(r["relative_time"]) for r in data], [25, 75])
    return float((q3 - q1) / 1.349)


def hbm_rows(chip: str) -> list[dict]:
    return [r for r in rows("hbm") if r["chip"] == chip]


def hbm_share(row: dict) -> float:
    return float(row["achieved_GBps"]) / float(row["spec_GBps"])


# ---- collectives: rounds·((n − 1)/n·bytes/(W·e) + log2(n)·λ) -------------------------------------


RINGS = ("all-reduce", "all-gather", "reduce-scatter")
LINK = {"nvlink": "link_nvlink", "nic": "link_nic", "ici": "link_ici", "dcn": "link_dcn"}
TRAINING_SIZES = 2**20  # bytes: a step's collectives move a layer's weights, gradients or
# activations, megabytes to gigabytes; smaller messages measure launch and protocol overheads
# Systems whose network is not the preset's: AWS p4dn's four 100 Gb/s NICs a node (DGX A100 has
# eight of 200), and NVL72 racks split into partitions with NVLink SHARP off.
OTHER_NETWORKS = ("p4dn", "partitions")


# The chips whose NVSwitch reduces in the network (NVLink SHARP, "NVLS"): the third generation of
# NVSwitch (Hopper) on. NCCL runs an all-reduce inside such a node as a ring or through the
# switch, whichever it finds faster (the rows' notes: "NCCL default algo (NVLS where selected)").
NVLS_CHIPS = ("H100", "H100 96GB", "H200", "H800", "B200", "GB200", "GB300")


@dataclass(frozen=True)
class Collective:
    row: dict
    tier: str
    kind: str
    ranks: int
    per_node: int  # ranks of the group in one node
    nbytes: float
    seconds: float
    # how NCCL ran an all-reduce inside an NVLS node: "ring" (NVLS off, or said to be a ring),
    # "nvls" (said to be NVLS), "default" (NCCL's choice: the faster); "ring" everywhere else
    algorithm: str = "ring"


def algorithm(chip: str, r: dict) -> str:
    """How a row's all-reduce ran, from its own words (``Collective.algorithm``)."""
    if chip not in NVLS_CHIPS or r["tier"] != "nvlink" or r["op"] != "all-reduce":
        return "ring"
    said = f"{r['system']} {r['how']}"
    if any(word in said for word in ("NVLS_ENABLE=0", "SHARP disabled", "(ring)", "Ring")):
        return "ring"
    if "with NVLS" in said:
        return "nvls"
    return "default"


def collective_rows(chip: str) -> list[Collective]:
    """A chip's collectives with a size and a time (given, or bytes over the algorithm bandwidth):
    all-reduce, all-gather and reduce-scatter, which the model's ring prices, and send/recv. Rows
    on a network other than the preset's (``OTHER_NETWORKS``) and messages smaller than training
    sends (``TRAINING_SIZES``) are left out."""
    out = []
    for r in rows("collectives"):
        if r["chip"] != chip or r["op"] not in (*RINGS, "send/recv") or not r["message_bytes"]:
            continue
        if any(word in r["system"] for word in OTHER_NETWORKS):
            continue
        if float(r["message_bytes"]) < TRAINING_SIZES:
            continue
        nbytes, ranks = float(r["message_bytes"]), int(r["ranks"] or 2)
        nodes = int(r["nodes"]) if r["nodes"] else 1
        if r["time_us"]:
            seconds = float(r["time_us"]) * 1e-6
        elif r["algbw_GBps"]:
            seconds = nbytes / (float(r["algbw_GBps"]) * 1e9)
        elif r["busbw_GBps"]:
            factor = 2 * (ranks - 1) / ranks if r["op"] == "all-reduce" else (ranks - 1) / ranks
            seconds = nbytes * factor / (float(r["busbw_GBps"]) * 1e9)
        else:
            continue
        per_node = min(ranks, CHIPS[chip].node_size or ranks, max(1, ranks // nodes))
        if r["tier"] == "nic" and CHIPS[chip].node_size >= ranks // max(nodes, 1) * 4:
            per_node = min(ranks, CHIPS[chip].node_size)  # trays of one NVLink domain
        out.append(Collective(r, r["tier"], r["op"], ranks, per_node, nbytes, seconds,
                              algorithm(chip, r)))  # fmt: skip
    return out


def tier_bandwidth(chip_name: str, c: Collective) -> float:
    """The bandwidth per chip the tier offers the group: a TPU's one axis (bidirectional), or its
    share of the data-center network across slices; a GPU's NVLink inside a node; across nodes the
    NICs of the group's GPUs in a node, at most NVLink."""
    chip = CHIPS[chip_name]
    if c.tier == "dcn":  # a chip's share of the data-center network, one way
        return chip.dcn_bw
    if not chip.is_gpu:  # one link one way (W_ici is both ways), as the sources compare
        return chip.ici_bw / 2
    if c.tier == "nvlink":
        return chip.ici_bw
    return min(chip.ici_bw, chip.scaleout_bw * c.per_node)


def collective_predicted(c: Collective, chip_name: str, physics: ChipPhysics) -> float:
    """Seconds the physics gives this collective: a ring's, or one message over one link, at its
    tier's share of the bandwidth and its latency."""
    efficiency = getattr(physics, LINK[c.tier])
    latency = physics.latency_nic if c.tier == "nic" else physics.latency
    if c.kind == "send/recv":
        return c.nbytes / (tier_bandwidth(chip_name, c) * efficiency) + latency
    ring = dict(bandwidth=tier_bandwidth(chip_name, c), efficiency=efficiency, latency=latency)
    if c.algorithm == "nvls":  # through the switch alone: out once, back once, the ring's latency
        return c.nbytes / (ring["bandwidth"] * physics.link_nvls) + 2 * (c.ranks - 1) * latency
    nvls = physics.link_nvls if c.algorithm == "default" else 0.0
    return float(collective_time(nbytes=c.nbytes, group=c.ranks, kind=c.kind, nvls=nvls, **ring))


def mean_abs_error(pairs) -> float:
    """Mean |predicted / measured − 1| over (predicted, measured) pairs."""
    return float(np.mean([abs(p / m - 1) for p, m in pairs])) if pairs else float("nan")
