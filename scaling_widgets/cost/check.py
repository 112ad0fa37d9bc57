"""One check of a layout, used by ``estimate``, the scenario and the CLI alike.

``inputs`` checks every value on its own (types, ranges, names) and fills in the defaults;
``possible`` checks a placed layout against the physics: a data replica needs a whole sequence
per microbatch, TP must divide the attention heads, the layers must split evenly over the
pipeline's (virtual) stages. Each refusal is an ``InputError`` that names the field, the value
and what is allowed.
"""

from __future__ import annotations

import dataclasses
import math

import numpy as np

from . import _checks
from ._checks import refuse
from .activations import SCHEDULES
from .context import CP_KINDS
from .inputs import Chip, Model, Precision
from .layer import STRATEGIES, Exactness
from .mesh import ROLES, check_fits_pod
from .nodes import check_gpu_slice
from .profiles import STACKS
from .steptime import Profile
from .training import REMAT_POLICIES
from .values import Cluster, Layout, Options, Workload

MAX_CHIPS = 2**22  # all pods together: twenty times the largest cluster built by 2026
STRATEGY_ZERO = {"dp": 0, "tp": 0, "fsdp": 3, "fsdp+tp": 3}  # each strategy's own ZeRO stage
# The fields that may be arrays, one value per layout: together they broadcast to the layouts' shape.
PER_LAYOUT = ("batch", "tokens", "pods", "x", "y", "z", "zero", "microbatches", "microbatch_seqs", "schedule",
              "virtual_stages", "remat", "mx", "my", "mfu", "measured_step_time", "overhead_bytes",
              "fits_below", "ep", "cp")  # fmt: skip


def inputs(cluster: Cluster, workload: Workload, layout: Layout, options: Options):
    """The four values, each field checked, with the defaults filled in (slice, ZeRO stage)."""
    if getattr(options, "attention_flops", False) is True and workload.seq_len is None:
        raise refuse("seq_len", "given to count attention FLOPs (12·L·T·N_h·H a token)", None)
    checked = _cluster(cluster), _workload(workload), _layout(layout, workload.seq_len), _options(options)
    _broadcast(checked)
    return checked


def _broadcast(values) -> None:
    """Refuse arrays of layouts that do not broadcast together, naming the first that does not."""
    shape = ()
    for name in PER_LAYOUT:
        if name == "mfu" and values[3].measured_step_time is not None:
            continue  # the measured step replaces it: it is not read
        value = np.shape(next(getattr(v, name) for v in values if hasattr(v, name)))
        try:
            shape = np.broadcast_shapes(shape, value)
        except ValueError:
            raise refuse(name, f"one value, or an array that broadcasts with the shape {shape} of the others",
                         f"an array of shape {value}") from None  # fmt: skip


def _kind(name: str, value, kind) -> None:
    if not isinstance(value, kind):
        article = "an" if kind.__name__[0] in "AEIOU" else "a"
        raise refuse(name, f"{article} {kind.__name__} (see scaling_widgets.presets)", repr(value))


def _cluster(c: Cluster) -> Cluster:
    _kind("chip", c.chip, Chip)
    chip = c.chip
    if c.slice_shape is not None and not isinstance(c.slice_shape, (tuple, list)):
        raise refuse("slice_shape", "a list of axis lengths such as (16, 16, 16)", c.slice_shape)
    check = check_gpu_slice if chip.is_gpu else check_fits_pod
    shape = check(chip.default_slice if c.slice_shape is None else c.slice_shape, chip.pod_shape)
    largest = MAX_CHIPS // math.prod(shape)
    pods = _checks.whole("pods", c.pods)
    if np.any(pods > largest) or pods.size == 0:
        raise refuse("pods", f"a whole number from 1 to {largest:,} (at most {MAX_CHIPS:,} chips in all)", repr(c.pods))
    return Cluster(chip, tuple(shape), int(pods) if pods.ndim == 0 else pods)


def _one_whole(name: str, value, largest: int) -> int:
    a = _checks.whole(name, value)
    if a.ndim or a > largest:
        raise refuse(name, f"one whole number from 1 to {largest:,}", repr(value))
    return int(a)


def _workload(w: Workload) -> Workload:
    _kind("model", w.model, Model)
    _kind("precision", w.precision, Precision)
    batch = _checks.positive("batch", w.batch)
    seq_len = w.seq_len
    if seq_len is not None:
        seq_len = _one_whole("seq_len", seq_len, 2**24)  # 16M tokens: beyond any context trained
    tokens = None if w.tokens is None else _checks.positive("tokens", w.tokens)
    return Workload(w.model, batch, seq_len, w.precision, tokens)


def _layout(k: Layout, seq_len) -> Layout:
    strategy = _checks.one_of("strategy", k.strategy, STRATEGIES)
    zero = STRATEGY_ZERO[strategy] if k.zero is None else _scalar(_checks.whole("zero", k.zero, minimum=0))
    if np.size(zero) == 0 or np.any(np.asarray(zero) > 3):
        raise refuse("zero", "a ZeRO stage 0, 1, 2 or 3 (or an array of them)", k.zero)
    if strategy == "tp" and np.any(np.asarray(zero) > 0):
        raise refuse("zero", "0 for strategy 'tp': a ZeRO stage shards over the data axis, which TP has not", zero)
    remat = _checks.each_one_of("remat", k.remat, REMAT_POLICIES)
    schedule = _checks.each_one_of("schedule", k.schedule, SCHEDULES)
    v = _scalar(_checks.whole("virtual_stages", k.virtual_stages))
    if np.any((np.asarray(v) != 1) & (np.asarray(schedule) != "interleaved")):
        raise refuse("virtual_stages", "1 unless the schedule is 'interleaved'", f"{v} with {schedule!r}")
    needs_seq = np.any(remat != "checkpoints") or k.microbatch_seqs is not None
    if needs_seq and seq_len is None:
        raise refuse("seq_len", "given for microbatch sizes or a recompute policy other than 'checkpoints'", None)
    if k.microbatch_seqs is not None and k.microbatches is not None:
        raise refuse("microbatch_seqs", "left out when microbatches is given (one follows from the other)", "both")
    if k.microbatch_seqs is not None:  # a microbatch holds whole sequences
        _checks.whole("microbatch_seqs", k.microbatch_seqs)
    if not isinstance(k.sequence_parallel, (bool, np.bool_)):
        raise refuse("sequence_parallel", "true or false", k.sequence_parallel)
    if k.axis_roles is not None:
        roles = k.axis_roles
        if not isinstance(roles, (tuple, list)) or any(r not in ROLES for r in roles):
            raise refuse("axis_roles", "a list of 'x', 'y' or 'z', one per slice axis", roles)
        if not (k.x is None and k.y is None and k.z is None):
            raise refuse("axis_roles", "left out when x, y or z is given (the roles set them)", tuple(roles))
    for name in ("x", "y", "z", "microbatches"):
        if getattr(k, name) is not None:
            _checks.whole(name, getattr(k, name))
    ep, cp = _scalar(_checks.whole("ep", k.ep)), _scalar(_checks.whole("cp", k.cp))
    cp_kind = _scalar(_checks.each_one_of("cp_kind", k.cp_kind, CP_KINDS))
    if np.any(np.asarray(cp) > 1) and seq_len is None:
        raise refuse("seq_len", "given to split sequences over chips (context parallelism)", None)
    for name in ("mx", "my"):
        if getattr(k, name) is not None:
            _checks.positive(name, getattr(k, name))
    if k.wraparound is not None and not isinstance(k.wraparound, (bool, np.bool_)):
        raise refuse("wraparound", "true, false or None (the chip's rule)", k.wraparound)
    return dataclasses.replace(
        k, zero=zero, remat=_scalar(remat), schedule=_scalar(schedule), virtual_stages=v, ep=ep, cp=cp, cp_kind=cp_kind
    )


def _options(o: Options) -> Options:
    if o.profile is not None:
        _kind("profile", o.profile, Profile)
    if o.flash_attention is not None and not isinstance(o.flash_attention, (bool, np.bool_)):
        raise refuse("flash_attention", "true, false or None (the stack's)", repr(o.flash_attention))
    if o.stack is not None:
        _checks.one_of("stack", o.stack, tuple(STACKS))
    if o.measured_step_time is not None:
        _checks.positive("measured_step_time", o.measured_step_time)
    elif o.mfu is not None:  # None: the step is predicted (SPEC C)
        _checks.fraction("mfu", o.mfu)
    _kind("exact", o.exact, Exactness)
    _checks.non_negative("latency", o.exact.latency)
    _checks.non_negative("overhead_bytes", o.overhead_bytes)
    fits_below = _checks.fraction("fits_below", o.fits_below)
    for name in ("attention_flops",):
        if not isinstance(getattr(o, name), (bool, np.bool_)):
            raise refuse(name, "true or false", getattr(o, name))
    return dataclasses.replace(o, fits_below=_scalar(fits_below))  # an array, if a list was given


def runs(
    *, model: Model, seq_len, batch, pods, x, y, z, virtual_stages, microbatches, ep=1, cp=1, cp_kind="ring"
) -> dict:  # fmt: skip
    """Which layouts can run, rule by rule: name -> boolean array (SPEC A.3, A.6).

    - "sequences": a data replica gets at least one whole sequence (one token without
      ``seq_len``) per microbatch: B / (T·X·P·m) >= 1, its CP chips sharing each sequence:
      B·CP / (T·X·P·m) >= 1;
    - "heads": TP divides the attention heads, and the KV heads divide it or it divides them
      (KV heads fewer than Y are replicated Y/K times, as Megatron-LM does);
    - "stages": every (virtual) stage gets a layer: Z·v ≤ L (uneven stages are charged by the
      busiest, ``pipeline.busiest_stage_layers``);
    - "experts": EP divides the data axis X and the experts E (a dense model: EP = 1; SPEC D.2);
    - "context": CP divides the data axis and the sequence, and under Ulysses the KV heads of
      each TP shard (SPEC D.3).
    """
    T = 1 if seq_len is None else seq_len
    H, K = model.heads, model.kv_heads
    E, EP, CP = (1 if model.moe is None else model.moe.experts), np.asarray(ep), np.asarray(cp)
    heads_per_shard = np.maximum(K // np.asarray(y), 1)
    return {
        "sequences": np.asarray(batch) * CP / (T * np.asarray(x) * pods) >= microbatches,
        "heads": (H % np.asarray(y) == 0) & ((np.asarray(y) % K == 0) | (K % np.asarray(y) == 0)),
        "stages": np.asarray(z) * virtual_stages <= model.layers,
        "experts": (np.asarray(x) % EP == 0) & (E % EP == 0),
        "context": (np.asarray(x) % CP == 0) & (T % CP == 0) & ((cp_kind != "ulysses") | (heads_per_shard % CP == 0)),
    }


def possible(
    *, model: Model, seq_len, batch, pods, x, y, z, virtual_stages, microbatches, given: Layout, ep=1, cp=1,
    cp_kind="ring",
) -> None:  # fmt: skip
    """Refuse a placed layout that cannot run (``runs``); in an array of them, the first that cannot."""
    batch, pods, x, y, z, virtual_stages, microbatches, ep, cp = np.broadcast_arrays(
        *(np.asarray(a) for a in (batch, pods, x, y, z, virtual_stages, microbatches, ep, cp))
    )
    ok = runs(model=model, seq_len=seq_len, batch=batch, pods=pods, x=x, y=y, z=z, virtual_stages=virtual_stages,
              microbatches=microbatches, ep=ep, cp=cp, cp_kind=cp_kind)  # fmt: skip
    T = 1 if seq_len is None else seq_len
    unit = "token" if seq_len is None else f"sequence of {seq_len}"
    if not ok["sequences"].all():
        i = _first(~ok["sequences"])
        m, X, P, CP = int(microbatches[i]), int(x[i]) // int(cp[i]), int(pods[i]), int(cp[i])
        got = batch[i].item() / (T * X * P)
        if m > 1 and given.microbatches is not None and got >= 1:  # fewer microbatches would do
            units = "tokens" if seq_len is None else f"sequences of {seq_len}"
            raise refuse("microbatches", f"at most the {got:.3g} {units} each data replica gets, B/(T·X·P)", m)
        replicas = f"{X * P:,} data replicas" + ("" if m == 1 else f" x {m} microbatches")
        need = X * P * m * T
        suggest_cp = seq_len is not None and CP == 1
        raise refuse("batch", f"at least {need:,} tokens, a whole {unit} for each of the {replicas}"
                     + (" (or split each sequence over chips: context parallelism, --cp)" if suggest_cp else ""),
                     f"{batch[i].item():,.6g} ({got:.3g} per replica)")  # fmt: skip
    if not ok["heads"].all():
        Y = int(y[_first(~ok["heads"])])
        raise refuse("y", f"a TP degree dividing the model's {model.heads} attention heads, that its"
                     f" {model.kv_heads} KV heads divide or that divides them", Y)  # fmt: skip
    stages(model=model, z=z, virtual_stages=virtual_stages)
    if not ok["experts"].all():
        i = _first(~ok["experts"])
        EP, X = int(ep[i]), int(x[i])
        if model.moe is None:
            raise refuse("ep", "1 for a dense model: it has no experts to split", EP)
        raise refuse("ep", f"an EP degree dividing the model's {model.moe.experts} experts and the data axis"
                     f" X = {X} it is taken from", EP)  # fmt: skip
    if not ok["context"].all():
        i = _first(~ok["context"])
        CP, X, Y = int(cp[i]), int(x[i]), int(y[i])
        shard_heads = max(model.kv_heads // Y, 1)
        raise refuse("cp", f"a CP degree dividing the data axis X = {X} it is taken from and the sequence of {T}"
                     + (f", and the {shard_heads} KV heads of each TP shard (Ulysses)" if cp_kind == "ulysses" else ""),
                     CP)  # fmt: skip


def stages(*, model: Model, z, virtual_stages) -> None:
    """Refuse more (virtual) pipeline stages than layers (see ``runs``)."""
    z, virtual_stages = np.broadcast_arrays(np.asarray(z), np.asarray(virtual_stages))
    empty = z * virtual_stages > model.layers
    if empty.any():
        i = _first(empty)
        Z, v = int(z[i]), int(virtual_stages[i])
        field, got = ("z", Z) if v == 1 else ("virtual_stages", f"{v} x {Z} stages = {Z * v}")
        raise refuse(field, f"such that Z·v is at most the model's {model.layers} layers: every stage needs one",
                     got)  # fmt: skip


def _first(mask) -> int | tuple:
    mask = np.asarray(mask)
    return () if mask.ndim == 0 else tuple(np.argwhere(mask)[0].tolist())


def _scalar(a):
    """A 0-d array as its Python value (an int or a name), so one layout's knobs print and serialize."""
    return a.item() if isinstance(a, np.ndarray) and a.ndim == 0 else a
