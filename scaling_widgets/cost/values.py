"""What is evaluated, as four frozen values: the cluster, the workload, the layout, the options.

``evaluate`` takes these four; the panel's scenario, the CLI and the planner each build them and
hand them over, so one layout is evaluated by one path wherever it comes from.

Each value checks its fields when it is built (each field declares its default and its check,
``ground/checks.py``) and keeps them in the form the formulas take: a list becomes an array, a
one-element array its Python value. A field that may be an array holds one value per layout (the
planner evaluates thousands at once). Whether the four describe a layout that can run together
(a recompute policy needs sequences, a layout needs a whole sequence per data replica) is the
check ``evaluate`` makes (``layout/feasible.py``).
"""

from __future__ import annotations

import copy
import math
import re
from typing import Any

import numpy as np

from .ground.checks import (
    Choice,
    Instance,
    Maybe,
    Number,
    Switch,
    Whole,
    check_fields,
    checked,
    required,
    scalar,
)
from .ground.choices import per_choice
from .ground.records import record
from .ground.refusals import refuse
from .hardware.chip import Chip
from .hardware.mesh import ROLES, check_fits_pod
from .hardware.nodes import check_gpu_slice
from .schedules import SCHEDULES
from .stacks import STACKS
from .step.pipeline import ENDS_AS_LAYERS
from .step.profiles import Profile
from .step.run import CHECKPOINT_BW, FAILURES_PER_CHIP_HOUR, PUE, RESTART_S
from .strategies import STRATEGIES
from .transformer.context import CP_KINDS
from .transformer.exactness import CHAPTER, Exactness
from .transformer.recompute import REMAT_CHOICE
from .transformer.shapes import BOOK_PRECISION, Model, Precision

MATMUL_DTYPES = ("bf16", "fp8")  # what the layers' linear matmuls run in (MODEL.md §F.4)
# a stack's features that are on, by name: "none", or names joined by commas (MODEL.md §F.2)
FEATURE_NAMES = Choice(
    ("none",),
    also=lambda name: re.fullmatch(r"[a-z0-9_]+(,[a-z0-9_]+)*", name) is not None,
    also_said="or a stack's feature names joined by commas",
)
GRAD_DTYPES = ("fp32", "bf16")  # what a stack keeps and reduces gradients in (MODEL.md §E.4)
WEIGHT_DTYPES = ("fp32", "bf16")  # what a stack keeps its weights in (MODEL.md §E.4)
MOMENT_DTYPES = ("fp32", "bf16")  # what Adam's two moments are kept in (MODEL.md §E.4)
# How Adam's step runs: one fused kernel, or torch's foreach ops with a temporary (§E.1)
OPTIMIZER_IMPLS = ("fused", "foreach")
MAX_CHIPS = 2**22  # all pods together: twenty times the largest cluster built by 2026
MAX_SEQ_LEN = 2**24  # 16M tokens: beyond any context trained
MAX_BATCH = 1e11  # tokens a step: over a thousand times the largest published (about 61M)
MAX_TOKENS = 1e17  # tokens a run: several thousand times the largest published (about 36T)


@record(eq=False)
class Cluster:
    """The chips: a chip preset, one pod's slice and the pods joined by the data-center network.

    ``slice_shape`` None is the chip's default slice (a TPU's full pod; about 1,024 GPUs in whole
    nodes); ``pods`` may be an array, one count per layout.

    Attributes
    ----------
    chip : Chip
        The chip: a preset (``presets.HARDWARE``) or one of your own, with its C [FLOP/s], HBM
        [bytes] and links [bytes/s]. Required.
    slice_shape : tuple of int, optional
        One pod's slice, its axis lengths [chips]: a TPU torus such as (16, 16, 16), or a GPU
        slice's (nodes, GPUs used in each). None: the chip's default slice. It must fit the
        chip's pod (MODEL.md §A.7, §B.5).
    pods : int or array_like, default 1
        P, the pods the data-center network joins, each holding the same slice.
    """

    chip: Chip = required(Instance(Chip))
    slice_shape: tuple | None = None
    pods: int | np.ndarray = checked(1, Whole(high=MAX_CHIPS, per_layout=True))

    def __post_init__(self) -> None:
        check_fields(self, skip=("pods",))  # the pods' limit depends on the slice
        chip, shape = self.chip, self.slice_shape
        if shape is None:
            shape = chip.default_slice
        if not isinstance(shape, (tuple, list)):
            raise refuse("slice_shape", "a list of axis lengths such as (16, 16, 16)", shape)
        shape = (check_gpu_slice if chip.is_gpu else check_fits_pod)(shape, chip.pod_shape)
        largest = MAX_CHIPS // math.prod(shape)
        whole_pods = Whole(
            high=largest,
            allowed_words=f"a whole number from 1 to {largest:,} (at most {MAX_CHIPS:,} chips in "
            "all)",
            per_layout=True,
        )
        object.__setattr__(self, "slice_shape", tuple(shape))
        object.__setattr__(self, "pods", whole_pods("pods", self.pods))

    @property
    def chips(self) -> int | np.ndarray:
        """All chips of all pods."""
        return math.prod(self.slice_shape) * self.pods

    def replicas(self, layout: Layout) -> int | np.ndarray:
        """P/(S·T), the data replicas over DCN: the pods, or the groups of them that each of the
        layout's pipelines or TP groups spans (MODEL.md §B.10, §B.11).

        Parameters
        ----------
        layout : Layout
            The layout: its ``pp_pods`` S and ``tp_pods`` T.

        Returns
        -------
        replicas : int or np.ndarray
            The pods divided by S·T, one count per layout where S or T is an array.
        """
        return self.pods // (layout.pp_pods * layout.tp_pods)


# the layout's fields of the groups that may span pods (MODEL.md §B.9 to §B.13)
SPANS = ("fsdp_pods", "pp_pods", "tp_pods", "ep_pods", "cp_pods")


@record(eq=False)
class Workload:
    """What is trained: the model, the global batch [tokens], its sequences, the precision, and
    the tokens of the whole run (which give the time to train).

    ``seq_len`` None is the chapter's token-level model: the batch is a count of tokens with no
    sequences to keep whole.

    Attributes
    ----------
    model : Model
        The model: its D, F, L, N_h, K, H, V and, for a mixture of experts, its experts.
        Required.
    batch : float or array_like
        B, the global batch, every sequence together [tokens]. With ``seq_len`` it is rounded to
        whole sequences (``whole_sequences``; ``rounded_from`` keeps the batch asked for), and
        below one sequence refused. Required.
    seq_len : int, optional
        T, the sequence length [tokens]. None: the chapter's token-level model.
    precision : Precision, default BOOK_PRECISION
        The bytes a parameter of weights, gradients and optimizer state, and of an activation
        (MODEL.md §B.2); the default is the chapter's 10 bytes a parameter.
    tokens : float or array_like, optional
        The tokens of the whole run [tokens], which give the time to train and the run
        (MODEL.md §H). None: neither is reported.
    """

    model: Model = required(Instance(Model))
    batch: float | np.ndarray = required(Number(high=MAX_BATCH, unit="tokens", per_layout=True))
    seq_len: int | None = checked(None, Maybe(Whole(high=MAX_SEQ_LEN)))
    precision: Precision = checked(BOOK_PRECISION, Instance(Precision))
    tokens: float | np.ndarray | None = checked(
        None, Maybe(Number(high=MAX_TOKENS, unit="tokens", per_layout=True))
    )

    def __post_init__(self) -> None:
        check_fields(self)
        if self.seq_len is not None:
            # Frameworks count a batch of sequences in whole ones: a part is rounded off, and
            # the batch asked for stays readable for the note that says so (``rounded_from``).
            # Below one sequence nothing runs: refused, naming the smallest batch that does.
            if np.any(np.asarray(self.batch) < self.seq_len):
                raise refuse(
                    "batch",
                    f"at least one sequence: {self.seq_len:,} tokens or more",
                    f"{float(np.min(self.batch)):g} tokens",
                )
            whole = whole_sequences(self.batch, self.seq_len)
            if np.any(whole != self.batch):
                object.__setattr__(self, "_asked_batch", self.batch)
                object.__setattr__(self, "batch", whole)

    @property
    def rounded_from(self) -> float | np.ndarray | None:
        """The batch asked for when it was not whole sequences [tokens]; None when it was."""
        return self.__dict__.get("_asked_batch")


def computed(value: Any, **changes: Any) -> Any:
    """``value`` with ``changes``, not checked again: only for fields the code derived from checked
    values (a candidate split, a count it chose, a per-layout axis added). Checking them again
    would cost the panel a third of its time.

    Parameters
    ----------
    value : Cluster, Workload, Layout or Options
        The checked value to copy.
    **changes
        Its fields to set, by name, each to its new value; the form asked for is forgotten.

    Returns
    -------
    value : Cluster, Workload, Layout or Options
        A copy of ``value`` with ``changes`` set.
    """
    out = copy.copy(value)
    for name, new in changes.items():
        object.__setattr__(out, name, new)
        vars(out).pop(f"_asked_{name}", None)  # no longer the value asked for
    return out


def as_asked(value: Any) -> dict[str, Any]:
    """A value's fields as they were asked for: where it normalised one (a batch rounded to
    whole sequences), the form given, which builds the same value again.

    Parameters
    ----------
    value : Cluster, Workload, Layout or Options
        A checked value.

    Returns
    -------
    fields : dict of str to Any
        Its fields by name, each as it was given.
    """
    held = vars(value)
    return {
        name: held.get(f"_asked_{name}", held[name])
        for name in held
        if not name.startswith("_asked_")
    }


def whole_sequences(batch: float | np.ndarray, seq_len: int) -> float | np.ndarray:
    """The batch in whole sequences of ``seq_len``, the nearest count and at least one
    [tokens]; a batch within rounding error of whole sequences as it is.

    Parameters
    ----------
    batch : float or array_like
        B, the global batch asked for [tokens].
    seq_len : int
        T, the sequence length [tokens].

    Returns
    -------
    batch : float or np.ndarray
        B rounded to the nearest whole count of sequences, at least one [tokens].

    References
    ----------
    .. [1] docs/MODEL.md §A, "Layouts that cannot run" (a batch rounded to whole sequences),
       and §G (frameworks count a batch in sequences).
    """
    sequences = np.asarray(batch) / seq_len
    whole = np.maximum(np.round(sequences), 1)
    close = np.abs(sequences - whole) <= 1e-12 * sequences
    return scalar(np.where(close, batch, whole * seq_len))


def _takes_virtual_stages() -> str:
    named = [repr(name) for name, s in SCHEDULES.items() if s.takes_virtual_stages]
    return " or ".join(named)


@record(eq=False)
class Layout:
    """How the work is spread (MODEL.md §A.3, §A.6, §B.3, §B.4, §B.6, §D.2, §D.3).

    ``strategy`` names the groups in use. ``x``/``y`` None take the strategy's own split (the
    fastest legal one for "fsdp+tp"); ``axis_roles`` (one of "x", "y", "z" per slice axis) gives
    whole axes to the groups instead. ``zero`` None is the strategy's own stage (DP and TP 0,
    FSDP 3). ``microbatches`` None: each replica's whole sequences in equal parts, the fastest
    count that fits (``layout.fastest``; 4·Z under pipelining and 1 without when there are no
    sequences), or follows from ``microbatch_seqs``. ``mx``, ``my`` and ``wraparound`` override
    how the groups sit on the slice (axes spanned, rings). ``ep``: expert parallelism, EP chips
    of the data axis X that split each MoE layer's experts; 1 without. ``etp``: the routed
    experts' tensor parallelism, None (or Y) as the rest of the layer; 1 folds the EP group over
    TP x X instead, as Megatron-Core does (whole experts on each chip). ``cp``: context
    parallelism, CP chips of the data axis that split each sequence, passing keys and values as
    ``cp_kind`` says: "ring", "all-gather" or "ulysses"; None: 1 where each data replica gets
    whole sequences, else the smallest power of two that gives them (``feasible.implied_cp``).
    ``ep_overlap`` runs each forward with another microbatch's backward, whose compute hides the
    expert all-to-alls: Megatron-LM's combined 1F1B, with one stage or interleaved (MODEL.md §B.6).
    Every field but ``strategy``, ``sequence_parallel``, ``ep_overlap``, ``axis_roles`` and
    ``wraparound`` may hold one value per layout.

    Attributes
    ----------
    strategy : str, default "fsdp+tp"
        One of ``STRATEGIES``: "dp", "fsdp", "tp" or "fsdp+tp" (MODEL.md §A.3).
    x : int or array_like, optional
        X, the data (DP or FSDP) degree, its CP and EP chips included [chips]. None: the
        strategy's own split.
    y : int or array_like, optional
        Y, the tensor-parallel degree [chips]. None: the strategy's own split.
    z : int or array_like, optional
        Z, the pipeline stages. None: one stage, or what ``axis_roles`` gives.
    zero : int or array_like, optional
        The ZeRO stage, 0 to 3, over the data axis X (MODEL.md §B.3). None: the strategy's own.
    microbatches : int or array_like, optional
        m, the microbatches of a step, pipelined or accumulated. None: the fastest count that
        fits, as above.
    microbatch_seqs : int or array_like, optional
        Sequences a microbatch [sequences]; m follows: as many microbatches of at least that
        size as each data replica gets. None: m from ``microbatches``. Left out when
        ``microbatches`` is given.
    schedule : str or array_like, default "1f1b"
        The pipeline schedule, one of ``SCHEDULES``: "gpipe", "1f1b", "interleaved", "zb-h1",
        "zb-h2", "zbv", "dualpipe" or "dualpipev" (MODEL.md §B.6).
    virtual_stages : int or array_like, default 1
        v, the virtual stages (chunks of layers) a device runs; other than 1 only with
        "interleaved" (a V-shaped schedule, "zbv" or "dualpipev", runs its own 2).
    remat : str or array_like, default "checkpoints"
        The recompute policy, one of ``REMAT_POLICIES``: "checkpoints" (the chapter's count),
        "none", "selective" or "full" (MODEL.md §A.4, §B.4), or a framework's own by its name
        (``transformer/recompute.py``, MODEL.md §E.4): MaxText's ``remat_policy`` values,
        Megatron-LM's "selective:<modules>" and "full:<uniform|block>:<N>", torchtitan's
        "selective:op" and "selective:<N>".
    sequence_parallel : bool, default False
        Shard the norms' and dropout's activations over TP (MODEL.md §B.4, §E.1).
    ep_overlap : bool, default False
        Run each forward with another microbatch's backward, whose compute hides the expert
        all-to-alls: Megatron-LM's combined 1F1B (MODEL.md §B.6).
    axis_roles : tuple of str, optional
        The group each slice axis is given to, "x", "y" or "z", one per slice axis; left out
        when ``x``, ``y`` or ``z`` is given. None: the groups sit as MODEL.md §A.7 places them.
    mx : float or array_like, optional
        M_X, the mesh axes the X group spans (on GPUs, its bandwidth in NVLink's units). None:
        the spans of the placement.
    my : float or array_like, optional
        M_Y, the same for the Y group. None: the spans of the placement.
    wraparound : bool, optional
        Every group a ring (True) or none (False). None: the chip's rule (MODEL.md §A.7).
    ep : int or array_like, default 1
        EP, the chips of the data axis X that split each MoE layer's routed experts [chips].
    etp : int or array_like, optional
        The routed experts' TP degree; 1 folds the EP group over TP x X (MODEL.md §D.2). None:
        Y, as the rest of the layer.
    cp : int or array_like, optional
        CP, the chips of the data axis that split each sequence [chips] (MODEL.md §D.3). None:
        1 where each data replica gets whole sequences, else the smallest power of two that
        gives them.
    cp_kind : str or array_like, default "ring"
        How CP passes keys and values: "ring", "all-gather" or "ulysses".
    ends_as_layers : str, default "none"
        Which ends of the model take a layer's place in the pipeline split: "none",
        "embedding", "loss" or "both" (Megatron-LM's --account-for-embedding-in-pipeline-split
        and --account-for-loss-in-pipeline-split): the first (last) stage holds a layer fewer
        (MODEL.md §A.6).
    first_stage_layers : int, optional
        The layers of the first pipeline stage, all its virtual stages together (Megatron-LM's
        --decoder-first-pipeline-num-layers); the stages between the first and the last split
        the rest. None: its share of the split. Not with ``ends_as_layers``.
    last_stage_layers : int, optional
        The layers of the last pipeline stage (Megatron-LM's --decoder-last-pipeline-num-layers).
        None: its share of the split.
    fsdp_pods : int or array_like, default 1
        F, the pods each FSDP group spans (MaxText's dcn_fsdp_parallelism): ZeRO-3 shards the
        weights, gradients and optimizer state over X·F chips and gathers each layer across the
        data-center network; the P/F groups of pods are data-parallel replicas. 1: every pod a
        replica (MODEL.md §B.9).
    pp_pods : int or array_like, default 1
        S, the pods each pipeline spans (MaxText's dcn_pipeline_parallelism): Z stages in each
        pod, Z·S in all, the activations crossing the data-center network between pods; the P/S
        groups of pods are data-parallel replicas. 1: every pod holds whole pipelines (MODEL.md
        §B.10).
    tp_pods : int or array_like, default 1
        T, the pods each TP group spans (MaxText's dcn_tensor_parallelism): Y chips in each pod,
        Y·T in all, TP's gathers and scatters crossing the data-center network; the P/T groups
        of pods are data-parallel replicas. 1: every pod holds whole TP groups (MODEL.md §B.11).
    ep_pods : int or array_like, default 1
        E, the pods each EP group spans (MaxText's dcn_expert_parallelism): EP chips of the data
        axis in each pod, EP·E in all, that split the routed experts, the all-to-alls crossing
        the data-center network; every pod still a data replica of the rest of the layer. 1:
        whole EP groups in each pod (MODEL.md §B.12).
    cp_pods : int or array_like, default 1
        C, the pods each CP group spans (MaxText's dcn_context_parallelism): CP chips of the data
        axis in each pod, CP·C in all, that split each sequence, passing keys and values across
        the data-center network; every pod still a data replica of the weights. 1: whole CP
        groups in each pod (MODEL.md §B.13).
    """

    strategy: str = checked("fsdp+tp", Choice(tuple(STRATEGIES)))
    x: int | np.ndarray | None = checked(None, Maybe(Whole(per_layout=True)))
    y: int | np.ndarray | None = checked(None, Maybe(Whole(per_layout=True)))
    z: int | np.ndarray | None = checked(None, Maybe(Whole(per_layout=True)))
    zero: int | np.ndarray | None = checked(
        None,
        Maybe(Whole(0, 3, "a ZeRO stage 0, 1, 2 or 3 (or an array of them)", per_layout=True)),
    )
    microbatches: int | np.ndarray | None = checked(None, Maybe(Whole(per_layout=True)))
    microbatch_seqs: int | np.ndarray | None = checked(None, Maybe(Whole(per_layout=True)))
    schedule: str | np.ndarray = checked("1f1b", Choice(tuple(SCHEDULES), per_layout=True))
    virtual_stages: int | np.ndarray = checked(1, Whole(per_layout=True))
    remat: str | np.ndarray = checked("checkpoints", REMAT_CHOICE)
    sequence_parallel: bool = checked(False, Switch())
    ep_overlap: bool = checked(False, Switch())
    axis_roles: tuple | None = None
    mx: float | np.ndarray | None = checked(None, Maybe(Number(per_layout=True)))
    my: float | np.ndarray | None = checked(None, Maybe(Number(per_layout=True)))
    wraparound: bool | None = checked(None, Maybe(Switch("true, false or None (the chip's rule)")))
    ep: int | np.ndarray = checked(1, Whole(per_layout=True))
    etp: int | np.ndarray | None = checked(None, Maybe(Whole(per_layout=True)))
    cp: int | np.ndarray | None = checked(None, Maybe(Whole(per_layout=True)))
    cp_kind: str | np.ndarray = checked("ring", Choice(CP_KINDS, per_layout=True))
    ends_as_layers: str = checked("none", Choice(tuple(ENDS_AS_LAYERS)))
    first_stage_layers: int | None = checked(None, Maybe(Whole()))
    last_stage_layers: int | None = checked(None, Maybe(Whole()))
    fsdp_pods: int | np.ndarray = checked(1, Whole(per_layout=True))
    pp_pods: int | np.ndarray = checked(1, Whole(per_layout=True))
    tp_pods: int | np.ndarray = checked(1, Whole(per_layout=True))
    ep_pods: int | np.ndarray = checked(1, Whole(per_layout=True))
    cp_pods: int | np.ndarray = checked(1, Whole(per_layout=True))

    def __post_init__(self) -> None:
        check_fields(self)
        given = self.first_stage_layers is not None or self.last_stage_layers is not None
        if given and self.ends_as_layers != "none":  # as Megatron-LM refuses them together
            raise refuse(
                "ends_as_layers",
                "'none' when the first or the last stage's layers are given",
                repr(self.ends_as_layers),
            )
        if self.strategy == "tp" and np.any(
            np.asarray(self.zero if self.zero is not None else 0) > 0
        ):
            raise refuse(
                "zero",
                "0 for strategy 'tp': a ZeRO stage shards over the data axis, which TP has not",
                self.zero,
            )
        self._fix_chunks()
        takes_v = np.isin(
            self.schedule, [n for n, s in SCHEDULES.items() if s.takes_virtual_stages]
        )
        if np.any((np.asarray(self.virtual_stages) != 1) & ~takes_v):
            got = f"{self.virtual_stages} with {self.schedule!r}"
            raise refuse(
                "virtual_stages", f"1 unless the schedule is {_takes_virtual_stages()}", got
            )
        if self.microbatch_seqs is not None and self.microbatches is not None:
            raise refuse(
                "microbatch_seqs",
                "left out when microbatches is given (one follows from the other)",
                "both",
            )
        if self.axis_roles is not None:
            roles = self.axis_roles
            if not isinstance(roles, (tuple, list)) or any(r not in ROLES for r in roles):
                raise refuse("axis_roles", "a list of 'x', 'y' or 'z', one per slice axis", roles)
            if not (self.x is None and self.y is None and self.z is None):
                raise refuse(
                    "axis_roles",
                    "left out when x, y or z is given (the roles set them)",
                    tuple(roles),
                )
            object.__setattr__(self, "axis_roles", tuple(roles))

    def _fix_chunks(self) -> None:
        """A V-shaped schedule runs its own two chunks a device: 1 (not asked) becomes them, any
        other count is refused."""
        fixed = per_choice(self.schedule, lambda n: np.asarray(SCHEDULES[n].fixed_chunks))
        if not np.any(fixed):
            return
        v = np.asarray(self.virtual_stages)
        if np.any((fixed > 0) & (v != 1) & (v != fixed)):
            raise refuse(
                "virtual_stages",
                "2 (or left out) with a V-shaped schedule: each device runs two chunks in a V",
                f"{self.virtual_stages} with {self.schedule!r}",
            )
        chunks = np.where(fixed > 0, fixed, v)
        object.__setattr__(self, "virtual_stages", chunks.item() if chunks.ndim == 0 else chunks)


@record(eq=False)
class Options:
    """How the numbers are read (MODEL.md §A.10, §B.1, §B.7, §B.8, §C, §E.2).

    ``mfu``: the share of peak the chips sustain on the FLOPs they do, recompute included, so
    recompute lengthens the step (the chapter's model). ``None`` predicts the step instead,
    with ``profile`` (None: the chip's default). ``measured_step_time`` [s] replaces the step
    and calibrates the utilisation instead. ``attention_flops`` counts 12·L·T·N_h·H per token.
    ``exact`` holds the corrections the chapter leaves out; ``overhead_bytes`` per chip and
    ``fits_below`` (a share of HBM) make "fits" cautious. ``stack`` says what the software keeps
    in memory, on top of the profile's efficiencies; None: the profile's own.
    ``flash_attention`` False brings back the s x s scores, in memory and in the step; None:
    the stack's. ``matmul_dtype`` "fp8" runs the layers' linear matmuls at the chip's fp8 rate
    (attention and the output layer stay in bf16, MODEL.md §F.4). ``torch_compile`` runs a
    PyTorch stack's layers compiled: fused memory-bound kernels, fewer activations kept (MODEL.md
    §F.5); None: the stack's (eager). The whole run, with the workload's tokens (MODEL.md §H):
    ``failure_rate`` interruptions per chip-hour, ``checkpoint_bw`` each chip's write bandwidth
    [bytes/s], ``restart_time`` [s], ``checkpoint_interval`` [s] (None: Young/Daly's), ``pue``,
    ``chip_power`` [W] (None: the chip's rated power) and ``price_per_chip_hour`` (None: no cost).

    Attributes
    ----------
    mfu : float or array_like, optional
        η, the share of peak the chips sustain on the FLOPs they do, at most 1. None: the step
        is predicted term by term (MODEL.md §C).
    measured_step_time : float or array_like, optional
        A measured step [s], which replaces the step; the MFU and HFU follow. None: none.
    profile : Profile, optional
        The chip's physics and the stack's behaviour the predicted step reads (MODEL.md §C.3).
        None: the chip's default.
    attention_flops : bool, default False
        Count the attention's 12·L·T·N_h·H a token in the model FLOPs (MODEL.md §B.1).
    exact : Exactness, default CHAPTER
        The corrections the chapter leaves out (MODEL.md §B.7); ``CHAPTER`` has them all off.
    overhead_bytes : float or array_like, default 0.0
        The runtime's memory per chip [bytes] (MODEL.md §B.8).
    fits_below : float or array_like, default 1.0
        The share of HBM a layout's peak may fill, before its uncertainty (MODEL.md §B.8,
        §E.5).
    stack : str, optional
        The software stack, one of ``STACKS``: "megatron-lm", "fsdp2", "deepspeed", "maxtext",
        "megatron-lm-2021" or "llm-foundry" (MODEL.md §E.2, §F.2). None: the profile's own.
    matmul_dtype : str, default "bf16"
        What the layers' linear matmuls run in: "bf16" or "fp8" (MODEL.md §F.4).
    grad_dtype : str, optional
        What the gradients are kept and reduced in: "fp32" or "bf16" (Megatron-LM's
        ``--grad-reduce-in-bf16``). None: the stack's (MODEL.md §E.4).
    weight_dtype : str, optional
        What the stack keeps its weights in: "fp32" or "bf16" (MaxText's ``weight_dtype``,
        whose weights are the optimizer's own copy; float32 by default). None: the stack's
        (MODEL.md §E.4).
    fp8_params : bool, default False
        Keep the layers' weights in fp8, with no bf16 copy (Megatron-LM's
        ``--fp8-param-gather``); with fp8 matmuls only (MODEL.md §E.4).
    moment_dtype : str, optional
        What Adam's two moments are kept in: "fp32" or "bf16" (Megatron-LM's
        ``--exp-avg-dtype`` and ``--exp-avg-sq-dtype``; DeepSeek-V3's). None: fp32, as every
        stack keeps them by default (MODEL.md §E.4).
    swiglu_input_fp8 : bool, default False
        Keep the SwiGLU's input (the gate and up-projection, 2·F a token) in fp8 for the
        backward, cast back to bf16 there (Megatron-Core's ``activation_func_fp8_input_store``;
        DeepSeek-V3's MoE layers; MODEL.md §E.4).
    optimizer_impl : str, optional
        How Adam's step runs: "fused", one kernel (Megatron-LM's, DeepSpeed's FusedAdam,
        torchtitan's default, XLA's), or "foreach", PyTorch's AdamW without ``fused=True`` (the
        Hugging Face Trainer's ``adamw_torch``), whose square root of the second moment is a
        temporary as large as the optimizer shard at the step (MODEL.md §E.1). None: fused.
    accumulate_unsharded : bool, default False
        Accumulate the microbatches' gradients whole, unsharded in the weights' compute dtype,
        and reduce-scatter them once, at the last (PyTorch FSDP's ``no_sync``, as the Hugging
        Face Trainer and Accelerate accumulate; fsdp2 and llm-foundry). Only where ZeRO shards
        the gradients (2, 3) and a step has more than one microbatch (MODEL.md §E.1, §C.2).
    loss_chunks : int, default 1
        The chunks the output layer and the loss run in over the sequence, one at a time
        (torchtitan's ChunkedLossWrapper, 8 in its 2026 configs; MODEL.md §E.1).
    kv_caches_held : int, default 0
        The steps' outputs the training loop holds, each every layer's K and V (a Hugging Face
        model's ``use_cache``, on in its configs unless its own gradient checkpointing turns it
        off) and the fp32 logits: 0 (the default, as a trainer that keeps only the loss); 1,
        the step's own through its backward and step (a loop that keeps the outputs); 2, also
        the last step's until this step's forward returns (a loop that rebinds ``outputs =
        model(**batch)``) (MODEL.md §E.1).
    features : str, optional
        The stack's features that are on, by their names, comma-separated: those that hide a
        communication under compute (Megatron-LM's "overlap_grad_reduce",
        "overlap_param_gather", "tp_comm_overlap", "overlap_p2p_comm"; torchtitan's "async_tp";
        DeepSpeed's "overlap_comm"); "none" for none. None: the stack's defaults in the release
        its module cites (MODEL.md §F.2).
    flash_attention : bool, optional
        False keeps the s x s attention scores, in memory and in the step. None: the stack's.
    torch_compile : bool, optional
        Run a PyTorch stack's layers compiled (MODEL.md §F.5). None: the stack's (eager).
    compile_loss : bool, optional
        Compile the loss (torchtitan's ``compile.components`` with "loss"): it holds 4 bytes a
        logit, not 12 (MODEL.md §E.1). False: eager though the layers are compiled (torchtitan
        before April 2025). None: with the layers, as torchtitan does by default.
    failure_rate : float, default FAILURES_PER_CHIP_HOUR
        λ, interruptions per chip-hour [1/h]; the default, 1.97e-5, is Llama 3's 419 in 54
        days on 16,384 H100s (MODEL.md §H).
    checkpoint_bw : float, default CHECKPOINT_BW
        Each chip's checkpoint write bandwidth [bytes/s]; the default, 1.22e8, is Llama 3's
        storage, 2 TB/s for 16K GPUs (MODEL.md §H).
    restart_time : float, default RESTART_S
        R, what a restart after a failure takes [s]; the default is 600 s.
    checkpoint_interval : float, optional
        τ, the wall clock between checkpoints [s]. None: Young/Daly's √(2·δ·M) (MODEL.md §H).
    pue : float, default PUE
        The data center's power usage effectiveness, from 1 to 10; the default is 1.1.
    chip_power : float, optional
        What a chip draws [W]. None: the chip's rated power.
    price_per_chip_hour : float, optional
        The price of a chip-hour, in the currency you count in. None: no cost is reported.
    """

    mfu: float | np.ndarray | None = checked(
        None, Maybe(Number(high=1, closed=True, what="a share of peak", per_layout=True))
    )
    measured_step_time: float | np.ndarray | None = checked(
        None, Maybe(Number(unit="seconds", per_layout=True))
    )
    profile: Profile | None = checked(None, Maybe(Instance(Profile, where="")))
    attention_flops: bool = checked(False, Switch())
    exact: Exactness = checked(CHAPTER, Instance(Exactness, where=""))
    overhead_bytes: float | np.ndarray = checked(0.0, Number(low=0, unit="bytes", per_layout=True))
    # The share of HBM a peak may fill: all of it, the peak's own uncertainty being the
    # verdict's (MODEL.md §E.5); less for a margin of your own.
    fits_below: float | np.ndarray = checked(
        1.0, Number(high=1, closed=True, what="a share of HBM", per_layout=True)
    )
    stack: str | None = checked(None, Maybe(Choice(tuple(STACKS))))
    matmul_dtype: str = checked("bf16", Choice(MATMUL_DTYPES))
    grad_dtype: str | None = checked(None, Maybe(Choice(GRAD_DTYPES)))
    weight_dtype: str | None = checked(None, Maybe(Choice(WEIGHT_DTYPES)))
    fp8_params: bool = checked(False, Switch())
    moment_dtype: str | None = checked(None, Maybe(Choice(MOMENT_DTYPES)))
    swiglu_input_fp8: bool = checked(False, Switch())
    optimizer_impl: str | None = checked(None, Maybe(Choice(OPTIMIZER_IMPLS)))
    accumulate_unsharded: bool = checked(False, Switch())
    loss_chunks: int = checked(1, Whole(high=1024))
    kv_caches_held: int = checked(0, Whole(low=0, high=2))
    features: str | None = checked(None, Maybe(FEATURE_NAMES))
    flash_attention: bool | None = checked(None, Maybe(Switch("true, false or None (the stack's)")))
    torch_compile: bool | None = checked(None, Maybe(Switch("true, false or None (the stack's)")))
    compile_loss: bool | None = checked(None, Maybe(Switch("true, false or None (the layers')")))
    failure_rate: float = checked(
        FAILURES_PER_CHIP_HOUR, Number(low=0, high=1, what="interruptions per chip-hour")
    )
    checkpoint_bw: float = checked(CHECKPOINT_BW, Number(high=1e13, unit="bytes/s"))
    restart_time: float = checked(RESTART_S, Number(low=0, high=1e7, unit="seconds"))
    checkpoint_interval: float | None = checked(None, Maybe(Number(high=1e9, unit="seconds")))
    pue: float = checked(PUE, Number(low=1, high=10, closed=True, what="a PUE"))
    chip_power: float | None = checked(None, Maybe(Number(high=1e6, unit="watts")))
    price_per_chip_hour: float | None = checked(None, Maybe(Number(low=0, high=1e6)))

    def __post_init__(self) -> None:
        check_fields(self)


VALUES = (Cluster, Workload, Layout, Options)


def split_keywords(keywords: dict[str, Any]) -> tuple[Cluster, Workload, Layout, Options]:
    """The four values from their fields given as keywords; an unknown keyword raises.

    Parameters
    ----------
    keywords : dict of str to Any
        The fields of ``Cluster``, ``Workload``, ``Layout`` and ``Options`` by name; ``chip``,
        ``model`` and ``batch`` are needed.

    Returns
    -------
    cluster : Cluster
        The chips, built (and checked) from their fields.
    workload : Workload
        What is trained, built from its fields.
    layout : Layout
        How the work is spread, built from its fields.
    options : Options
        How the numbers are read, built from its fields.

    Raises
    ------
    TypeError
        For a keyword that is no field of the four, or when ``chip``, ``model`` or ``batch`` is
        missing.
    InputError
        For a field out of range, by each value's own check.
    """
    groups = {kind: tuple(kind.__dataclass_fields__) for kind in VALUES}
    unknown = set(keywords) - {name for names in groups.values() for name in names}
    if unknown:
        known = ", ".join(name for names in groups.values() for name in names)
        raise TypeError(
            f"estimate() got an unexpected keyword {sorted(unknown)[0]!r}; allowed: {known}"
        )
    for needed in ("chip", "model", "batch"):
        if needed not in keywords:
            raise TypeError(f"estimate() needs the keyword {needed!r}")
    return tuple(
        kind(**{k: keywords[k] for k in names if k in keywords}) for kind, names in groups.items()
    )
