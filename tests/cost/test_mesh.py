"""How layouts map onto physical slices (MODEL.md §A.1, §A.7): axes spanned and wraparound."""

import numpy as np
import pytest

from scaling_widgets.cost import axis_rings, estimate, span_axes
from scaling_widgets.presets import HARDWARE, MODELS


def test_tp_takes_the_innermost_axis_and_fsdp_the_rest():
    s = span_axes(slice_shape=(16, 16, 16), x=[256, 512, 4096, 1], y=[16, 8, 1, 4096])
    assert s.mx.tolist() == [2, 3, 3, 0]
    assert s.my.tolist() == [1, 1, 0, 3]


def test_pipeline_takes_the_outermost_axes():
    s = span_axes(slice_shape=(4, 16, 16), x=256, y=1, z=4)
    assert (s.mx, s.my, s.mz) == (2, 0, 1)


def test_uneven_pod_axes_split_by_common_factors():
    s = span_axes(slice_shape=(16, 20, 28), x=[8960, 2240, 1120], y=[1, 4, 8])
    assert s.mx.tolist() == [3, 3, 3]
    assert s.my.tolist() == [0, 1, 2]  # 8 = 4 of the 28-axis x 2 of the 20-axis


def test_a_group_wraps_only_on_whole_ring_axes():
    rings = axis_rings(slice_shape=(16, 16, 16), pod_shape=(16, 16, 16), rule="cube")
    s = span_axes(slice_shape=(16, 16, 16), x=[256, 512], y=[16, 8], rings=rings)
    assert s.wrap_x.tolist() == [True, False]  # X = 512 has only 2 of the innermost axis
    assert s.wrap_y.tolist() == [True, False]


def test_wraparound_rules_of_the_tpu_generations():
    assert axis_rings(slice_shape=(4, 4, 8), pod_shape=(16, 20, 28), rule="cube") == (
        True,
        True,
        True,
    )
    assert axis_rings(slice_shape=(2, 4, 4), pod_shape=(16, 20, 28), rule="cube") == (
        False,
        False,
        False,
    )
    assert axis_rings(slice_shape=(16, 8), pod_shape=(16, 16), rule="full-axis") == (True, False)


def test_overrides_replace_the_derived_spans_and_rings():
    model, chip = MODELS["llama-2-13b"], HARDWARE["tpu-v5p"]
    derived = estimate(model=model, chip=chip, batch=3e6, slice_shape=(16, 16, 16), x=1024, y=4)
    forced = estimate(
        model=model, chip=chip, batch=3e6, slice_shape=(16, 16, 16), x=1024, y=4, mx=2, my=1
    )
    assert (derived.mx, derived.my) == (3, 1)
    assert (forced.mx, forced.my) == (2, 1)
    assert forced.layer.t_comms_x > derived.layer.t_comms_x  # two axes carry less than three
    # 2x16x16 is not made of whole cubes: no rings, unless the user says there are. TP 16 takes a
    # whole axis; it needs a model whose heads it divides (LLaMA-3 70B's 64, not LLaMA-2 13B's 40).
    model = MODELS["llama-3-70b"]
    plain = estimate(model=model, chip=chip, batch=3e6, slice_shape=(2, 16, 16), x=32, y=16)
    ringed = estimate(
        model=model, chip=chip, batch=3e6, slice_shape=(2, 16, 16), x=32, y=16, wraparound=True
    )
    assert (plain.wrap_x, plain.wrap_y) == (False, False)
    assert (ringed.wrap_x, ringed.wrap_y) == (True, True)


def test_layout_must_use_every_chip_of_the_slice():
    with pytest.raises(
        ValueError,
        match=r"x must be the whole data axis.* such that x·y is the 4096 chips of a stage:"
        r" x = 1024 here; got x=512, y=4",
    ):
        estimate(
            model=MODELS["llama-2-13b"],
            chip=HARDWARE["tpu-v5p"],
            batch=4e6,
            slice_shape=(16, 16, 16),
            x=512,
            y=4,
        )


def test_axis_roles_give_whole_axes_to_the_groups():
    model, chip = MODELS["llama-3-70b"], HARDWARE["tpu-v5p"]
    # TP takes the 16 axis: 16 divides the 64 heads (the 20 axis would not).
    e = estimate(model=model, chip=chip, batch=4e6, axis_roles=("y", "x", "x"))  # 16x20x28
    assert (e.x, e.y, e.z, e.mx, e.my) == (560, 16, 1, 2, 1)
    assert bool(e.wrap_x) and bool(e.wrap_y)
    with pytest.raises(
        ValueError, match="y must be a TP degree dividing the model's 64 attention heads"
    ) as err:
        estimate(model=model, chip=chip, batch=4e6, axis_roles=("x", "y", "x"))
    assert err.value.field == "y"
    with pytest.raises(
        ValueError, match="axis_roles must be one of 'x', 'y', 'z' for each of the 3 slice axes"
    ):
        estimate(model=model, chip=chip, batch=4e6, axis_roles=("x", "y"))
    with pytest.raises(ValueError, match="y must be 1 for strategy 'fsdp'"):
        estimate(model=model, chip=chip, batch=4e6, strategy="fsdp", axis_roles=("y", "x", "x"))


def test_many_layouts_of_a_few_splits_are_placed_as_each_split_alone():
    # a grid (of more layouts than DISTINCT_FROM) placed once per distinct split, then spread:
    # the same spans as one layout at a time
    rng = np.random.default_rng(3)
    y = 2 ** rng.integers(0, 5, 5000)
    z = 2 ** rng.integers(0, 2, 5000)
    x = 4096 // y // z
    grid = span_axes(slice_shape=(16, 16, 16), x=x, y=y, z=z, rings=(True, False, True))
    for i in (0, 17, 4999):
        one = span_axes(slice_shape=(16, 16, 16), x=x[i], y=y[i], z=z[i], rings=(True, False, True))
        assert (grid.mx[i], grid.my[i], grid.mz[i]) == (one.mx, one.my, one.mz)
        wraps = (one.wrap_x, one.wrap_y, one.shared_axes)
        assert (grid.wrap_x[i], grid.wrap_y[i], grid.shared_axes[i]) == wraps
        assert [[int(a[i]) for a in axis] for axis in grid.shares] == [
            [int(a) for a in axis] for axis in one.shares
        ]
