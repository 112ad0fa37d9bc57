"""Published training runs as the cost model's four values and a measured step time (MODEL.md
§C.6), and published peaks as the values and the peak they measured (MODEL.md §E.3).

``load_runs`` reads ``dev_runs.json`` (the development set, which ships in the package's
``data/``; pass a path for a file of your own in the same form) and builds each case exactly as
its source describes it: the chip preset, the slice, the model, the batch, the layout.
``seconds_per_step`` converts the published outcome to seconds per step by the file's own
``conventions``. Nothing is fitted here.

>>> run = next(r for r in load_runs() if r.id == "M2-1.7B")
>>> round(run.step_time, 2), run.values[2].x, run.values[0].slice_shape
(3.53, 32, (4, 8))
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

from . import catalog
from .cost import Cluster, Layout, Options, Workload, evaluate, param_count
from .cost.ground.records import record
from .cost.hardware.chip import Chip
from .cost.hardware.nodes import gpu_slice
from .cost.hardware.slices import slice_of
from .cost.stacks import REGISTRY
from .presets import PRECISIONS

DEV_RUNS = (
    Path(__file__).resolve().parent / "data" / "dev_runs.json"
)  # package data: the wheel has it
PUBLIC_RUNS = DEV_RUNS.parent / "public_runs.json"  # further published runs, in the same form
# Megatron-Core on H100 of 2024 (the Megatron-LM README's weak scaling, NeMo 24.07), same form
DEV_RUNS_GPU = DEV_RUNS.parent / "dev_runs_gpu.json"
# published comparisons between pipeline schedules, held out: never fitted on
SCHEDULE_RUNS = DEV_RUNS.parent / "schedule_runs.json"
# measured steps of a stack none of ours is fitted on (nanotron's benchmark), held out: never fitted
HELDOUT_RUNS = DEV_RUNS.parent / "heldout_runs.json"

# Attention FLOPs per token of each per-token convention, as a multiple of L·N_h·H·s:
# 6 counts causal attention at half, 12 counts it whole, 0 leaves it out (the file's wording).
ATTENTION_PER_TOKEN = {
    "maxtext_2023": 6,
    "maxtext_oct2023": 12,
    "maxtext_early2023": 0,
    "llama3_causal_assumed": 6,
}
CONVENTIONS = (
    "megatron_eq3",
    "megatron_core_2024",
    *ATTENTION_PER_TOKEN,
    "step_time_s",
    "tokens_per_s",
    "tokens_per_s_per_chip",
    "sequences_per_s_per_chip",
)


# A case's stack as the file names it -> ours (MODEL.md §F.2). Megatron-LM before 2023 (the
# development set's, which give no year) did not fuse attention.
STACK_NAMES = {"torchtitan": "fsdp2", "megatron-deepspeed": "deepspeed"}


def stack_of(case: dict) -> str:
    """The stack a case ran, by our name (``STACK_NAMES``).

    Megatron-LM of 2022 or before (or of no year) is "megatron-lm-2021", which did not fuse
    attention.

    Parameters
    ----------
    case : dict
        One case of a measured-runs file, as ``read_cases`` returns it.

    Returns
    -------
    stack : str
        The stack's name in ``cost/stacks/``.
    """
    name = STACK_NAMES.get(case["stack"], case["stack"])
    if name == "megatron-lm" and case.get("year", 2022) <= 2022:
        return "megatron-lm-2021"
    return name


@record(eq=False)
class Run:
    """One published run: its four values for ``estimate`` and the step it measured [s].

    ``published`` is the source's outcome as the file gives it (kind, value, convention, mfu);
    ``case`` is the whole entry, with the source's assumptions.
    """

    id: str
    group: str
    source: str
    stack: str
    values: tuple  # (Cluster, Workload, Layout, Options)
    step_time: float  # measured seconds per step
    published: dict
    case: dict

    def __repr__(self) -> str:
        return f"Run({self.id!r}, {self.stack}, step_time={self.step_time:.4g} s)"


def load_runs(path: str | Path | None = None) -> list[Run]:
    """Every case of a measured-runs file as a ``Run``, in the file's order.

    Parameters
    ----------
    path : str or Path, optional
        A measured-runs file; None: the development set, ``DEV_RUNS``.

    Returns
    -------
    runs : list of Run
        One a case.

    Raises
    ------
    ValueError
        For a case whose published number has a convention not in ``CONVENTIONS``.
    """
    return [run_from_case(case) for case in read_cases(path)]


def read_cases(path: str | Path | None = None) -> list[dict]:
    """The raw cases of a measured-runs file (default: the development set, ``DEV_RUNS``).

    Parameters
    ----------
    path : str or Path, optional
        A measured-runs file; None: the development set, ``DEV_RUNS``.

    Returns
    -------
    cases : list of dict
        The file's ``cases``, as it holds them.

    Raises
    ------
    ValueError
        For a case whose published number has a convention not in ``CONVENTIONS``.
    """
    data = json.loads(Path(DEV_RUNS if path is None else path).read_text(encoding="utf-8"))
    unknown = {_convention(case) for case in data["cases"]} - set(CONVENTIONS)
    if unknown:
        raise ValueError(
            f"unknown published convention {sorted(unknown)[0]!r}; known: {', '.join(CONVENTIONS)}"
        )
    return data["cases"]


def run_from_case(case: dict) -> Run:
    """A ``Run`` from one case: its values and its step time.

    Parameters
    ----------
    case : dict
        One case of a measured-runs file, as ``read_cases`` returns it.

    Returns
    -------
    run : Run
        The case's four values (``values_from_case``) and its measured step
        (``seconds_per_step``) [s].
    """
    return Run(
        id=case["id"],
        group=case["group"],
        source=case["source"],
        stack=stack_of(case),
        values=values_from_case(case),
        step_time=seconds_per_step(case),
        published=case["published"],
        case=case,
    )


def values_from_case(case: dict) -> tuple[Cluster, Workload, Layout, Options]:
    """The four values as the case gives them; ``Options(mfu=None)`` asks for a predicted step
    with the case's own stack (``stack_of``), matmul dtype (bf16 unless it says fp8) and
    torch.compile (the stack's default, eager, unless it says it compiled). TP in a stack that
    always shards its norms over the sequence (torchtitan's) runs with sequence parallelism,
    whatever the case says.

    Mixed precision with Adam (``PRECISIONS["mixed-adam"]``) for every stack. A TPU case's slice
    is its ``mesh`` over ``pods`` pods; a GPU case's is ``chips`` GPUs in nodes of the chip's size.

    Parameters
    ----------
    case : dict
        One case of a measured-runs file, as ``read_cases`` returns it.

    Returns
    -------
    cluster : Cluster
        The chip preset, the slice and the pods.
    workload : Workload
        The model, the batch of ``global_batch_seqs`` sequences of ``seq_len`` [tokens], and the
        precision.
    layout : Layout
        The case's layout (``case_layout``).
    options : Options
        A predicted step on the case's stack, matmul dtype and torch.compile.

    References
    ----------
    .. [1] docs/MODEL.md §C.6 (the measured runs) and §F.2 (a stack whose TP always shards the
       sequence).
    .. [2] ``pytorch/torchtitan@238fa9953e4aec2a62582121564273d7cbb1e9f1,
       torchtitan/models/llama3/infra/parallelize.py`` (``apply_tp``: the norms
       ``SequenceParallel``).
    """
    chip = catalog.hardware(case["hardware"])
    if chip.is_gpu:
        cluster = Cluster(chip, gpu_slice(chips=case["chips"], node_size=chip.node_size), pods=1)
    else:
        cluster = Cluster(chip, tuple(int(n) for n in case["mesh"].split("x")), pods=case["pods"])
    seq_len = case["seq_len"]
    workload = Workload(
        catalog.model_from_json(case["model"]),
        batch=case["global_batch_seqs"] * seq_len,
        seq_len=seq_len,
        precision=PRECISIONS["mixed-adam"],
    )
    options = Options(
        mfu=None,
        stack=stack_of(case),
        matmul_dtype=case.get("dtype", "bf16"),
        torch_compile=case.get("compile"),  # absent: as the stack runs by default (eager)
        features=_features(case),
    )
    layout = case_layout(case["layout"])
    if REGISTRY[options.stack].tp_shards_sequence and layout.y > 1:  # the stack has no other TP
        layout = dataclasses.replace(layout, sequence_parallel=True)
    return cluster, workload, layout, options


def _features(case: dict) -> str | None:
    """The stack's features a case ran with ("none" for none); None where it does not say, the
    stack's defaults (MODEL.md §F.2)."""
    if "features" not in case:
        return None
    return ",".join(case["features"]) or "none"


def case_layout(k: dict) -> Layout:
    """A case's layout: its groups, ZeRO stage, recompute, schedule, and its microbatches (a count,
    or sequences each; one, no gradient accumulation, where the source names neither: the run as
    it ran, not the count the tool would choose); expert and context parallelism where it gives
    them (``ep``, ``etp``, ``cp``, ``cp_kind``, ``ep_overlap``; none otherwise), and the ends
    its pipeline split counts as layers or the first and the last stage's layers
    (``ends_as_layers``, ``first_stage_layers``, ``last_stage_layers``; an even split otherwise).

    Parameters
    ----------
    k : dict
        A case's ``layout`` entry: ``strategy``, ``fsdp`` (X), ``tp`` (Y), ``pp`` (Z), ``zero``,
        ``remat``, ``sequence_parallel``, ``schedule``, ``virtual_stages``, and optionally
        ``microbatches``, ``microbatch_seqs``, ``ep``, ``etp``, ``cp``, ``cp_kind``,
        ``ep_overlap``, ``ends_as_layers``, ``first_stage_layers``, ``last_stage_layers``.

    Returns
    -------
    layout : Layout
        The layout as the case gives it.
    """
    named = k.get("microbatches") is not None or k.get("microbatch_seqs") is not None
    return Layout(
        strategy=k["strategy"],
        x=k["fsdp"],
        y=k["tp"],
        z=k["pp"],
        zero=k["zero"],
        remat=k["remat"],
        sequence_parallel=k["sequence_parallel"],
        schedule=k["schedule"],
        virtual_stages=k["virtual_stages"],
        microbatches=k.get("microbatches") if named else 1,
        microbatch_seqs=k.get("microbatch_seqs"),
        ep=k.get("ep", 1),
        etp=k.get("etp"),
        cp=k.get("cp"),
        cp_kind=k.get("cp_kind", "ring"),
        ep_overlap=k.get("ep_overlap", False),
        ends_as_layers=k.get("ends_as_layers", "none"),
        first_stage_layers=k.get("first_stage_layers"),
        last_stage_layers=k.get("last_stage_layers"),
    )


def chips(case: dict) -> int:
    """Chips in the run: ``chips`` for a GPU case, the mesh times the pods for a TPU case.

    Parameters
    ----------
    case : dict
        One case of a measured-runs file, as ``read_cases`` returns it.

    Returns
    -------
    chips : int
        The chips of every pod [chips].
    """
    if case.get("chips") is not None:
        return int(case["chips"])
    return math.prod(int(n) for n in case["mesh"].split("x")) * int(case["pods"])


def global_tokens(case: dict) -> int:
    """Tokens per step, B·s.

    Parameters
    ----------
    case : dict
        One case of a measured-runs file, as ``read_cases`` returns it.

    Returns
    -------
    tokens : int
        The global batch, ``global_batch_seqs`` sequences of ``seq_len`` [tokens].
    """
    return case["global_batch_seqs"] * case["seq_len"]


def seconds_per_step(case: dict) -> float:
    """The published outcome in seconds per step, by the file's ``conventions``.

    - TFLOP/s per chip X under a FLOPs count: t = F_step / (N·X·1e12) (``flops_per_step``);
    - ``step_time_s``: t as published;
    - ``tokens_per_s``: t = B·s / X;
    - ``tokens_per_s_per_chip``: t = B·s / (X·N);
    - ``sequences_per_s_per_chip``: t = B / (X·N).

    Here X is the published number, N the chips of the run and B the global batch in sequences.

    Parameters
    ----------
    case : dict
        One case of a measured-runs file, as ``read_cases`` returns it.

    Returns
    -------
    seconds : float
        The measured step [s].

    Raises
    ------
    ValueError
        For a TFLOP/s number whose convention counts no FLOPs (``flops_per_step``).

    References
    ----------
    .. [1] docs/MODEL.md §C.6 (the file's conventions, each outcome in seconds per step).

    Examples
    --------
    >>> case = {"published": {"kind": "tokens_per_s_per_chip", "value": 5000}, "chips": 8,
    ...         "global_batch_seqs": 16, "seq_len": 8192}
    >>> seconds_per_step(case)  # 131,072 tokens at 40,000 tokens/s
    3.2768
    """
    convention, X = _convention(case), case["published"]["value"]
    if convention == "step_time_s":
        return float(X)
    if convention == "tokens_per_s":
        return global_tokens(case) / X
    if convention == "tokens_per_s_per_chip":
        return global_tokens(case) / (X * chips(case))
    if convention == "sequences_per_s_per_chip":
        return case["global_batch_seqs"] / (X * chips(case))
    return flops_per_step(case, convention) / (chips(case) * X * 1e12)


def flops_per_step(case: dict, convention: str) -> float:
    """FLOPs of one step as ``convention`` counts them.

    - ``megatron_eq3`` (Narayanan et al. 2021, Eq. 3, recompute counted):
      F = 96·B·s·L·D²·(1 + s/(6D) + V/(16·L·D)) (the paper's l, h), B the global batch in sequences;
    - per token (``ATTENTION_PER_TOKEN``), F = B·s·(6Ψ + a·L·N_h·H·s), with MaxText's
      Ψ = V·D + L·(4·D·N_h·H + 2·D·F + 2·D) + D, or for ``llama3_causal_assumed`` (the file
      leaves Ψ open) the model's parameters (MODEL.md §A.5).

    Parameters
    ----------
    case : dict
        One case of a measured-runs file, as ``read_cases`` returns it.
    convention : str
        "megatron_eq3", or a key of ``ATTENTION_PER_TOKEN``: "maxtext_2023" (causal attention
        at half, a = 6), "maxtext_oct2023" (whole, a = 12), "maxtext_early2023" (left out,
        a = 0), "llama3_causal_assumed" (a = 6).

    Returns
    -------
    flops : float
        The FLOPs of one step, every chip's [FLOP].

    Raises
    ------
    ValueError
        For a convention that counts no FLOPs (a time or a rate).

    References
    ----------
    .. [1] docs/MODEL.md §C.6 (the measured runs), §C.4 (conventions) and §A.5 (6Ψ a token).
    .. [2] D. Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
       Using Megatron-LM", SC 2021: Eq. 3, the FLOPs of an iteration.
    .. [3] J. Kaplan et al., "Scaling Laws for Neural Language Models", arXiv:2001.08361, 2020
       (6·N FLOPs a token).
    .. [4] ``AI-Hypercomputer/maxtext@76bd53b0f44caf989c88189afadeb1062f9254f0,
       MaxText/train.py`` (``calculate_training_tflops``: 6Ψ a token and 12·L·N_h·H·s of
       attention, halved for causality).
    .. [5] ``AI-Hypercomputer/maxtext@e47fa1b5d377ee1043e663f1414024f4d0f12df0,
       MaxText/train.py`` (``calculate_training_tflops``: 12·L·N_h·H·s, not halved).
    .. [6] ``AI-Hypercomputer/maxtext@281e04bf31557482e2aa6bb870897e7b7be47f38,
       MaxText/train.py`` (``train_loop``: 6Ψ a token, no attention).
    """
    m, s, B = case["model"], case["seq_len"], case["global_batch_seqs"]
    L, D, F, N_h, H, V = (m[k] for k in ("layers", "d_model", "d_ff", "heads", "head_dim", "vocab"))
    if convention == "megatron_eq3":
        return 96 * B * s * L * D**2 * (1 + s / (6 * D) + V / (16 * L * D))
    if convention == "megatron_core_2024":
        return _megatron_core_flops(case)
    if convention not in ATTENTION_PER_TOKEN:
        raise ValueError(
            f"convention {convention!r} counts no FLOPs; allowed: "
            f"{', '.join(ATTENTION_PER_TOKEN)}, "
            "megatron_eq3"
        )
    if convention == "llama3_causal_assumed":
        Psi = float(param_count(**{k: v for k, v in m.items() if k != "name"}).total)
    else:
        Psi = V * D + L * (4 * D * N_h * H + 2 * D * F + 2 * D) + D
    return B * s * (6 * Psi + ATTENTION_PER_TOKEN[convention] * L * N_h * H * s)


def _megatron_core_flops(case: dict) -> float:
    """Megatron-Core's ``num_floating_point_operations`` (r0.8.0): 3 x the forward, attention
    over the whole square, the vocabulary padded to 128·TP (MODEL.md §C.6)."""
    m, s, B = case["model"], case["seq_len"], case["global_batch_seqs"]
    L, h, F, a, d = (m[k] for k in ("layers", "d_model", "d_ff", "heads", "head_dim"))
    g, gated = m.get("kv_heads", a), m.get("gated", False)
    k = (m.get("moe") or {}).get("top_k", 1)
    pad = 128 * case["layout"]["tp"]
    V = -(-m["vocab"] // pad) * pad
    per_layer = (1 + g / a + s / h) * (a * d / h) + (F / h) * k * (1.5 if gated else 1.0)
    return 12 * B * s * L * h**2 * (per_layer + V / (2 * L * h))


def _convention(case: dict) -> str:
    """The published number's convention: named for TFLOP/s, else its kind (a time or a rate)."""
    published = case["published"]
    return published.get("convention") or published["kind"]


DEV_MEMORY = DEV_RUNS.with_name("dev_memory.json")
# measured peaks held out from development (docs/VALIDATION.md)
PUBLIC_MEMORY = DEV_RUNS.with_name("public_memory.json")
# The stack a source ran, read from its citation: the framework named there (MODEL.md §E.2).
FRAMEWORKS = {
    "torchtitan": "fsdp2",
    "Megatron": "megatron-lm",
    "DeepSpeed": "deepspeed",
    "MaxText": "maxtext",
}


@record(eq=False)
class MemoryCase:
    """One published peak or run/OOM statement (MODEL.md §E.3): its four values (the stack in the
    options), and what was measured: ``peak_bytes`` as the source counted it (``measures``,
    allocated or reserved; None for an outcome alone) on ``device`` ("busiest", or the one rank a
    source prints: "first" for stage 0's, "output" for the output layer's), and ``outcome``,
    "ran" or "oom"."""

    id: str
    values: tuple  # (Cluster, Workload, Layout, Options)
    peak_bytes: float | None
    measures: str | None
    outcome: str
    case: dict

    @property
    def device(self) -> str:
        return self.case.get("device", "busiest")

    @property
    def predicted(self) -> float:
        """The model's peak on the device measured, counted as the source counts it [bytes]."""
        allocated, reserved = evaluate(*self.values).peak.on(self.device)
        return float(reserved if self.measures == "reserved" else allocated)

    def __repr__(self) -> str:
        return f"MemoryCase({self.id!r}, {self.values[3].stack}, {self.outcome})"


def load_memory_cases(path: str | Path | None = None) -> list[MemoryCase]:
    """Every case of a measured-memory file (default: the development set, ``DEV_MEMORY``), in its
    order.

    Parameters
    ----------
    path : str or Path, optional
        A measured-memory file; None: the development set, ``DEV_MEMORY``.

    Returns
    -------
    cases : list of MemoryCase
        One a case: its four values (the stack named by its source) and what was measured.
    """
    data = json.loads(Path(DEV_MEMORY if path is None else path).read_text(encoding="utf-8"))
    return [_memory_case(case, data) for case in data["cases"]]


def _memory_case(case: dict, data: dict) -> MemoryCase:
    own = data.get("hardware", {}).get(case["hardware"])
    chip = (
        Chip(**{**own, "pod_shape": tuple(own["pod_shape"])})
        if own
        else catalog.hardware(case["hardware"])
    )
    shape = gpu_slice(chips=case["chips"], node_size=chip.node_size) if chip.is_gpu else None
    cluster = Cluster(chip, shape or slice_of(chip, case["chips"]), pods=1)
    seq_len = case["seq_len"]
    model = catalog.model_from_json({**case["model"], "dropout": _dropout(case)})
    workload = Workload(
        model,
        batch=case["global_batch_seqs"] * seq_len,
        seq_len=seq_len,
        precision=PRECISIONS[case.get("precision", "mixed-adam")],
    )
    layout = case_layout(case["layout"])
    source = data["sources"][case["group"]]["citation"]
    stack = case.get("stack") or next(
        name
        for word, name in FRAMEWORKS.items()
        if word.lower() in (source + case["source"]).lower()
    )
    published = case["published"]
    peak = (
        None
        if published["value"] is None
        else published["value"] * data["units"][published["unit"]]
    )
    options = Options(mfu=None, stack=stack, **case.get("options", {}))
    values = (cluster, workload, layout, options)
    return MemoryCase(case["id"], values, peak, published["measures"], published["outcome"], case)


def _dropout(case: dict) -> float:
    """The hidden dropout a case ran with: its own field, else what its assumptions state, else
    0."""
    if "dropout" in case:
        return float(case["dropout"])
    stated = re.search(r"dropout (0\.\d+)", case.get("assumptions", ""))
    return float(stated.group(1)) if stated else 0.0
