"""Property tests: one vectorized call equals a scalar loop, valid input gives finite numbers,
and the physics is monotonic where it must be."""

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st

from scaling_widgets.cost import (
    STRATEGIES,
    crossover_batch,
    layer_times,
    memory_per_chip,
    step_time,
)

from . import reference

pow2 = st.integers(0, 12).map(lambda k: 2**k)
layout = st.fixed_dictionaries(
    {
        "B": st.floats(1e3, 1e9),
        "D": st.integers(256, 32768),
        "F": st.integers(256, 131072),
        "L": st.integers(1, 160),
        "X": pow2,
        "Y": pow2,
        "P": st.integers(1, 16),
        "C": st.floats(1e13, 5e15),
        "W": st.floats(1e10, 1e12),
        "W_dcn": st.floats(1e9, 1e11),
        "M_X": st.integers(0, 3),
        "M_Y": st.integers(0, 3),
        "mfu": st.floats(0.05, 1.0),
    }
)


def _shape_for(strategy, row):
    row = dict(row)
    if strategy in ("dp", "fsdp"):
        row["Y"] = 1
    if strategy == "tp":
        row["X"] = 1
    return row


def _layer(strategy, c):
    return layer_times(
        strategy=strategy,
        batch=c["B"],
        d_model=c["D"],
        d_ff=c["F"],
        x=c["X"],
        y=c["Y"],
        pods=c["P"],
        flops=c["C"],
        ici_bw=c["W"],
        dcn_bw=c["W_dcn"],
        mx=c["M_X"],
        my=c["M_Y"],
    )


def _columns(rows):
    return {k: np.array([r[k] for r in rows]) for k in rows[0]}


@settings(max_examples=60, deadline=None)
@given(strategy=st.sampled_from(STRATEGIES), rows=st.lists(layout, min_size=1, max_size=40))
def test_vectorized_equals_scalar_loop(strategy, rows):
    rows = [_shape_for(strategy, r) for r in rows]
    c = _columns(rows)
    params = 12 * c["L"] * c["D"].astype(float) ** 2
    t = _layer(strategy, c)
    mem = memory_per_chip(
        params=params,
        layers=c["L"],
        d_model=c["D"],
        d_ff=c["F"],
        batch=c["B"],
        x=c["X"],
        y=c["Y"],
        pods=c["P"],
        zero=3 if strategy in ("fsdp", "fsdp+tp") else 0,
    )
    step = step_time(
        batch=c["B"],
        params=params,
        chips=c["X"] * c["Y"] * c["P"],
        flops=c["C"],
        mfu=c["mfu"],
        comm_time=c["L"] * t.t_comms,
    )
    for i, r in enumerate(rows):
        bound, lower, memory, _, seconds = reference.evaluate(
            strategy,
            r["B"],
            r["D"],
            r["F"],
            r["L"],
            params[i],
            r["X"],
            r["Y"],
            r["P"],
            r["C"],
            r["W"],
            r["W_dcn"],
            r["M_X"],
            r["M_Y"],
            hbm=96e9,
            mfu=r["mfu"],
        )
        assert t.compute_bound[i] == bound
        assert np.isclose(t.lower_bound[i], lower, rtol=1e-12)
        assert np.isclose(mem.total[i], memory, rtol=1e-12)
        assert np.isclose(step[i], seconds, rtol=1e-12)


@settings(max_examples=60, deadline=None)
@given(strategy=st.sampled_from(STRATEGIES), rows=st.lists(layout, min_size=1, max_size=40))
def test_valid_input_gives_finite_numbers(strategy, rows):
    c = _columns([_shape_for(strategy, r) for r in rows])
    t = _layer(strategy, c)
    for value in (t.t_math, t.t_comms, t.lower_bound, t.upper_bound, t.worst_ratio):
        assert np.all(np.isfinite(value))
    assert np.all(t.lower_bound <= t.upper_bound)


@settings(max_examples=60, deadline=None)
@given(strategy=st.sampled_from(STRATEGIES), row=layout, scale=st.floats(1.01, 1e3))
def test_compute_bound_holds_above_the_crossover_and_not_below(strategy, row, scale):
    r = _shape_for(strategy, row)
    args = dict(
        strategy=strategy,
        d_model=r["D"],
        d_ff=r["F"],
        x=r["X"],
        y=r["Y"],
        pods=r["P"],
        flops=r["C"],
        ici_bw=r["W"],
        dcn_bw=r["W_dcn"],
        mx=r["M_X"],
        my=r["M_Y"],
    )
    crossing = float(crossover_batch(**args))
    if np.isfinite(crossing) and crossing > 0:
        assert layer_times(batch=crossing * scale, **args).compute_bound
        assert not layer_times(batch=crossing / scale, **args).compute_bound
    elif np.isinf(crossing):
        assert not layer_times(batch=r["B"] * scale, **args).compute_bound


@settings(max_examples=40, deadline=None)
@given(row=layout)
def test_more_fsdp_never_needs_more_memory_per_chip(row):
    X = 2 ** np.arange(13)
    mem = memory_per_chip(
        params=7e9, layers=row["L"], d_model=row["D"], d_ff=row["F"], batch=row["B"], x=X, zero=3
    )
    assert np.all(np.diff(mem.total) < 0)


def test_a_million_layouts_in_one_call():
    n = 1_000_000
    rng = np.random.default_rng(0)
    t = layer_times(
        strategy="fsdp+tp",
        batch=rng.uniform(1e5, 1e8, n),
        d_model=8192,
        d_ff=28672,
        x=2 ** rng.integers(0, 12, n),
        y=2 ** rng.integers(0, 5, n),
        pods=rng.integers(1, 4, n),
        flops=4.59e14,
        ici_bw=1.8e11,
        dcn_bw=6.25e9,
        mx=3,
        my=1,
    )
    assert t.compute_bound.shape == (n,) and 0 < t.compute_bound.mean() < 1
