"""The table of fields: every field a user sets, one row each, and how its text is read."""

from __future__ import annotations

import dataclasses
import json

from .. import catalog
from ..catalog import name_of
from ..cost.calibrate import profile_from_json
from ..cost.ground.checks import Switch
from ..cost.ground.refusals import refuse
from ..cost.hardware.mesh import ROLES, parse_slice
from ..cost.hardware.slice_names import NamedSlice, is_slice_name, named_slice
from ..cost.hardware.slices import slice_for
from ..cost.schedules import SCHEDULES
from ..cost.stacks import STACKS
from ..cost.step.pipeline import ENDS_AS_LAYERS
from ..cost.strategies import STRATEGIES
from ..cost.transformer.context import CP_KINDS
from ..cost.transformer.shapes import Precision
from ..cost.values import (
    GRAD_DTYPES,
    MATMUL_DTYPES,
    MAX_BATCH,
    MAX_TOKENS,
    MOMENT_DTYPES,
    OPTIMIZER_IMPLS,
    WEIGHT_DTYPES,
)
from ..presets import HARDWARE, MODELS, PRECISIONS
from ..text import units
from .field import Field, Flag


def _name(table: dict):
    """A preset's name for the command line; None for one of your own (no flag says it)."""
    return lambda value: name_of(value, table)


def _named(table: dict):
    """A preset saved by its name; one of your own by its fields."""
    return lambda value: name_of(value, table) or dataclasses.asdict(value)


def _preset(find, read):
    """A preset's name or the preset itself (``find``), or one of your own as JSON (``read``)."""
    return lambda name, value: read(value) if isinstance(value, dict) else find(value)


def _file(read):
    """A flag that names a file: read it."""
    return lambda text, flag: read(text)


def _count(value) -> str:
    """A count for the command line: 4194304, not 4194304.0; 1.5e+06 stays exact."""
    value = float(value)
    return str(int(value)) if value.is_integer() and abs(value) < 2**63 else repr(value)


def _on_off(value) -> str:
    return "on" if value else "off"


def _shape(name: str, value):
    """Axis lengths as a tuple of whole numbers, or None for the chip's default slice."""
    return None if value is None else parse_slice(value)


def _roles(name: str, value):
    ok = isinstance(value, (tuple, list)) and len(value) <= 4 and all(r in ROLES for r in value)
    if not ok:
        raise refuse(
            name, "one of 'x', 'y', 'z' per slice axis, or empty for the automatic rule", value
        )
    return tuple(value)


def _profile(name: str, value):
    """An efficiency profile, or its fields as a JSON object."""
    if isinstance(value, dict):
        return profile_from_json(json.dumps(value))
    return value


def _profile_file(path: str):
    return profile_from_json(catalog.read_text(path))


def _fraction(text: str, field: str) -> float:
    value = units.parse_count(text, field)
    if value > 1:
        raise ValueError(f"{field} must be in (0, 1], such as 0.4; got {text!r}")
    return value


def _gigabytes(text: str, field: str) -> float:
    value = units.parse_count(text, field) * 1e9
    if not value < 1e30:
        raise ValueError(f"{field} must be a number of GB below 1e21; got {text!r}")
    return value


def _or_zero(text: str, field: str) -> float:
    """A count as ``COUNT`` reads it, or 0 (no failures, an instant restart)."""
    if text.strip() in ("0", "0.0"):
        return 0.0
    return units.parse_count(text, field)


def _gb_per_s(text: str, field: str) -> float:
    return units.parse_count(text, field) * 1e9


def _on(text: str, flag: str) -> bool:
    """A flag's word for a switch: ``--flash-attention on`` is True."""
    return {"on": True, "off": False}[text]


COUNT, WHOLE = units.parse_count, units.parse_whole


def _tokens_to(high: float):
    """A count of tokens as ``COUNT`` reads it, refused beyond the value's own limit: a negative
    or absurd count is told the limit it has."""
    return lambda text, flag: units.parse_count(text, flag, high=high)


def _batch(text: str, flag: str) -> float:
    """A batch of tokens, K, M and G powers of two (``units.parse_batch``), at most the batch's
    own limit."""
    return units.parse_batch(text, flag, high=MAX_BATCH)


def _mesh(text: str, flag: str) -> tuple[int, ...]:
    """A slice's shape (16x16x16), or its name as Google gives it (v5p-512), which keeps its chip
    (``slice_names.NamedSlice``)."""
    if is_slice_name(text):
        return named_slice(text, catalog.hardware, flag)
    return units.parse_mesh(text, flag)


def _slice_chip(shape) -> dict:
    """The chip a slice's name gives: v5p-512 is TPU v5p's."""
    return {"hardware": shape.chip} if isinstance(shape, NamedSlice) else {}


def _chips(chips: int, hardware) -> tuple[int, ...]:
    """``--chips N``: whole nodes of a GPU preset, or a TPU's slice of N chips."""
    return slice_for(catalog.hardware(hardware), chips)


def _data_axis(dp: int, state: dict) -> int:
    """``--dp``: the frameworks' data parallelism, without CP; X holds both."""
    return dp * (state.get("cp") or 1)


FIELDS_TABLE = (
    # The cluster.
    Field("hardware", "cluster.chip", "a chip preset", flag="--hardware", default="tpu-v5p",
          choices=tuple(HARDWARE), coerce=_preset(catalog.hardware, catalog.chip_from_json),
          also=(Flag("--hardware-file", _file(catalog.chip_from_json), "F.json",
                     "your own chip as JSON"),),
          words=_name(HARDWARE), dump=_named(HARDWARE), label="Hardware"),
    Field("slice_shape", "cluster.slice_shape",
          "slice shape such as 16x16x16, or a TPU slice's name such as v5p-512 (v4 and v5p names"
          " count TensorCores, two a chip; v5e and v6e names count chips) (default: a TPU's full"
          " pod, 1,024 GPUs)", flag="--mesh", parse=_mesh, implies=_slice_chip,
          coerce=_shape, words=units.mesh, absent_ok=True,
          also=(Flag("--chips", WHOLE, None, "a pod's chips (all of them, with one pod): a GPU"
                     " preset's nodes, or a TPU slice of that many chips in Google's shape",
                     resolve=lambda chips, state: _chips(chips, state["hardware"])),)),
    Field("pods", "cluster.pods", "pods joined by DCN", flag="--pods", parse=WHOLE,
          label="Pods (DCN)"),
    Field("fsdp_pods", "layout.fsdp_pods", "the pods each FSDP group spans over DCN, ZeRO-3"
          " across them (MaxText's dcn_fsdp_parallelism); the other pods are data replicas"
          " (default 1: every pod a replica)", flag="--fsdp-pods", metavar="F", parse=WHOLE,
          default=1, since=16, label="FSDP over pods"),
    Field("pp_pods", "layout.pp_pods", "the pods each pipeline spans over DCN, --pp stages in"
          " each (MaxText's dcn_pipeline_parallelism); the other pods are data replicas (default"
          " 1: whole pipelines in each pod)", flag="--pp-pods", metavar="S", parse=WHOLE,
          default=1, since=17, commands=("estimate",), label="PP over pods"),
    Field("tp_pods", "layout.tp_pods", "the pods each TP group spans over DCN, --tp chips in"
          " each (MaxText's dcn_tensor_parallelism; slow: TP's traffic crosses DCN every layer);"
          " the other pods are data replicas (default 1: whole TP groups in each pod)",
          flag="--tp-pods", metavar="T", parse=WHOLE, default=1, since=18,
          commands=("estimate",), label="TP over pods"),
    Field("ep_pods", "layout.ep_pods", "the pods each EP group spans over DCN, --ep chips in"
          " each (MaxText's dcn_expert_parallelism; the all-to-alls cross DCN); every pod stays"
          " a data replica (default 1: whole EP groups in each pod)", flag="--ep-pods",
          metavar="E", parse=WHOLE, default=1, since=18, commands=("estimate",),
          label="EP over pods"),
    Field("cp_pods", "layout.cp_pods", "the pods each CP group spans over DCN, --cp chips in"
          " each (MaxText's dcn_context_parallelism; keys and values cross DCN); every pod stays"
          " a data replica (default 1: whole CP groups in each pod)", flag="--cp-pods",
          metavar="C", parse=WHOLE, default=1, since=18, commands=("estimate",),
          label="CP over pods"),
    # The workload.
    Field("model", "workload.model", "a model preset", flag="--model", choices=tuple(MODELS),
          start="llama-2-13b", coerce=lambda name, value: catalog.model(value),
          also=(Flag("--model-file", _file(catalog.model_from_json), "F.json",
                     "your own model as JSON"),),
          words=_name(MODELS), dump=_named(MODELS), label="Model"),
    Field("batch", "workload.batch", "global batch in tokens, K, M and G powers of two: 4M"
          " (4,194,304 tokens: 512 sequences of 8,192), 4e6 or 4194304", flag="--batch",
          parse=_batch, start=2.0**24, words=_count, label="Batch"),
    Field("seq_len", "workload.seq_len", "sequence length", flag="--seq-len", parse=WHOLE,
          default=4096, label="Seq length"),
    Field("precision", "workload.precision", "bytes per parameter policy (book: 10)",
          flag="--precision", default="book", choices=tuple(PRECISIONS),
          coerce=_preset(catalog.precision, lambda fields: Precision(**fields)),
          words=_name(PRECISIONS), dump=_named(PRECISIONS), label="Precision"),
    Field("tokens", "workload.tokens", "training tokens, such as 15T: reports time to train",
          flag="--tokens", parse=_tokens_to(MAX_TOKENS), start=2e12, words=_count,
          label="Train on"),
    # The layout.
    Field("strategy", "layout.strategy", "the parallelism strategy", flag="--strategy",
          commands=("estimate",), choices=tuple(STRATEGIES), label="Strategy",
          choice_labels={name: s.label for name, s in STRATEGIES.items()}),
    Field("optimal_split", None, "FSDP + TP at its fastest legal split (off: x and y by hand)",
          default=True, check=Switch(), label="Fastest split"),
    Field("x", "layout.x", "the data axis X, its CP and EP chips included", flag="--fsdp",
          metavar="X", parse=WHOLE,
          also=(Flag("--dp", WHOLE, "DP", "data parallelism as Megatron-LM and torchtitan count"
                     " it, DP x CP x TP x PP = chips: X = DP x CP, CP 1 unless given",
                     resolve=_data_axis, implies={"cp": 1}),)),
    Field("y", "layout.y", "tensor-parallel degree", flag="--tp", metavar="Y", parse=WHOLE,
          default=1),
    Field("z", "layout.z", "pipeline stages", flag="--pp", metavar="Z", parse=WHOLE, default=1,
          label="PP stages Z"),
    Field("microbatches", "layout.microbatches", "microbatches, pipelined or accumulated"
          " (default: whole sequences each, the fastest count that fits)",
          flag="--microbatches", parse=WHOLE, label="Microbatches"),
    Field("axis_roles", "layout.axis_roles", "the group each slice axis is given to, by hand",
          default=(), check=_roles),
    Field("zero", "layout.zero", "ZeRO stage on the data axis (dp, tp: 0; fsdp, fsdp+tp: 3)",
          flag="--zero", parse=lambda text, flag: int(text), choices=(0, 1, 2, 3), label="ZeRO"),
    Field("ep", "layout.ep",
          "expert parallelism: EP chips of the data axis split a MoE model's experts",
          flag="--ep", metavar="EP", parse=WHOLE, since=2, label="EP (experts)"),
    Field("etp", "layout.etp",
          "expert tensor parallelism, as Megatron-Core counts it: 1 gives each chip whole"
          " experts, the EP group folded over TP x the data axis (default: the experts split over"
          " TP as the rest of the layer)",
          flag="--etp", metavar="ETP", parse=WHOLE, since=6, label="EP over TP"),
    Field("cp", "layout.cp", "context parallelism: CP chips of the data axis split each sequence",
          flag="--cp", metavar="CP", parse=WHOLE, since=2, label="CP (sequence)"),
    Field("cp_kind", "layout.cp_kind", "how CP passes keys and values", flag="--cp-kind",
          choices=CP_KINDS, since=2, label="CP passes",
          choice_labels={"ring": "a ring", "all-gather": "an all-gather",
                         "ulysses": "Ulysses all-to-all"}),
    Field("schedule", "layout.schedule", "pipeline schedule", flag="--schedule",
          choices=tuple(SCHEDULES), label="Schedule",
          choice_labels={name: s.label for name, s in SCHEDULES.items()}),
    Field("virtual_stages", "layout.virtual_stages",
          "virtual stages per device, with an interleaved schedule", flag="--virtual-stages",
          parse=WHOLE, label="virtual stages"),
    Field("ends_as_layers", "layout.ends_as_layers",
          "the ends of the model that take a layer's place in the pipeline split: the first"
          " stage holds a layer fewer for the embedding, the last one for the loss (Megatron-LM's"
          " --account-for-embedding-in-pipeline-split, --account-for-loss-in-pipeline-split)",
          flag="--ends-as-layers", choices=tuple(ENDS_AS_LAYERS), since=15,
          label="PP ends",
          choice_labels={"none": "none", "embedding": "the embedding", "loss": "the loss",
                         "both": "embedding and loss"}),
    Field("first_stage_layers", "layout.first_stage_layers",
          "the first pipeline stage's layers, all its virtual stages together; the stages between"
          " the first and the last split the rest (Megatron-LM's"
          " --decoder-first-pipeline-num-layers)", flag="--first-stage-layers", parse=WHOLE,
          since=15),
    Field("last_stage_layers", "layout.last_stage_layers",
          "the last pipeline stage's layers (Megatron-LM's --decoder-last-pipeline-num-layers)",
          flag="--last-stage-layers", parse=WHOLE, since=15),
    Field("sequence_parallel", "layout.sequence_parallel",
          "shard LayerNorm and dropout activations over TP", flag="--sequence-parallel",
          switch=True, label="sequence parallel"),
    Field("ep_overlap", "layout.ep_overlap", "pair each forward with another microbatch's"
          " backward, whose compute hides the expert all-to-alls (megatron-lm; one stage or"
          " interleaved, no full recompute)", flag="--ep-overlap", switch=True, since=10,
          label="EP overlap"),
    Field("microbatch_seqs", "layout.microbatch_seqs", "sequences per microbatch",
          flag="--microbatch-seqs", parse=WHOLE, commands=("estimate",), since=4),
    Field("remat", "layout.remat", "recompute policy: checkpoints (the chapter's count), none,"
          " selective or full, or a stack's own (MaxText's remat_policy values, Megatron-LM's"
          " selective:<modules> or full:<uniform|block>:<N>, torchtitan's selective:op or"
          " selective:<N>)", flag="--remat", metavar="POLICY", label="Recompute"),
    Field("mx", "layout.mx", "override: mesh axes the X group spans", flag="--mx", parse=COUNT,
          commands=("estimate",), since=4),
    Field("my", "layout.my", "override: mesh axes the Y group spans", flag="--my", parse=COUNT,
          commands=("estimate",), since=4),
    Field("wraparound", "layout.wraparound",
          "override: every group a ring (on) or none (off); default the chip's rule",
          flag="--wraparound", parse=_on, choices=("on", "off"), words=_on_off, since=4),
    # How the numbers are read.
    Field("mfu", "options.mfu",
          "take this utilisation as given, the chapter's model (default: predict the step)",
          flag="--mfu", parse=_fraction, label="MFU"),
    Field("measured_step_time", "options.measured_step_time",
          "calibrate: report the MFU and HFU a measured step time implies",
          flag="--measured-step-time", metavar="SECONDS", parse=COUNT, commands=("estimate",),
          label="Measured step"),
    Field("profile", "options.profile",
          "efficiency profile for the predicted step (default: the chip's)", flag="--profile",
          metavar="FILE.json", parse=_file(_profile_file), coerce=_profile,
          words=lambda v: None, dump=dataclasses.asdict, absent_ok=True),
    Field("attention_flops", "options.attention_flops",
          "count attention FLOPs, 12·L·T·N_h·H a token", flag="--attention-flops", switch=True,
          label="count attention FLOPs"),
    Field("ring_factor", "exact.ring_factor", "a ring over n chips moves (n-1)/n of the array",
          flag="--ring-factor", switch=True, label="ring factor (n-1)/n"),
    Field("halve_without_wrap", "exact.halve_without_wrap",
          "halve a TPU group's bandwidth without a ring", flag="--halve-without-wraparound",
          switch=True, label="halve bandwidth without wraparound"),
    Field("latency", "exact.latency", "seconds per collective", flag="--latency",
          metavar="SECONDS", parse=COUNT, label="latency (µs)"),
    Field("overhead_bytes", "options.overhead_bytes", "runtime memory per chip, GB",
          flag="--overhead-gb", parse=_gigabytes, words=lambda v: repr(v / 1e9),
          label="overhead (GB)"),
    Field("fits_below", "options.fits_below", "share of HBM a layout may fill, headroom for"
          " the peak's error (1 for none)",
          flag="--fits-below", parse=_fraction, label="fits below"),
    Field("stack", "options.stack", "the software stack: how fast it runs the step and what it"
          " keeps in memory (default: the chip's)",
          flag="--stack", choices=tuple(STACKS), since=3, label="Stack"),
    Field("matmul_dtype", "options.matmul_dtype", "the layers' linear matmuls in bf16 or fp8"
          " (attention and the output layer stay bf16; fp8 on H100, H200, B200, GB200)",
          flag="--matmul-dtype", choices=MATMUL_DTYPES, since=7, label="Matmuls"),
    Field("grad_dtype", "options.grad_dtype", "what gradients are kept and reduced in (default:"
          " the stack's; Megatron-LM's --grad-reduce-in-bf16 is bf16)", flag="--grad-dtype",
          choices=GRAD_DTYPES, since=12, label="Grads"),
    Field("weight_dtype", "options.weight_dtype", "what the weights are kept in (default: the"
          " stack's; MaxText's weight_dtype, float32 by default)", flag="--weight-dtype",
          choices=WEIGHT_DTYPES, since=13, label="Weights"),
    Field("fp8_params", "options.fp8_params", "keep the layers' weights in fp8, no bf16 copy"
          " (Megatron-LM's --fp8-param-gather; with fp8 matmuls)", flag="--fp8-params",
          switch=True, since=12, label="fp8 weights"),
    Field("moment_dtype", "options.moment_dtype", "what Adam's two moments are kept in (default"
          " fp32; Megatron-LM's --exp-avg-dtype and --exp-avg-sq-dtype)", flag="--moment-dtype",
          choices=MOMENT_DTYPES, since=13, label="Adam moments"),
    Field("swiglu_input_fp8", "options.swiglu_input_fp8", "keep the SwiGLU's input in fp8 for"
          " the backward (Megatron-Core's activation_func_fp8_input_store; DeepSeek-V3's)",
          flag="--swiglu-input-fp8", switch=True, since=13, label="SwiGLU in fp8"),
    Field("optimizer_impl", "options.optimizer_impl", "how Adam's step runs: fused (default;"
          " Megatron-LM's, DeepSpeed's, torchtitan's) or foreach (PyTorch's AdamW without"
          " fused=True: a temporary as large as the optimizer shard)", flag="--optimizer-impl",
          choices=OPTIMIZER_IMPLS, since=13, label="Adam kernel"),
    Field("accumulate_unsharded", "options.accumulate_unsharded", "accumulate microbatches'"
          " gradients unsharded, reduce-scattered once at the last (PyTorch FSDP's no_sync, as"
          " the Hugging Face Trainer accumulates)", flag="--accumulate-unsharded", switch=True,
          since=13, label="no_sync"),
    Field("loss_chunks", "options.loss_chunks", "the chunks the output layer and the loss run in"
          " over the sequence (torchtitan's ChunkedLossWrapper: 8; default 1)",
          flag="--loss-chunks", parse=WHOLE, since=13, label="Loss chunks"),
    Field("kv_caches_held", "options.kv_caches_held", "the steps' outputs, each a KV cache and"
          " fp32 logits, the training loop holds: 1, a Hugging Face model's use_cache in a loop"
          " that keeps its outputs; 2, a loop that rebinds outputs = model(**batch), holding the"
          " last step's too (default 0)", flag="--kv-caches-held",
          parse=lambda text, flag: int(text), choices=(0, 1, 2), since=19, label="KV caches held"),
    Field("features", "options.features", "the stack's features that hide a communication"
          " under compute, comma-separated, or none (Megatron-LM's overlap_grad_reduce,"
          " overlap_param_gather, tp_comm_overlap, overlap_p2p_comm; torchtitan's async_tp;"
          " DeepSpeed's overlap_comm; default: the release's)",
          flag="--features", since=14, label="Overlaps"),
    Field("flash_attention", "options.flash_attention", "off keeps the s x s attention scores,"
          " in memory and in the step (default: the stack's, on)", flag="--flash-attention",
          choices=("on", "off"), parse=_on, words=_on_off, since=3, label="Flash attn"),
    Field("torch_compile", "options.torch_compile", "on runs the layers compiled: fused"
          " memory-bound kernels, fewer activations kept (fsdp2, deepspeed, llm-foundry;"
          " default: the stack's, off)", flag="--torch-compile",
          choices=("on", "off"), parse=_on, words=_on_off, since=8, label="Compile"),
    Field("compile_loss", "options.compile_loss", "on compiles the loss: 4 bytes a logit, not"
          " 12 (torchtitan's compile.components with loss; default: with the layers; off: eager,"
          " as torchtitan before April 2025)", flag="--compile-loss", choices=("on", "off"),
          parse=_on, words=_on_off, since=13, label="Compile loss"),
    # The whole run, with the tokens (MODEL.md §H).
    Field("failure_rate", "options.failure_rate", "interruptions per chip-hour, for the run's"
          " goodput (default 1.97e-5: Llama 3's 419 in 54 days on 16,384 H100s)",
          flag="--failure-rate", parse=_or_zero, since=11, label="Failures/chip-h"),
    Field("checkpoint_bw", "options.checkpoint_bw", "each chip's checkpoint write bandwidth, GB/s"
          " (default 0.122: Llama 3's storage, 2 TB/s for 16K GPUs)", flag="--checkpoint-gbps",
          metavar="GB/s", parse=_gb_per_s, words=lambda v: repr(v / 1e9), since=11,
          label="Checkpoint GB/s"),
    Field("restart_time", "options.restart_time", "seconds a restart takes after a failure"
          " (default 600)", flag="--restart-time", metavar="SECONDS", parse=_or_zero, since=11,
          label="Restart (s)"),
    Field("checkpoint_interval", "options.checkpoint_interval", "seconds between checkpoints"
          " (default: Young/Daly's, the square root of 2 x a write x the time between failures)",
          flag="--checkpoint-interval", metavar="SECONDS", parse=COUNT, since=11,
          label="Checkpoint every (s)"),
    Field("pue", "options.pue", "the data center's power usage effectiveness, for the energy"
          " (default 1.1)", flag="--pue", parse=COUNT, since=11, label="PUE"),
    Field("chip_power", "options.chip_power", "watts a chip draws (default: its rated power;"
          " TPUs publish none)", flag="--chip-power", metavar="WATTS", parse=COUNT, since=11,
          label="Chip power (W)"),
    Field("price_per_chip_hour", "options.price_per_chip_hour", "the price of a chip-hour, for"
          " the run's cost (no default)", flag="--price-per-chip-hour", metavar="PRICE",
          parse=_or_zero, since=11, label="Price/chip-h"),
)  # fmt: skip
FIELDS: dict[str, Field] = {f.name: f for f in FIELDS_TABLE}
# The saved scenario's version: each field's ``since`` at most, 5 where CP None came in (older
# scenarios saved CP 1, then the default, for "none asked") and 9 where the zero-bubble and DualPipe
# schedules came in (a reader before them cannot run a scenario that names one); 10 brought
# ``ep_overlap``, 11 the whole run's inputs.
VERSION = max(9, *(f.since for f in FIELDS_TABLE))
READABLE = tuple(range(1, VERSION + 1))
# the scenario's keys, in the JSON's order
SCENARIO = tuple(f.name for f in FIELDS_TABLE if f.since)
