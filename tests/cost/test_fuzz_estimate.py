"""Random keywords for `estimate` and `plan`: an InputError naming the field, or sound numbers.

Every field of Cluster, Workload, Layout and Options gets a plausible value, an edge one (0, -1,
1e-300, 1e400, NaN, 2**64, a bool, a string, None) or a small array of them. Whatever comes in,
the answer is an InputError (a ValueError that names the field), or an Estimate whose times,
memory and utilisations are finite and >= 0, with MFU <= HFU <= 1. A numpy warning (overflow, a
division by zero) fails too: the model uses safe denominators, never silenced warnings.
The budget is fixed and the examples derandomized, so CI runs the same cases every time.
"""

import warnings

import numpy as np
from hypothesis import event, example, given, settings
from hypothesis import strategies as st

from scaling_widgets.cost import (
    CHAPTER,
    REMAT_POLICIES,
    SCHEDULES,
    STRATEGIES,
    Exactness,
    InputError,
    estimate,
    plan,
)
from scaling_widgets.cost.memory.peak import PARTS as PEAK_PARTS
from scaling_widgets.presets import HARDWARE, MODELS, PRECISIONS

from .ranking import assert_plan_order

EDGE = [
    0,
    -1,
    1,
    2,
    0.5,
    1e-300,
    5e-324,
    1e29,
    1e30,
    float("inf"),
    float("-inf"),
    float("nan"),
    2**53 + 1,
    2**64,
    -(2**63),
    True,
    False,
    None,
    "",
    "abc",
    "4",
    (),
    [],
    [[1]],
    {},
    1j,
]
pow2 = [1, 2, 4, 8, 16, 64, 512]
PLAUSIBLE = {
    "chip": [HARDWARE[n] for n in ("tpu-v5p", "tpu-v4p", "tpu-v5e", "h100", "gb200-nvl72")],
    "slice_shape": [
        None,
        (2, 2, 2),
        (4, 4, 4),
        (16, 16, 16),
        (4, 8, 4),
        (16, 16),
        (8, 16),
        (1, 4),
        (2, 8),
        (16, 8),
    ],
    "pods": [1, 2, 4],
    "model": list(MODELS.values()),
    "batch": [1e6, 3e6, 16e6, 1e9, 512.0],
    "seq_len": [None, 512, 2048, 4096],
    "precision": list(PRECISIONS.values()),
    "tokens": [None, 2e12, 15e12],
    "strategy": list(STRATEGIES),
    "x": [None, *pow2],
    "y": [None, 1, 2, 4, 8],
    "z": [None, 1, 2, 4],
    "zero": [None, 0, 1, 2, 3],
    "microbatches": [None, 1, 4, 8],
    "microbatch_seqs": [None, 1, 2],
    "schedule": list(SCHEDULES),
    "virtual_stages": [1, 2],
    "remat": list(REMAT_POLICIES),
    "sequence_parallel": [False, True],
    "ep_overlap": [False, True],
    "axis_roles": [None, ("x", "x", "y"), ("z", "x", "y"), ("x", "y")],
    "mx": [None, 1, 2, 0.5],
    "my": [None, 1, 2, 0.5],
    "wraparound": [None, True, False],
    "mfu": [0.4, 0.5, 1.0, 1e-6],
    "measured_step_time": [None, 0.5, 10.0],
    "attention_flops": [False, True],
    # Exactness checks itself when built: its fields are drawn, and built inside the call
    # (``_check``).
    "exact": [
        CHAPTER,
        dict(ring_factor=True, halve_without_wrap=True, latency=1e-5),
        dict(latency=-1.0),
        dict(latency=float("nan")),
    ],
    "overhead_bytes": [0.0, 1e9, 1e11],
    "fits_below": [1.0, 0.9],
    "stack": [None, "megatron-lm", "fsdp2", "deepspeed", "maxtext"],
    "failure_rate": [0.0, 2e-5, 1e-2],
    "checkpoint_bw": [1.2e8, 1e10],
    "restart_time": [0.0, 600.0],
    "checkpoint_interval": [None, 3600.0],
    "pue": [1.0, 1.1, 2.0],
    "chip_power": [None, 500.0],
    "price_per_chip_hour": [None, 0.0, 2.5],
}
NEEDED = ("chip", "model", "batch")
SMALL = {"TPU v5e": (4, 4), "H100": (2, 8), "GB200 NVL72": (2, 72)}  # else (4, 4, 4)
ARRAYS = (
    "batch",
    "x",
    "y",
    "z",
    "zero",
    "microbatches",
    "schedule",
    "virtual_stages",
    "remat",
    "mfu",
    "mx",
    "my",
    "overhead_bytes",
    "pods",
    "tokens",
    "measured_step_time",
    "fits_below",
)
RESULTS = ("step_time", "compute_time", "comm_time", "bubble", "mfu", "hfu")


def _value(field: str):
    """Mostly a plausible value; else an edge one, or a small array of plausible and edge values."""
    plausible = st.sampled_from(PLAUSIBLE[field])
    edge = st.sampled_from(EDGE)
    array = st.lists(plausible | edge, min_size=1, max_size=3) if field in ARRAYS else edge
    if field in NEEDED:  # an edge value here is refused at once: rarely
        return st.integers(0, 19).flatmap(
            lambda k: plausible if k < 17 else edge if k < 19 else array
        )
    return st.integers(0, 9).flatmap(lambda k: plausible if k < 6 else edge if k < 8 else array)


@st.composite
def keywords(draw, fields=tuple(PLAUSIBLE), most=5):
    """The needed keywords and a few more, each with a drawn value."""
    chosen = draw(
        st.lists(
            st.sampled_from([f for f in fields if f not in NEEDED]), max_size=most, unique=True
        )
    )
    out = {name: draw(_value(name)) for name in (*NEEDED, *chosen)}
    if "slice_shape" not in out and draw(st.booleans()):  # a small slice of the chip, most often
        out["slice_shape"] = SMALL.get(getattr(out["chip"], "name", None), (4, 4, 4))
    return out


def _sound(name, value):
    a = np.asarray(value, dtype=float)
    assert np.all(np.isfinite(a)) and np.all(a >= 0), (name, value)


def _check(call, kw):
    """``call(**kw)``: an InputError, or the result (no other exception, no numpy warning)."""
    with warnings.catch_warnings():
        warnings.simplefilter("error", RuntimeWarning)
        try:
            if isinstance(kw.get("exact"), dict):
                kw = {**kw, "exact": Exactness(**kw["exact"])}
            result = call(**kw)
        except InputError as err:
            assert str(err).startswith(f"{err.field} must be "), err
            event("refused")
            return None
    event("ran")
    return result


def _check_estimate(e):
    for name in RESULTS:
        _sound(name, getattr(e, name))
    _sound("memory.total", e.memory.total)
    for part in PEAK_PARTS:
        _sound(f"peak.{part}", getattr(e.peak, part))
    assert np.all(e.peak.reserved >= e.peak.allocated), (e.peak.reserved, e.peak.allocated)
    if e.training_time is not None:
        _sound("training_time", e.training_time)
    assert np.all(e.mfu <= e.hfu * (1 + 1e-9)) and np.all(e.hfu <= 1 + 1e-9), (e.mfu, e.hfu)


V5P, H100, L7 = HARDWARE["tpu-v5p"], HARDWARE["h100"], MODELS["llama-2-7b"]


@settings(max_examples=300, deadline=None, derandomize=True)
@given(kw=keywords())
# Found by this suite, each once a numpy error, a TypeError, an OverflowError or an overflow:
@example(kw=dict(chip=V5P, model=L7, batch=1e6, pods=[1, ()]))  # a ragged list
@example(
    kw=dict(chip=V5P, model=L7, batch=1e6 + 1j)
)  # a complex number, its imaginary part dropped
@example(
    kw=dict(chip=V5P, model=L7, batch=1e6, mfu=5e-324)
)  # a denormal share of peak: an infinite step
@example(
    kw=dict(chip=V5P, model=L7, batch=1e6, mx=1e-300)
)  # a denormal span: infinite communication
@example(
    kw=dict(
        chip=V5P,
        model=L7,
        batch=[1e6, 2e6],
        x=[1024, 512, 256],
        y=[4, 8, 16],
        slice_shape=(16, 16, 16),
    )
)
@example(kw=dict(chip=V5P, model=L7, batch=1e6, fits_below=[1.0, 0.9]))  # a list times a float
@example(
    kw=dict(chip=V5P, model=L7, batch=1e6, measured_step_time=[1e-9, 1.0])
)  # broadcast to a scalar
@example(kw=dict(chip=V5P, model=L7, batch=1e6, slice_shape=(float("inf"), 4, 4)))  # int(inf)
@example(kw=dict(chip=V5P, model=L7, batch=1e6, schedule=[{}]))  # a dict has no .item()
@example(
    kw=dict(chip=V5P, model=L7, batch=1e6, mfu=[1, ()], measured_step_time=1.0)
)  # an mfu not read
@example(
    kw=dict(chip=V5P, model=L7, batch=1e6, seq_len=512, remat=["full", ()])
)  # a ragged list of names
@example(kw=dict(chip=H100, model=L7, batch=1e6, pods=(), mx=1))  # no pods at all
@example(
    kw=dict(chip=H100, model=L7, batch=1e6, pods=[1], mx=1)
)  # pods an array, the span one value
@example(
    kw=dict(chip=V5P, model=L7, batch=1e6, remat=["checkpoints"])
)  # a list of one name: a predicted step's shape
def test_estimate_refuses_naming_the_field_or_gives_sound_numbers(kw):
    e = _check(estimate, kw)
    if e is not None:
        _check_estimate(e)


SMALL_SLICES = {
    "tpu-v5p": [(2, 2, 2), (2, 4, 2), (4, 4, 4), (4, 2, 4)],
    "h100": [(1, 8), (2, 8), (4, 8), (1, 4)],
}
PLAN_FIELDS = (
    "pods",
    "precision",
    "tokens",
    "mfu",
    "sequence_parallel",
    "wraparound",
    "exact",
    "overhead_bytes",
    "fits_below",
    "attention_flops",
    "stack",
)
PLAN_EDGE = st.sampled_from(
    [0, -1, 1e-300, float("nan"), float("inf"), 2**64, True, None, "abc", [1e6, 2e6]]
)


@st.composite
def plan_keywords(draw):
    chip = draw(st.sampled_from(sorted(SMALL_SLICES)))
    kw = draw(keywords(fields=PLAN_FIELDS, most=3))
    kw.update(chip=HARDWARE[chip], slice_shape=draw(st.sampled_from(SMALL_SLICES[chip])))
    kw["seq_len"] = draw(st.sampled_from([512, 2048, 4096]))
    if draw(st.integers(0, 3)) == 0:  # an edge value where plan checks its own
        kw[draw(st.sampled_from(["batch", "seq_len", "slice_shape", "pods", "mfu", "chips"]))] = (
            draw(PLAN_EDGE)
        )
    return kw


@settings(max_examples=150, deadline=None, derandomize=True)
@given(kw=plan_keywords())
# Found by this suite: a plain ValueError naming no field, or numpy's from deep inside.
@example(kw=dict(chip=H100, model=L7, batch=None, slice_shape=(1, 8), seq_len=512))
@example(kw=dict(chip=H100, model=L7, batch=[1e6, {}], slice_shape=(2, 8), seq_len=512))
@example(
    kw=dict(chip=H100, model=L7, batch=1e9, slice_shape=(2, 8), seq_len=512, fits_below=[1.0, 1.0])
)
@example(kw=dict(chip=V5P, model=L7, batch=3e6, slice_shape=(2, 2, 2), seq_len=2048, tokens=()))
@example(kw=dict(chip=H100, model=L7, batch=3e6, chips=12, seq_len=2048))
def test_plan_refuses_naming_the_field_or_ranks_sound_layouts(kw):
    try:
        ranked = _check(plan, kw)
    except ValueError as err:  # no layout fits: said as a whole sentence, not a field's
        assert type(err) is ValueError and str(err).startswith("no layout of "), err
        event("nothing fits")
        return
    if ranked is None:
        return
    _sound("step_time", ranked.step_time)
    _sound("memory", ranked.memory)
    assert len(ranked)
    assert_plan_order(ranked)
    # Every ranked layout's peak fits: what the planner drops is what would run out of memory.
    limit = ranked.options.fits_below * ranked.cluster.chip.usable_hbm
    assert np.all(ranked.memory[ranked.order] <= limit)
    _check_estimate(ranked.estimate(0))
