"""The step of a placed layout (MODEL.md §A.5, §A.10, §B.1, §C, §H): the FLOPs a token, the
chapter's step at an MFU given or a measured one (``chapter_step``), the step predicted term by
term (``predicted``, from ``predict.py``), the time to train and the whole run, and the profile
the options name (``profile_of``).
"""

from __future__ import annotations

import dataclasses
from dataclasses import astuple

import numpy as np
from numpy.typing import ArrayLike

from ..ground.choices import per_choice
from ..ground.refusals import refuse
from ..hardware.chip import Chip
from ..stacks import REGISTRY, feature_names
from ..step.chapter import time_to_train
from ..step.interval import step_spread
from ..step.pipeline import busiest_stage_layers, layout_split
from ..step.profiles import Profile, default_stack, hidden_by, profile_for, with_stack
from ..step.run import whole_run
from ..transformer.counts import (
    REMAT_POLICIES,
    ParamCount,
    flops_per_token,
    padding_flops,
    recompute_flops_per_token,
)
from ..transformer.layer import LayerTimes
from ..transformer.recompute import Rerun, rerun_of
from ..values import Layout, Options, Workload
from .predict import predict
from .result import Estimate


def token_flops(
    workload: Workload,
    layout: Layout,
    options: Options,
    params: ParamCount,
    chunk_layers: ArrayLike = 1.0,
) -> dict[str, float | np.ndarray]:
    """Model FLOPs per token, and hardware FLOPs with the recompute (MODEL.md §B.1) and a MoE's
    padding to its capacity factor (MODEL.md §D.1): work done that trains nothing.

    Parameters
    ----------
    workload : Workload
        What is trained: the model (L, N_h, H, its experts) and the sequence length T [tokens]
        (None counts as 1).
    layout : Layout
        The layout: its recompute policy ``remat``.
    options : Options
        How the numbers are read: whether attention FLOPs are counted.
    params : ParamCount
        The model's parameters by part: Ψ, those a token uses (``ParamCount.active``), and the
        attention's and the MLP's a token meets [parameters].
    chunk_layers : float or array_like, default 1.0
        The layers of a pipeline chunk, L/(Z·v), for a policy that recomputes the first N of
        each [layers].

    Returns
    -------
    flops : dict of str to float or np.ndarray
        "model": the FLOPs per trained token; "hardware": those plus the recompute and the
        padding [FLOP/token].

    References
    ----------
    .. [1] docs/MODEL.md §B.1 (model and hardware FLOPs) and §D.1 (a MoE's padding to its
       capacity factor).
    .. [2] J. Kaplan et al., "Scaling Laws for Neural Language Models", arXiv:2001.08361, 2020.
    .. [3] V. Korthikanti et al., "Reducing Activation Recomputation in Large Transformer
       Models", MLSys 2023.
    """
    model, Psi = workload.model, params.active
    shape = dict(
        layers=model.layers,
        seq_len=workload.seq_len or 1,
        heads=model.heads,
        head_dim=model.head_dim,
    )
    f = flops_per_token(params=Psi, attention=options.attention_flops, **shape)

    def recompute(policy):
        if policy in REMAT_POLICIES:
            return recompute_flops_per_token(
                params=Psi, remat=policy, attention=options.attention_flops, **shape
            )
        # a framework's own policy: the work it runs again, a share of each part's forward
        r = rerun_of(policy, chunk_layers=chunk_layers, moe=model.moe is not None)
        attention = 4 * model.layers * shape["seq_len"] * model.heads * model.head_dim
        whole = 2 * Psi + attention * options.attention_flops
        parts = r.core * attention + 2 * (r.dense * params.attention + r.mlp * params.mlp_used)
        return r.whole * whole + (1 - r.whole) * parts

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
    workload : Workload
        What is trained: the batch B [tokens].
    options : Options
        How the numbers are read: ``mfu`` η, or ``measured_step_time`` [s]; both None leave the
        step to be predicted afterwards (at η = 1 here).
    layer : LayerTimes
        The layer's times on this placement (``layer_times``) [s].
    flops : dict of str to float or array_like
        "model" and "hardware" FLOPs per token (``token_flops``) [FLOP/token].
    Psi : float or array_like
        Ψ, the parameters a token uses [parameters].
    chips : int or array_like
        N, all chips of all pods [chips].
    C : float
        C, each chip's peak bf16 matmul rate [FLOP/s].
    bubble : float or array_like
        The pipeline's idle time relative to useful work, (Z − 1)/(v·m) for 1F1B and
        interleaved 1F1B (``schedules.bubble``).

    Returns
    -------
    times : dict of str to float or np.ndarray
        "compute_time", "comm_time" and "step_time" [s], and the "mfu" and "hfu" the step
        achieves.

    Raises
    ------
    InputError
        For a measured step shorter than the layout's hardware FLOPs take at the chips' peak.

    References
    ----------
    .. [1] docs/MODEL.md §A.5 (step time with an MFU given), §A.10 (what is reported) and §B.1
       (recompute costs time; MFU and HFU).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``:
       Fully-Sharded Data Parallelism (FSDP).
    .. [3] J. Kaplan et al., "Scaling Laws for Neural Language Models", arXiv:2001.08361, 2020.
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
    follow.

    Parameters
    ----------
    e : Estimate
        The evaluated layout, its step still the chapter's.
    profile : Profile
        The chip's physics and the stack's behaviour (``profile_of``).

    Returns
    -------
    estimate : Estimate
        ``e`` with the predicted step [s], its terms (``step_breakdown``) and what pairs hid
        (``hidden``) [s], the compute time [s], the MFU and HFU, the hardware FLOPs per token
        [FLOP/token], the time to train [s], and the spread of out-of-sample runs of its stack
        and chip that gives the step its interval (``spread``, MODEL.md §F.3).

    References
    ----------
    .. [1] docs/MODEL.md §C.1, §C.2 (the predicted step), §C.5 (what it reports) and §B.1 (the
       attention block the chapter's checkpoints recompute; MFU and HFU).
    """
    remat = np.asarray(e.remat)
    # The chapter's checkpoints keep the MLP's matmul outputs alone: a framework that kept only
    # those would run the attention block again backward. Its memory stays the chapter's count;
    # the predicted step, and the hardware FLOPs, pay for that recompute (MODEL.md §C.2).
    checkpoints = (remat == "checkpoints") * 1.0
    chunk = busiest_stage_layers(
        layers=e.model.layers,
        stages=e.z,
        **layout_split(e.layout),
    ) / np.asarray(e.layout.virtual_stages)

    def rerun(policy):
        return astuple(rerun_of(policy, profile.selective, chunk, e.model.moe is not None))

    terms = predict(e=e, profile=profile, rerun=Rerun(*per_choice(e.remat, rerun)))
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
        spread=_spread(e),
    )


def _spread(e: Estimate):
    """The spread of out-of-sample runs of the estimate's stack and chip (MODEL.md §F.3); None
    with a profile of the user's own, which no published run was predicted with."""
    if e.options.profile is not None:
        return None
    return step_spread(e.options.stack or default_stack(e.chip), e.chip.name)


def attention_block_flops(e: Estimate) -> float:
    """The attention block's forward FLOPs per token, all layers: its projections, 2·Ψ_attention,
    and the scores and their weighted sum, 4·L·T·N_h·H (MODEL.md §B.1).

    Parameters
    ----------
    e : Estimate
        The evaluated layout: its model (L, N_h, H), sequence length T (None counts as 1) and
        attention parameters Ψ_attention.

    Returns
    -------
    flops : float
        The attention block's forward FLOPs per token, all layers [FLOP/token].

    References
    ----------
    .. [1] docs/MODEL.md §B.1 (the attention block the chapter's checkpoints imply) and §C.1.
    """
    model, T = e.model, e.seq_len or 1
    return 2 * float(e.params.attention) + 4 * model.layers * T * model.heads * model.head_dim


def training_time(workload, step):
    """The time to train on the workload's tokens: tokens/B steps of ``step`` each.

    Parameters
    ----------
    workload : Workload
        What is trained: the batch B and the run's tokens [tokens].
    step : float or array_like
        The step time [s].

    Returns
    -------
    time : float or np.ndarray or None
        The time to train [s]; None when the workload gives no tokens.

    References
    ----------
    .. [1] docs/MODEL.md §A.5 (time to train is tokens/B steps).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``:
       Fully-Sharded Data Parallelism (FSDP).
    """
    return (
        None
        if workload.tokens is None
        else time_to_train(tokens=workload.tokens, batch=workload.batch, step_time=step)
    )


def with_run(e):
    """The estimate ``e`` with its whole run where the workload gives its tokens: every chip
    writes the weights and optimizer state it holds (its peak's).

    Parameters
    ----------
    e : Estimate
        The evaluated layout, its time to train set (None without tokens).

    Returns
    -------
    estimate : Estimate
        ``e`` with ``run``: the wall clock, goodput, chip-hours, energy and cost under failures
        and checkpoints; ``e`` as it is without tokens.

    References
    ----------
    .. [1] docs/MODEL.md §H (the whole run: failures, checkpoints, energy and cost).
    .. [2] J. W. Young, "A first order approximation to the optimum checkpoint interval", CACM
       1974; J. T. Daly, "A higher order estimate of the optimum checkpoint interval for
       restart dumps", FGCS 2006.
    """
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


GRAD_BYTES = {"fp32": 4.0, "bf16": 2.0}  # a gradient's bytes, by its dtype; a weight's, a moment's


def profile_of(chip: Chip, options: Options) -> Profile:
    """The profile an evaluation reads: the chip's with ``options.stack``'s behaviour and memory,
    or ``options.profile``, whose behaviour is the user's (measured, calibrated) and which takes
    only what ``options.stack`` keeps in memory; ``options.flash_attention`` and
    ``options.torch_compile`` override both
    (MODEL.md §C.3, §E.2, §F.2).

    Parameters
    ----------
    chip : Chip
        The chip the profile is for.
    options : Options
        How the numbers are read: ``profile``, ``stack``, ``flash_attention``,
        ``torch_compile``, ``grad_dtype``, ``weight_dtype``, ``fp8_params``,
        ``moment_dtype``, ``optimizer_impl``, ``accumulate_unsharded`` and ``compile_loss``.

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
    if options.grad_dtype is not None:  # the config's, over the stack's (MODEL.md §E.4)
        switches["grad_bytes"] = GRAD_BYTES[options.grad_dtype]
    if options.weight_dtype is not None:  # the master copy: its gradients and moments alike
        switches |= dict.fromkeys(
            ("weight_bytes", "moment_bytes"), GRAD_BYTES[options.weight_dtype]
        )
        switches.setdefault("grad_bytes", GRAD_BYTES[options.weight_dtype])  # (MODEL.md §E.4)
    if options.moment_dtype is not None:  # each of Adam's two moments (MODEL.md §E.4)
        switches["moment_bytes"] = GRAD_BYTES[options.moment_dtype]
    if switches.get("moment_bytes", 4.0) < 4 and profile.step_keeps_grads:
        # Megatron-LM's precision-aware optimizer, which keeps them below fp32, reads the 16-bit
        # gradients as they are: no fp32 copy at the step (distrib_optimizer.py, decoupled_grad)
        switches["step_grad_bytes"] = 0.0
    switches["adam_foreach"] = options.optimizer_impl == "foreach"  # its temporary (§E.1)
    switches["accumulate_unsharded"] = options.accumulate_unsharded  # FSDP's no_sync (§E.1)
    layers = switches.get("torch_compile", profile.torch_compile)
    loss = options.compile_loss  # None: with the layers, as torchtitan compiles it (§E.1)
    switches["loss_compiled"] = layers if loss is None else loss
    if options.fp8_params:  # a byte a weight, and no copy cast from bf16
        switches["weight_bytes"] = 1.0
    if options.features is not None:  # the config's features, over the release's defaults
        stack, on = REGISTRY[options.stack or default_stack(chip)], feature_names(options.features)
        switches |= {"hidden": hidden_by(stack, on), **stack.memory_with(on)}
    return dataclasses.replace(profile, **switches)
