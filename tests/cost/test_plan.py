"""The layout planner: one vectorized evaluation, ranked; agrees with the closed forms and with
a brute-force scalar evaluation of every layout."""

import itertools
import json
import math

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaling_widgets.cli import main
from scaling_widgets.cost import InputError, estimate, span_axes, x_opt
from scaling_widgets.cost.layout.microbatches import PER_STAGE
from scaling_widgets.cost.memory.verdict import fits
from scaling_widgets.cost.schedules import runs
from scaling_widgets.cost.search.layouts import SCHEDULES_TRIED
from scaling_widgets.cost.search.plan import plan
from scaling_widgets.cost.stacks import REGISTRY
from scaling_widgets.cost.step.profiles import default_stack
from scaling_widgets.cost.transformer.counts import FRAMEWORK_REMAT
from scaling_widgets.presets import HARDWARE, MODELS
from scaling_widgets.text.step import binds

from .ranking import assert_plan_order

V5P, L13 = HARDWARE["tpu-v5p"], MODELS["llama-2-13b"]


def test_example_16_picks_a_compute_bound_fsdp_plus_tp_layout():
    # 3M tokens in 2048-token sequences (1464): enough for 1024 data replicas. The chapter's 32K
    # sequences (91.6) cannot fill 512 replicas, the fewest TP 8 leaves on one stage.
    # the chapter's
    ranked = plan(model=L13, chip=V5P, batch=3e6, seq_len=2048, slice_shape=(16, 16, 16), mfu=0.4)
    best, e = ranked.layout(0), ranked.estimate(0)
    assert best["x"] > 1 and best["y"] > 1 and e.compute_bound and e.fits
    assert float(e.step_time) == pytest.approx(0.3, abs=0.015)
    assert "compute" in binds(e)


def test_the_best_single_pod_split_is_within_a_power_of_two_of_x_opt():
    ranked = plan(model=L13, chip=V5P, batch=3e6, seq_len=2048, slice_shape=(16, 16, 16))
    # The chapter's world: whole sequences on each replica (the planner may also split them,
    # MODEL.md §D.3).
    rank = next(r for r in range(len(ranked)) if ranked.layout(r)["cp"] == 1)
    best = ranked.estimate(rank)
    optimum = float(x_opt(batch=3e6, d_ff=L13.d_ff, chips=4096, mx=best.mx, my=best.my))
    assert abs(math.log2(ranked.layout(rank)["x"] / optimum)) <= 1
    # CP only where replicas outnumber the 1,464 sequences, and just enough of it for one each.
    for r in range(len(ranked)):
        k = ranked.layout(r)
        assert (k["cp"] > 1) == (k["x"] * k["microbatches"] > 1464) and k["x"] * k[
            "microbatches"
        ] <= 1464 * k["cp"]


def _fewest_whole(share, z, schedule):
    """The fewest microbatches of 2^k whole sequences of a replica's ``share``, at least one a
    stage, that the schedule runs; None if none."""
    if share != int(share) or share < 1:
        return None
    for size in (2**k for k in range(12, -1, -1)):
        m = int(share) // size
        if int(share) % size == 0 and m >= z and runs(schedule=schedule, stages=z, microbatches=m):
            return m
    return None


def _every_layout(shape, chip, model, sequences, seq_len):
    """The planner's rules written out as plain loops: one dict per layout, every axis order."""
    chips = math.prod(shape)
    pipelined = REGISTRY[default_stack(chip)].schedules
    orders = [shape] if chip.is_gpu else sorted(set(itertools.permutations(shape)))
    for order, z, y in itertools.product(
        orders, range(1, model.layers + 1), [2**k for k in range(12)]
    ):
        if chips % (z * y) or model.heads % y or (y % model.kv_heads and model.kv_heads % y):
            continue
        x = chips // (z * y)
        if not chip.is_gpu and span_axes(slice_shape=order, x=x, y=y, z=z).shared_axes > 1:
            continue
        for zero, remat, (schedule, v), k in itertools.product(
            range(4), FRAMEWORK_REMAT, SCHEDULES_TRIED, (*PER_STAGE, "fewest")
        ):
            m = k * z if k != "fewest" else _fewest_whole(sequences / x, z, schedule)
            if m is None or (k == "fewest" and m % z == 0 and m // z in PER_STAGE):
                continue  # no such count, or one of the k·Z already tried
            # Every stage gets a layer; a replica short of a sequence a microbatch shares its
            # sequences with the fewest chips that give it one (CP, a power of two dividing X and
            # T).
            cp = 1
            while m * x > sequences * cp:
                cp *= 2
            if (z == 1 and schedule != "1f1b") or z * v > model.layers or x % cp or seq_len % cp:
                continue
            # the chip's stack pipelines with its own schedules, each with its own rule
            if (
                z > 1
                and schedule not in pipelined
                or not runs(schedule=schedule, stages=z, microbatches=m)
            ):
                continue
            if zero == 3 and m > 1:  # ZeRO-3's re-gather per microbatch is not priced
                continue
            share = sequences * cp / x  # a replica's sequences: when whole, whole microbatches
            if share == int(share) and int(share) % m:
                continue
            yield dict(
                slice_shape=order,
                x=x,
                y=y,
                z=z,
                zero=zero,
                remat=remat,
                schedule=schedule,
                virtual_stages=v,
                microbatches=m,
                ep=1,
                etp=None,  # a dense model: no experts to fold over TP
                cp=cp,
                cp_kind="ring",
                fsdp_pods=1,  # one pod: no FSDP across pods
                pp_pods=1,  # nor a pipeline across them
            )


SMALL_CLUSTERS = [
    ("tpu-v5p", (2, 2, 4)),
    ("tpu-v5p", (2, 4)),
    ("tpu-v5e", (4, 4)),
    ("h100", (2, 8)),
    ("h100", (1, 4)),
]


@settings(max_examples=8, deadline=None)
@given(
    cluster=st.sampled_from(SMALL_CLUSTERS),
    model=st.sampled_from(["llama-2-7b", "llama-2-13b"]),
    sequences=st.integers(1, 12),
    seq_len=st.sampled_from([2048, 4096]),
)
def test_on_small_clusters_the_planner_agrees_with_brute_force(cluster, model, sequences, seq_len):
    chip, shape = HARDWARE[cluster[0]], cluster[1]
    inputs = dict(model=MODELS[model], chip=chip, batch=sequences * seq_len, seq_len=seq_len)
    steps, margins, runs = {}, {}, False  # every layout that fits, one estimate at a time
    for knobs in _every_layout(shape, chip, MODELS[model], sequences, seq_len):
        e = estimate(strategy="fsdp+tp", **knobs, **inputs)
        runs = True
        if e.fits:
            # recompute is charged in the step itself
            steps[tuple(sorted(knobs.items()))] = float(e.step_time)
            margins[tuple(sorted(knobs.items()))] = float(e.margin)
    if not runs:  # too few sequences for any layout: the batch is refused
        with pytest.raises(
            InputError, match="batch must be enough for some layout the planner tries to run"
        ) as err:
            plan(slice_shape=shape, **inputs)
        assert err.value.field == "batch"
        return
    if not steps:
        with pytest.raises(ValueError, match="no layout"):
            plan(slice_shape=shape, **inputs)
        return
    ranked = plan(slice_shape=shape, **inputs)
    fastest = float(ranked.step_time[ranked.order].min())
    assert fastest == pytest.approx(min(steps.values()), rel=1e-12)
    # the first row is one of the brute force's: of those that tie the fastest, the safest
    first = tuple(sorted(ranked.layout(0).items()))
    assert steps[first] == pytest.approx(float(ranked.step_time[ranked.order[0]]), rel=1e-12)
    tie = [k for k, t in steps.items() if t <= ranked.band * fastest * (1 + 1e-12)]
    assert margins[first] == pytest.approx(max(margins[k] for k in tie), rel=1e-12)
    assert_plan_order(ranked)


def test_the_planner_finds_tp_over_two_axes_of_the_slice_as_given():
    # On 16x20x28, TP 8 innermost takes 4 of the 28 axis and 2 of the 20: X = 1120 shares both
    # axes with it, each group counting the axes it spans (M_X = 3, M_Y = 2), and it is
    # compute-bound. 512-token sequences: 1M tokens are 1953 of them, a whole one for each of the
    # 1120 replicas (8192-token sequences, 122, could not fill them).
    kw = dict(
        model=MODELS["llama-3-70b"], chip=V5P, batch=1e6, seq_len=512, slice_shape=(16, 20, 28)
    )
    ranked = plan(**kw)
    # The chapter's world: whole sequences on each replica, one stage (the planner may also split
    # sequences, MODEL.md §D.3, or pipeline; which of the compute-bound layouts ranks first is the
    # predicted step's call).
    rows = [ranked.layout(r) for r in range(len(ranked))]
    found = [r for r, lay in enumerate(rows)
             if (lay["slice_shape"], lay["x"], lay["y"], lay["z"], lay["cp"])
             == ((16, 20, 28), 1120, 8, 1, 1)]  # fmt: skip
    assert found
    e = ranked.estimate(found[0])
    assert e.compute_bound and (float(e.mx), float(e.my)) == (3, 2)
    # The estimate's own split search finds it too, at the chapter's MFU.
    shown = estimate(**kw, x=None, y=None, mfu=0.4, cp=1)
    assert bool(shown.compute_bound)


def test_ties_are_broken_the_same_way_every_time():
    first = plan(model=L13, chip=V5P, batch=3e6, seq_len=32768, slice_shape=(8, 8, 8))
    again = plan(model=L13, chip=V5P, batch=3e6, seq_len=32768, slice_shape=(8, 8, 8))
    assert [first.layout(r) for r in range(10)] == [again.layout(r) for r in range(10)]


def test_an_impossible_request_over_pods_asks_for_more_chips():
    # the leanest shards across all four pods (FSDP across pods): more chips in all would do
    with pytest.raises(
        ValueError, match=r"fits on 16 TPU v5e chips \(4 pods\).*About \d+x the chips would do"
    ):
        plan(
            model=MODELS["llama-3-405b"],
            chip=HARDWARE["tpu-v5e"],
            batch=1e5,
            seq_len=4096,
            slice_shape=(2, 2),
            pods=4,
        )


def test_an_impossible_request_says_what_would_be_needed():
    with pytest.raises(
        ValueError, match=r"no layout of LLaMA-3 405B fits on 4 TPU v5e chips.*About \d+x the chips"
    ):
        plan(
            model=MODELS["llama-3-405b"],
            chip=HARDWARE["tpu-v5e"],
            batch=1e5,
            seq_len=4096,
            slice_shape=(2, 2),
        )


@pytest.mark.parametrize(
    "bad, message",
    [
        (dict(seq_len=None), "seq_len must be one number to plan for; got None"),
        (
            dict(batch=[1e6, 2e6]),
            r"batch must be one number to plan for; got \[1000000.0, 2000000.0\]",
        ),
        (dict(batch=-1), "batch must be a number of tokens > 0 and < 1e11; got -1"),
        (
            dict(pods=0),
            r"pods must be a whole number from 1 to 65,536 \(at most 4,194,304 chips in all\); got "
            r"0",
        ),
        (dict(model="llama-2-13b"), "model must be a Model"),
        (
            dict(zero=1),
            "zero must be left out: plan searches x, y, z, zero, .* itself; .*",
        ),
        (dict(remat="sometimes"), "remat must be one of"),
        (dict(max_tp=0), "max_tp must be a whole number"),
    ],
)
def test_bad_input_to_the_planner_names_the_field(bad, message):
    with pytest.raises(ValueError, match=message):
        plan(**{**dict(model=L13, chip=V5P, batch=3e6, seq_len=4096, slice_shape=(4, 4, 4)), **bad})


def test_cli_plan_json_is_ranked_best_first(capsys):
    code = main(
        [
            "plan",
            "--model",
            "llama-2-13b",
            "--mesh",
            "16x16x16",
            "--batch",
            "16M",
            "--seq-len",
            "4096",
            "--top",
            "3",
            "--json",
        ]
    )
    data = json.loads(capsys.readouterr().out)
    assert code == 0 and len(data["layouts"]) == 3
    # "fit" counts the layouts within HBM among those "evaluated", and some do not fit.
    every = plan(model=L13, chip=V5P, batch=2**24, seq_len=4096, slice_shape=(16, 16, 16))  # 16M
    assert data["evaluated"] == len(every.memory)
    assert (
        data["fit"] == fits(every.memory, V5P.usable_hbm).sum()
        and 0 < data["fit"] < data["evaluated"]
    )
    assert all(layout["fits"] for layout in data["layouts"])  # the peak within HBM
    steps = [layout["step_time_s"] for layout in data["layouts"]]
    assert steps == sorted(steps)
    assert {"layout", "per_layer", "memory_per_chip_bytes", "binds"} <= set(data["layouts"][0])


def test_for_a_mixture_of_experts_the_planner_searches_expert_parallelism():
    v3 = MODELS["deepseek-v3"]
    ranked = plan(model=v3, chip=HARDWARE["h100"], batch=16e6, seq_len=4096, chips=2048)
    eps = set(ranked.layouts["ep"].tolist())
    # powers of two dividing the 256 experts (and X)
    assert eps <= {1, 2, 4, 8, 16, 32, 64, 128, 256}
    # without EP every chip would hold all 256 experts
    assert max(eps) > 8 and ranked.layout(0)["ep"] > 1
    e = ranked.estimate(0)
    assert e.fits and float(e.step_time) == float(ranked.step_time[ranked.order[0]])
    dense = plan(model=L13, chip=V5P, batch=3e6, seq_len=2048, slice_shape=(8, 8, 8))
    assert set(dense.layouts["ep"].tolist()) == {1}


def test_a_plan_held_to_an_ep_and_a_cp_keeps_them_in_every_row():
    # Llama 3 at 128K
    ranked = plan(
        model=MODELS["llama-3-405b"],
        chip=HARDWARE["h100"],
        batch=16e6,
        seq_len=131072,
        chips=16384,
        cp=16,
        cp_kind="all-gather",
    )
    assert set(ranked.layouts["cp"].tolist()) == {16} and set(
        ranked.layouts["cp_kind"].tolist()
    ) == {"all-gather"}
    held = plan(
        model=MODELS["deepseek-v3"],
        chip=HARDWARE["h100"],
        batch=16e6,
        seq_len=4096,
        chips=2048,
        ep=64,
    )
    assert set(held.layouts["ep"].tolist()) == {64} and held.estimate(0).layout.ep == 64
    with pytest.raises(InputError, match="cp_kind must be one of 'ring', 'all-gather', 'ulysses'"):
        plan(model=L13, chip=V5P, batch=3e6, seq_len=2048, slice_shape=(8, 8, 8), cp_kind="tree")


def test_the_planner_tries_the_recompute_policies_frameworks_offer_or_the_one_held():
    # The chapter's "checkpoints" is a memory count no framework runs: never planned.
    where = dict(model=MODELS["llama-3-70b"], chip=HARDWARE["h100"], batch=4e6, seq_len=8192,
                 chips=512)  # fmt: skip
    searched = plan(**where)
    assert set(searched.layouts["remat"]) == {"none", "selective", "full"}
    held = plan(**where, remat="selective")
    assert set(held.layouts["remat"]) == {"selective"}
    with pytest.raises(ValueError, match="remat must be one of"):
        plan(**where, remat="sometimes")


def test_the_planner_keeps_tp_and_pipeline_stages_under_their_caps():
    where = dict(model=MODELS["llama-3-70b"], chip=HARDWARE["h100"], batch=4e6, seq_len=8192,
                 chips=512)  # fmt: skip
    capped = plan(**where, max_tp=2, max_pp=4)
    assert capped.layouts["y"].max() <= 2 and capped.layouts["z"].max() <= 4
    assert plan(**where).layouts["y"].max() > 2


def test_the_chapters_example_16_plans_to_its_compute_bound_split_at_its_mfu():
    # LLaMA-2 13B, 3M tokens of 32K on v5p 16x16x16: every layout splits sequences (92 of them
    # over hundreds of replicas); among those the split does not prefer fewer CP chips over
    # a compute-bound layer: FSDP 1024 x TP 4, as the chapter has it.
    ranked = plan(model=MODELS["llama-2-13b"], chip=V5P, batch=3e6, seq_len=32768,
                  slice_shape=(16, 16, 16), mfu=0.4)  # fmt: skip
    best = ranked.layout(0)
    assert (best["x"], best["y"], best["z"]) == (1024, 4, 1)
    assert bool(ranked.estimate(0).compute_bound)


def test_plan_with_tokens_to_train_shows_the_time_to_train_in_its_table(capsys):
    code = main(["plan", "--model", "llama-3-8b", "--hardware", "h100", "--chips", "64",
                 "--batch", "1M", "--seq-len", "8k", "--tokens", "15T", "--top", "2"])  # fmt: skip
    out = capsys.readouterr().out
    assert code == 0 and "to train" in out and " days  " in out
