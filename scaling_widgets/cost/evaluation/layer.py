"""The layer of a placed layout (MODEL.md §A.3, §A.6, §A.10, §D.2, §D.3): the keywords of the
chapter's layer for its groups, spans and chip (``on_mesh``), where its strategy turns
compute-bound (``layout_thresholds``) and the activations it passes between stages
(``stage_traffic``). Each reads the four values and a ``Placement`` into the formulas' keywords.
"""

from __future__ import annotations

import math

import numpy as np

from ..ground.checks import scalar
from ..ground.choices import per_choice
from ..layout.placement import Placement
from ..step.pipeline import stage_traffic_time
from ..strategies import STRATEGIES
from ..transformer.context import cp_seconds_per_token
from ..transformer.experts import ep_of_data, held_width, layer_keywords
from ..transformer.thresholds import (
    critical_tokens_per_chip,
    critical_tokens_per_pod,
    tp_limit,
    x_opt,
)


def on_mesh(cluster, workload, layout, options, placed: Placement) -> dict:
    """The layer's keywords for this placement (``layer_times``, ``crossover_batch``): the traffic
    of the strategy at its ZeRO stage, the widths, the groups and spans, the chip, and the expert
    and context-parallel traffic per token (MODEL.md §A.3, §D.2, §D.3).

    Parameters
    ----------
    cluster : Cluster
        The chips: the chip's C [FLOP/s], W_ici and W_dcn [bytes/s], and the pods P.
    workload : Workload
        What is trained: the model's D and F, and the sequence length T [tokens].
    layout : Layout
        The layout, its ZeRO stage resolved and its CP as placed (not None).
    options : Options
        How the numbers are read: its ``exact`` corrections (MODEL.md §B.7).
    placed : Placement
        X, Y and the spans M_X, M_Y and rings of the groups on the slice.

    Returns
    -------
    keywords : dict
        The keywords of ``layer_times`` and ``crossover_batch`` but the batch: the strategy
        whose traffic the X group moves (below ZeRO-3, DP's), the widths, X, Y, P, M_X, M_Y,
        the wraparound, C, W_ici, W_dcn, a MoE layer's "d_ff_weights", "ep_seconds" and
        "tp_share", and "cp_seconds" [s/token].

    References
    ----------
    .. [1] docs/MODEL.md §A.3 (the strategies per layer), §B.3 (what moves over X follows the
       ZeRO stage), §D.2 (expert parallelism) and §D.3 (context parallelism).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``: Data
       Parallelism; Fully-Sharded Data Parallelism (FSDP); Tensor Parallelism; Mixed FSDP and
       Tensor Parallelism.
    .. [3] S. Rajbhandari et al., "ZeRO: Memory Optimizations Toward Training Trillion Parameter
       Models", SC 2020.
    """
    chip, model, X, Y = cluster.chip, workload.model, placed.x, placed.y
    whole, sharded = STRATEGIES[layout.strategy].traffic  # weights whole on X, or sharded (ZeRO-3)
    traffic = scalar(np.where(np.asarray(layout.zero) == 3, sharded, whole))
    # a MoE layer holds (E/EP + S)·F_e, EP of X (or of TP x X) split the experts (MODEL.md §D.2)
    experts = layer_keywords(
        chip=chip, model=model, ep=layout.ep, etp=layout.etp, x=X, y=Y, mx=placed.mx,
        my=placed.my, ep_pods=layout.ep_pods,
    )  # fmt: skip

    def kv(kind):
        return cp_seconds_per_token(
            chip=chip,
            model=model,
            cp=layout.cp,
            kind=kind,
            seq_len=workload.seq_len or 1,
            x=X,
            y=Y,
            mx=placed.mx,
            pods=layout.cp_pods,
        )

    return dict(
        strategy=traffic,
        d_model=model.d_model,
        d_ff=model.active_width,  # a MoE layer computes its active width (MODEL.md §D.1)
        x=X,
        y=Y,
        pods=cluster.pods,
        fsdp_pods=layout.fsdp_pods,
        tp_pods=layout.tp_pods,
        mx=placed.mx,
        my=placed.my,
        exact=options.exact,
        wrap_x=placed.span.wrap_x,
        wrap_y=placed.span.wrap_y,
        flops=chip.flops,
        ici_bw=chip.ici_bw,
        dcn_bw=chip.dcn_bw,
        **experts,
        cp_seconds=0.0 if np.all(np.asarray(layout.cp) == 1) else per_choice(layout.cp_kind, kv),
    )


def tp_span(chip, tp_pods, y, my) -> np.ndarray:
    """M_Y as the TP group's bandwidth, in axes of W_ici: its own span inside a pod, and across
    T > 1 pods the slower of that and its Y/T chips' links of W_dcn (MODEL.md §B.11).

    Parameters
    ----------
    chip : Chip
        The chip: its W_ici and W_dcn [bytes/s].
    tp_pods : int or array_like
        T, the pods the TP group spans.
    y : int or array_like
        Y, the TP group in all its pods [chips].
    my : float or array_like
        M_Y, the axes it spans in a pod.

    Returns
    -------
    span : np.ndarray
        M_Y (at least 1), or across pods the share of W_ici the group reaches.
    """
    T, inside = np.asarray(tp_pods, dtype=float), np.where(np.asarray(my) > 0, my, 1)
    in_pod = np.asarray(y) / T
    ici = np.where(in_pod > 1, inside * chip.ici_bw, np.inf)
    return np.where(T > 1, np.minimum(ici, in_pod * chip.dcn_bw) / chip.ici_bw, inside)


def stage_traffic(cluster, workload, layout, placed: Placement):
    """Each chip of a stage sends its [B/(X·Y·P), D] share of the activations on (MODEL.md §A.6,
    §B.6).

    Parameters
    ----------
    cluster : Cluster
        The chips: the pods P and the chip's W_ici [bytes/s], the link between stages.
    workload : Workload
        What is trained: the batch B [tokens] and the model's D.
    layout : Layout
        The layout: its virtual stages v.
    placed : Placement
        X, Y, Z and the microbatches m of the placement.

    Returns
    -------
    time : float or np.ndarray
        The seconds a step spends sending activations between stages, 0 with one stage [s].

    References
    ----------
    .. [1] docs/MODEL.md §A.6 (the pipeline) and §B.6 (v times the traffic, interleaved).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``: Pipelining.
    """
    return stage_traffic_time(
        batch=workload.batch / (placed.x * placed.y * cluster.pods),
        d_model=workload.model.d_model,
        stages=placed.z,
        microbatches=placed.microbatches,
        bandwidth=stage_link(cluster.chip, layout.pp_pods),
        virtual_stages=layout.virtual_stages,
    )


def stage_link(chip, pp_pods) -> np.ndarray:
    """The bandwidth a pipeline's activations cross between stages, its slowest link.

    Parameters
    ----------
    chip : Chip
        The chip: W_ici and W_dcn [bytes/s].
    pp_pods : int or array_like
        S, the pods each pipeline spans.

    Returns
    -------
    bandwidth : np.ndarray
        W_ici (NVLink on a GPU, as the chapter counts it), or W_dcn where the pipeline spans
        pods (MODEL.md §A.6, §B.10) [bytes/s].
    """
    return np.where(np.asarray(pp_pods) > 1, chip.dcn_bw, chip.ici_bw)


def layout_thresholds(cluster, workload, layout, placed) -> dict:
    """Where the layout's strategy turns compute-bound, TP's limit, DCN's threshold and the
    chapter's X_opt, on the axes the groups span (MODEL.md §A.3, §A.10, §D.2).

    Parameters
    ----------
    cluster : Cluster
        The chips: the chip's C [FLOP/s], W_ici and W_dcn [bytes/s], the slice and the pods P.
    workload : Workload
        What is trained: the model's F (and a MoE layer's held width) and the batch B [tokens].
    layout : Layout
        The layout: its strategy, EP and expert TP.
    placed : Placement
        Y, Z and the spans M_X, M_Y of the placement.

    Returns
    -------
    thresholds : dict of str to float or np.ndarray
        "critical_tokens_per_chip" (NaN for pure TP) and "critical_tokens_per_pod" [tokens],
        "tp_limit" [chips] and "x_opt", the chapter's real-valued X [chips].

    References
    ----------
    .. [1] docs/MODEL.md §A.3 (compute-bound, pass by pass; the split), §A.10 (what is
       reported) and §D.1, §D.2 (a MoE layer's two widths, expert parallelism).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``: Data
       Parallelism; Fully-Sharded Data Parallelism (FSDP); Tensor Parallelism; Mixed FSDP and
       Tensor Parallelism; Scaling Between Pods.
    """
    chip, model, Z = cluster.chip, workload.model, placed.z
    held = held_width(model, ep_of_data(layout.ep, placed.y, layout.etp) * layout.ep_pods)
    F = model.active_width
    mx = np.where(placed.mx > 0, placed.mx, 1)
    my = tp_span(chip, layout.tp_pods, placed.y, placed.my)
    C, W = chip.flops, chip.ici_bw
    # FSDP across F of P pods: the backward's DCN bytes are the gathers' and the replicas'
    # AllReduce of a 1/F share, (1 + 1/F) times the data replicas' alone (MODEL.md §B.9)
    shared = np.asarray(layout.fsdp_pods, dtype=float)
    over_dcn = np.where((shared > 1) & (cluster.pods > shared), 1 + 1 / shared, 1.0)
    return dict(
        critical_tokens_per_chip=critical_tokens_per_chip(
            strategy=layout.strategy,
            flops=C,
            ici_bw=W,
            d_ff=F,
            stages=Z,
            d_ff_weights=held,
            mx=mx,
            my=my,
        ),
        tp_limit=tp_limit(flops=C, ici_bw=W, d_ff=F, my=my),
        critical_tokens_per_pod=over_dcn
        * critical_tokens_per_pod(flops=C, dcn_bw=chip.dcn_bw, weights_per_compute=held / F),
        x_opt=x_opt(
            batch=workload.batch / cluster.pods,
            d_ff=held,
            # a stage's, in the pods a pipeline or a TP group spans
            chips=math.prod(cluster.slice_shape) * layout.pp_pods * layout.tp_pods // Z,
            mx=mx,
            my=my,
        ),
    )
