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
    and context-parallel traffic per token (MODEL.md §A.3, §D.2, §D.3)."""
    chip, model, X, Y = cluster.chip, workload.model, placed.x, placed.y
    whole, sharded = STRATEGIES[layout.strategy].traffic  # weights whole on X, or sharded (ZeRO-3)
    traffic = scalar(np.where(np.asarray(layout.zero) == 3, sharded, whole))
    # a MoE layer holds (E/EP + S)·F_e, EP of X (or of TP x X) split the experts (MODEL.md §D.2)
    experts = layer_keywords(
        chip=chip, model=model, ep=layout.ep, etp=layout.etp, x=X, y=Y, mx=placed.mx, my=placed.my
    )

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
        )

    return dict(
        strategy=traffic,
        d_model=model.d_model,
        d_ff=model.active_width,  # a MoE layer computes its active width (MODEL.md §D.1)
        x=X,
        y=Y,
        pods=cluster.pods,
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


def stage_traffic(cluster, workload, layout, placed: Placement):
    """Each chip of a stage sends its [B/(X·Y·P), D] share of the activations on (MODEL.md §A.6,
    §B.6)."""
    return stage_traffic_time(
        batch=workload.batch / (placed.x * placed.y * cluster.pods),
        d_model=workload.model.d_model,
        stages=placed.z,
        microbatches=placed.microbatches,
        bandwidth=cluster.chip.ici_bw,
        virtual_stages=layout.virtual_stages,
    )


def layout_thresholds(cluster, workload, layout, placed) -> dict:
    """Where the layout's strategy turns compute-bound, TP's limit, DCN's threshold and the
    chapter's X_opt, on the axes the groups span (MODEL.md §A.3, §A.10, §D.2)."""
    chip, model, Z = cluster.chip, workload.model, placed.z
    held = held_width(model, ep_of_data(layout.ep, placed.y, layout.etp))
    F = model.active_width
    mx, my = np.where(placed.mx > 0, placed.mx, 1), np.where(placed.my > 0, placed.my, 1)
    C, W = chip.flops, chip.ici_bw
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
        critical_tokens_per_pod=critical_tokens_per_pod(
            flops=C, dcn_bw=chip.dcn_bw, weights_per_compute=held / F
        ),
        x_opt=x_opt(
            batch=workload.batch / cluster.pods,
            d_ff=held,
            chips=math.prod(cluster.slice_shape) // Z,
            mx=mx,
            my=my,
        ),
    )
