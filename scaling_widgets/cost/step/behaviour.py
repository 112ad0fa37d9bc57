"""What a software stack does with any chip (MODEL.md §F.2): how much of its communication hides
under compute, how much memory-bound work its kernels leave, and its fixed costs.

One set per stack, shared by every chip it runs on, fitted by ``benchmarks/fit_stacks.py`` on the
measured runs of all those chips with the chips' own physics (``physics.py``) held fixed. The
defaults are the priors the fit starts from and is drawn towards, and what a stack without runs
keeps.
"""

from __future__ import annotations

from dataclasses import dataclass, fields


@dataclass(frozen=True)
class Behaviour:
    """A stack's behaviour (MODEL.md §F.2)."""

    kernel_share: float = 0.9  # share of the microbenchmarks' GEMM and attention rates reached
    kappa: float = 40.0  # memory-bound bytes a token, per unit of d_model, a layer and pass, eager
    kappa_scores: float = 12.0  # without flash attention: bytes per score and pass
    o_tp: float = 0.0  # share of a layer's matmuls the TP collectives hide under
    o_dp: float = 0.9  # share of the compute the data-parallel traffic hides under
    o_dcn: float = 0.0  # the same for the reduction across pods
    layer_overhead: float = 0.0  # per layer and pass: launches the host cannot queue ahead [s]
    step_overhead: float = 0.0  # per step: the host, the data loader, the optimizer's launch [s]


PRIOR = Behaviour()
NAMES = tuple(f.name for f in fields(Behaviour))
# What each may physically be: an overlap is a share; a kernel reaches at most its microbenchmark;
# the fused kernels of a layer move at least a few bytes a token and at most a few hundred; a
# layer's pass launches some tens of kernels of a few microseconds each; a step's own host work
# (the optimizer's launches, the loader, logging) takes a tenth of a second or two at most.
BOUNDS = {
    "kernel_share": (0.5, 1.0),
    "kappa": (4.0, 200.0),
    "kappa_scores": (2.0, 64.0),
    "o_tp": (0.0, 1.0),
    "o_dp": (0.0, 1.0),
    "o_dcn": (0.0, 1.0),
    "layer_overhead": (0.0, 2e-4),
    "step_overhead": (0.0, 0.2),
}
