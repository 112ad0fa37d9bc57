"""The families with members (schedules, strategies, stacks): one module a member, found by name,
each giving what the rest of the house asks of it, and consistent with itself."""

import sys
from types import SimpleNamespace

import numpy as np
import pytest

from scaling_widgets.cost import estimate
from scaling_widgets.cost.ground.registry import members
from scaling_widgets.cost.schedules import SCHEDULES, bubble, in_flight_microbatches
from scaling_widgets.cost.stacks import STACKS
from scaling_widgets.cost.step.profiles import Profile
from scaling_widgets.cost.step.timeline import timeline
from scaling_widgets.cost.strategies import STRATEGIES
from scaling_widgets.presets import HARDWARE, MODELS


def test_a_new_member_is_a_new_file(tmp_path, monkeypatch):
    family = tmp_path / "family"
    family.mkdir()
    (family / "__init__.py").write_text("")
    for name, order in (("second", 2), ("first", 1)):
        (family / f"{name}.py").write_text(f"NAME, ORDER = {name!r}, {order}\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    import family as package  # noqa: PLC0415

    found = members(
        "family", package.__path__, lambda m: SimpleNamespace(name=m.NAME, order=m.ORDER)
    )
    assert list(found) == ["first", "second"]  # by their declared order, not their file names
    sys.modules.pop("family", None)


def test_the_families_members_in_their_order():
    assert tuple(SCHEDULES) == (
        "gpipe",
        "1f1b",
        "interleaved",
        "zb-h1",
        "zb-h2",
        "zbv",
        "dualpipe",
        "dualpipev",
    )
    assert tuple(STRATEGIES) == ("dp", "fsdp", "tp", "fsdp+tp")
    assert tuple(STACKS) == (
        "megatron-lm",
        "fsdp2",
        "deepspeed",
        "maxtext",
        "megatron-lm-2021",
        "llm-foundry",
        "nanotron",
    )


@pytest.mark.parametrize("name", sorted(SCHEDULES))
def test_a_schedules_bubble_and_microbatches_in_flight_are_what_its_own_passes_show(name):
    schedule = SCHEDULES[name]
    for Z, m in ((2, 4), (4, 8), (4, 16)):
        for v in schedule.virtual_stages:
            t = timeline(schedule=name, stages=Z, microbatches=m, virtual_stages=v)
            expected = float(bubble(schedule=name, stages=Z, microbatches=m, virtual_stages=v))
            assert t.bubble == pytest.approx(expected), (Z, m, v)
            # Stage 0 holds the most: its forwards run ahead of its backwards (the input's
            # gradient, where the backward is split) by this much.
            first, forward, back = t.device == 0, t.kind == "F", t.kind == "B"
            times = np.sort(np.concatenate([t.end[first & forward], t.start[first & back]]))
            ahead = max(
                np.sum(t.end[first & forward] <= now) - np.sum(t.start[first & back] < now)
                for now in times
            )
            held = in_flight_microbatches(schedule=name, stages=Z, microbatches=m, virtual_stages=v)
            assert ahead / v == pytest.approx(float(held)), (Z, m, v)


@pytest.mark.parametrize("name", sorted(STRATEGIES))
def test_a_strategy_runs_with_its_own_zero_stage_and_groups(name):
    s = STRATEGIES[name]
    e = estimate(model=MODELS["llama-3-70b"], chip=HARDWARE["tpu-v5p"], batch=2**24, seq_len=4096,
                 slice_shape=(4, 4, 4), strategy=name, mfu=0.4)  # fmt: skip
    assert e.zero == s.zero and set(s.traffic) <= {"dp", "fsdp", "tp", "dp+tp", "fsdp+tp"}
    groups = {"x": (64, 1), "y": (1, 64)}.get(s.on)
    assert groups is None or (int(e.x), int(e.y)) == groups


@pytest.mark.parametrize("name", sorted(STACKS))
def test_a_stack_sets_only_what_a_profile_holds(name):
    assert set(STACKS[name]) <= set(Profile.__dataclass_fields__)
    Profile(name, **STACKS[name])  # and the profile takes it


@pytest.mark.parametrize("name", sorted(STACKS))
def test_each_stacks_fitted_behaviour_lies_inside_its_physical_bounds(name):
    from scaling_widgets.cost.stacks import BOUNDS, REGISTRY

    behaviour = REGISTRY[name].behaviour
    for field, (low, high) in BOUNDS.items():
        assert low <= getattr(behaviour, field) <= high, field
