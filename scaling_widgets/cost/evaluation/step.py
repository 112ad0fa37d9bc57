"""The step of a placed layout (MODEL.md §A.5, §A.10, §B.1, §C, §H): the FLOPs a token, the
chapter's step at an MFU given or a measured one (``chapter_step``), the step predicted term by
term (``predicted``, from ``predict.py``), the time to train and the whole run, and the profile
the options name (``profile_of``).
"""

from __future__ import annotations

import dataclasses

import numpy as np
from numpy.typing import ArrayLike

from ..ground.choices import per_choice
from ..ground.refusals import refuse
from ..hardware.chip import Chip
from ..step.chapter import time_to_train
from ..step.profiles import Profile, profile_for, with_stack
from ..step.run import whole_run
from ..transformer.counts import flops_per_token, padding_flops, recompute_flops_per_token
from ..transformer.layer import LayerTimes
from ..values import Layout, Options, Workload
from .predict import predict
from .result import Estimate


def token_flops(
    workload: Workload, layout: Layout, options: Options, Psi: ArrayLike
) -> dict[str, float | np.ndarray]:
    """Model FLOPs per token, and hardware FLOPs with the recompute (MODEL.md §B.1) and a MoE's
    padding to its capacity factor (MODEL.md §D.2): work done that trains nothing.

    Parameters
    ----------
    workload, layout, options : the checked values (the model and its sequences, the recompute
        policy, whether attention FLOPs are counted)
    Psi : Ψ, the parameters a token uses (``ParamCount.active``)

    Returns
    -------
    flops : dict of str to float or np.ndarray
        "model": the FLOPs per trained token; "hardware": those plus the recompute and the
        padding [FLOP/token].
    """
    model = workload.model
    shape = dict(
        layers=model.layers,
        seq_len=workload.seq_len or 1,
        heads=model.heads,
        head_dim=model.head_dim,
    )
    f = flops_per_token(params=Psi, attention=options.attention_flops, **shape)

    def recompute(policy):
        return recompute_flops_per_token(
            params=Psi, remat=policy, attention=options.attention_flops, **shape
        )

    return {"model": f, "hardware": f + per_choice(layout.remat, recompute) + padding_flops(model)}


def chapter_step(
    workload: Workload,
    options: Options,
    layer: LayerTimes,
    flops: dict[str, float | np.ndarray],
    Psi: float | np.ndarray,
    chips: int | np.ndarray,
    C: float,
    bubble: float | np.ndarray,
) -> dict[str, float | np.ndarray]:
    """Compute, exposed communication, the step, and the utilisation it achieves (MODEL.md §A.10,
    §B.1).

    The chips sustain ``mfu`` of peak on every FLOP they do, recompute included: compute takes
    B·f_hw/(N·C·η). The exposed communication is the layer's communication per compute over the
    whole model's compute at peak. A step is the longer of the two, stretched by the bubble; the
    MFU and HFU reported are what that step achieves. A measured step replaces it instead.

    Parameters
    ----------
    workload, options : the checked values (the batch; ``mfu`` or ``measured_step_time``)
    layer : the layer's times on this placement (``layer_times``)
    flops : "model" and "hardware" FLOPs per token (``token_flops``) [FLOP/token]
    Psi : Ψ, the parameters a token uses [parameters]
    chips, C : N, all chips of all pods, and each chip's peak [FLOP/s]
    bubble : the pipeline's idle time relative to useful work

    Returns
    -------
    times : dict of str to float or np.ndarray
        "compute_time", "comm_time" and "step_time" [s], and the "mfu" and "hfu" the step
        achieves.
    """
    B = workload.batch
    ideal = B * flops["hardware"] / (chips * C)  # the step's FLOPs at peak
    # The layer is the chapter's two-matrix MLP; the rest of the model moves and computes in the
    # same proportion, so its communication per compute scales to the whole model.
    comm = layer.t_comms / layer.t_math * 6 * B * Psi / (chips * C)
    if options.measured_step_time is None:
        # None: predicted afterwards
        compute = ideal / (1.0 if options.mfu is None else options.mfu)
        step = np.maximum(compute, comm) * (1 + bubble)
    else:
        step = np.broadcast_arrays(
            np.asarray(options.measured_step_time, dtype=float), ideal * bubble
        )[0]
        short = ideal > step
        if np.any(short):  # the first layout whose measured step is shorter than its FLOPs at peak
            need, got = (np.broadcast_to(a, short.shape)[short][0] for a in (ideal, step))
            raise refuse(
                "measured_step_time",
                f"at least {need:.4g} s, what this layout's FLOPs take at the chips'"
                " peak (a shorter step would mean a utilisation above 100%)",
                f"{got:g}",
            )
        compute = step
    return {
        "compute_time": compute,
        "comm_time": comm,
        "step_time": step,
        "mfu": B * flops["model"] / (chips * C * step),
        "hfu": ideal / step,
    }


def predicted(e: Estimate, profile) -> Estimate:
    """The estimate with its step predicted term by term (MODEL.md §C.2, §C.5): MFU and HFU
    follow."""
    remat = np.asarray(e.remat)
    # The chapter's checkpoints keep the MLP's matmul outputs alone: a framework that kept only
    # those would run the attention block again backward. Its memory stays the chapter's count;
    # the predicted step, and the hardware FLOPs, pay for that recompute (MODEL.md §C.2).
    checkpoints = (remat == "checkpoints") * 1.0
    terms = predict(
        e=e,
        profile=profile,
        remat_forward=(remat == "full") * 1.0,
        attention_forward=(remat == "selective") * 1.0,
        rest_forward=checkpoints,
    )
    hidden = {"ep": terms.pop("ep_hidden"), "cp": terms.pop("cp_hidden")}
    step = sum(terms.values())
    peak = e.chips * e.chip.flops
    hardware = e.hardware_flops_per_token + checkpoints * attention_block_flops(e)
    return dataclasses.replace(
        e,
        step_time=step,
        compute_time=terms["matmul"] + terms["memory_bound"],
        mfu=e.batch * e.flops_per_token / (peak * step),
        hfu=e.batch * hardware / (peak * step),
        hardware_flops_per_token=hardware,
        training_time=training_time(e.workload, step),
        step_breakdown=terms,
        hidden=hidden,
    )


def attention_block_flops(e: Estimate) -> float:
    """The attention block's forward FLOPs per token, all layers: its projections, 2·Ψ_attention,
    and the scores and their weighted sum, 4·L·T·N_h·H (MODEL.md §B.1)."""
    model, T = e.model, e.seq_len or 1
    return 2 * float(e.params.attention) + 4 * model.layers * T * model.heads * model.head_dim


def training_time(workload, step):
    return (
        None
        if workload.tokens is None
        else time_to_train(tokens=workload.tokens, batch=workload.batch, step_time=step)
    )


def with_run(e):
    """The estimate ``e`` with its whole run where the workload gives its tokens: every chip
    writes the weights and optimizer state it holds (its peak's)."""
    if e.training_time is None:
        return e
    o = e.options
    run = whole_run(
        chips=e.chips,
        ideal=e.training_time,
        checkpoint_bytes=e.peak.weights + e.peak.optimizer,
        write_bw=o.checkpoint_bw,
        failure_rate=o.failure_rate,
        restart=o.restart_time,
        interval=o.checkpoint_interval,
        power=e.chip.power if o.chip_power is None else o.chip_power,
        pue=o.pue,
        price=o.price_per_chip_hour,
    )
    return dataclasses.replace(e, run=run)


def profile_of(chip: Chip, options: Options) -> Profile:
    """The profile an evaluation reads: the chip's with ``options.stack``'s behaviour and memory,
    or ``options.profile``, whose behaviour is the user's (measured, calibrated) and which takes
    only what ``options.stack`` keeps in memory; ``options.flash_attention`` and
    ``options.torch_compile`` override both
    (MODEL.md §C.3, §E.2, §F.2).

    Returns
    -------
    profile : Profile
        The physics, behaviour and memory the evaluation uses.
    """
    if options.profile is None:
        profile = profile_for(chip, options.stack)
    else:  # made for this chip: ``feasible.together`` checked it
        profile = with_stack(options.profile, options.stack)
    switches = {
        name: bool(value)
        for name in ("flash_attention", "torch_compile")
        if (value := getattr(options, name)) is not None
    }
    return dataclasses.replace(profile, **switches) if switches else profile
