"""What is evaluated, as four frozen values: the cluster, the workload, the layout, the options.

``estimate`` takes these four; the panel's scenario, the CLI and the planner each build them and
hand them over, so one layout is evaluated by one path wherever it comes from. ``check`` (in
``check.py``) decides whether they describe a layout that can run.

The knobs of a ``Layout`` may be arrays, one value per layout (the planner evaluates thousands
at once); everything else is one value. Nothing here checks: building a value is free.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from .inputs import BOOK_PRECISION, Chip, Model, Precision
from .layer import CHAPTER, Exactness
from .steptime import Profile


@dataclass(frozen=True, eq=False)
class Cluster:
    """The chips: a chip preset, one pod's slice (None: the chip's full pod) and pods over DCN."""

    chip: Chip
    slice_shape: tuple | None = None
    pods: int = 1


@dataclass(frozen=True, eq=False)
class Workload:
    """What is trained: the model, the global batch [tokens], its sequences and the precision.

    ``seq_len`` None is the chapter's token-level model: the batch is a count of tokens with no
    sequences to keep whole. ``tokens`` (the whole run) gives the time to train.
    """

    model: Model
    batch: object  # tokens, a number or an array
    seq_len: int | None = None
    precision: Precision = BOOK_PRECISION
    tokens: float | None = None


@dataclass(frozen=True, eq=False)
class Layout:
    """How the work is spread (SPEC A.3, A.6, B.3, B.4, B.6).

    ``strategy`` names the groups in use. ``x``/``y`` None take the strategy's own split (the
    best legal one for "fsdp+tp"); ``axis_roles`` (one of "x", "y", "z" per slice axis) gives
    whole axes to the groups instead. ``zero`` None is the strategy's own stage (DP and TP 0,
    FSDP 3). ``microbatches`` None is 4·Z under pipelining and 1 without, or follows from
    ``microbatch_seqs``. ``mx``, ``my`` and ``wraparound`` override how the groups sit on the
    slice (axes spanned, rings). ``ep``: expert parallelism, EP chips of the data axis X that
    split each MoE layer's experts (SPEC D.2); 1 without. ``cp``: context parallelism, CP chips of
    the data axis that split each sequence, passing keys and values as ``cp_kind`` says: "ring",
    "all-gather" or "ulysses" (SPEC D.3); 1 without.
    """

    strategy: str = "fsdp+tp"
    x: object = None
    y: object = None
    z: object = None
    zero: object = None
    microbatches: object = None
    microbatch_seqs: float | None = None
    schedule: object = "1f1b"
    virtual_stages: object = 1
    remat: object = "checkpoints"
    sequence_parallel: bool = False
    axis_roles: tuple | None = None
    mx: float | None = None
    my: float | None = None
    wraparound: bool | None = None
    ep: object = 1
    cp: object = 1
    cp_kind: str = "ring"


@dataclass(frozen=True, eq=False)
class Options:
    """How the numbers are read (SPEC A.10, B.1, B.7, B.8).

    ``mfu``: the share of peak the chips sustain on the FLOPs they do, recompute included, so
    recompute lengthens the step (SPEC A.10, the chapter's model). ``None`` predicts the step
    instead (SPEC C), with ``profile`` (None: the chip's default, ``profiles.profile_for``).
    ``measured_step_time`` [s] replaces the step and calibrates the utilisation instead.
    ``attention_flops`` counts 12·L·T·N_h·H per token. ``exact`` holds the SPEC B.7
    corrections; ``overhead_bytes`` per chip and ``fits_below`` (a share of HBM) make "fits"
    cautious (B.8). ``stack`` (one of ``profiles.STACKS``) says what the software keeps in memory,
    on top of the profile's efficiencies (SPEC E.2); None: the profile's own. ``flash_attention``
    False brings back the s x s scores, in memory and in the step (SPEC E.1); None: the stack's.
    """

    mfu: float | None = None
    measured_step_time: float | None = None
    profile: Profile | None = None
    attention_flops: bool = False
    exact: Exactness = field(default=CHAPTER)
    overhead_bytes: float = 0.0
    fits_below: float = 1.0
    stack: str | None = None
    flash_attention: bool | None = None


LAYOUT_FIELDS = tuple(Layout.__dataclass_fields__)
OPTION_FIELDS = tuple(Options.__dataclass_fields__)
