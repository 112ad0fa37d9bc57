"""Malformed input raises ValueError naming the argument, the value and what is allowed."""

import numpy as np
import pytest

from scaling_widgets.cost import Chip, Model, estimate, layer_times, x_opt
from scaling_widgets.presets import HARDWARE, MODELS

HW = dict(flops=4.59e14, ici_bw=1.8e11, dcn_bw=6.25e9)


@pytest.mark.parametrize(
    "field, value, message",
    [
        ("batch", -3, "batch must be a number of tokens > 0 and < 1e11; got -3"),
        (
            "batch",
            [1e6, 0.0],
            r"batch must be a number of tokens > 0 and < 1e11; got 0 at index \(1,\)",
        ),
        ("batch", "3M", "batch must be a number of tokens > 0 and < 1e11; got '3M'"),
        ("x", np.nan, "x must be a whole number from 1 to 2\\*\\*53; got nan"),
        ("strategy", "zero", "strategy must be one of 'dp', 'fsdp', 'tp', 'fsdp\\+tp'; got 'zero'"),
        (
            "slice_shape",
            (0, 16, 16),
            r"slice_shape must be a list of whole numbers >= 1; got \(0, 16, 16\)",
        ),
    ],
)
def test_the_values_name_the_bad_field_when_they_are_built(field, value, message):
    """The formulas trust their inputs; each value checks its own fields where it is built, so
    estimate() (and the CLI and the panel through it) refuses naming the field."""
    args = dict(model=MODELS["llama-2-7b"], chip=HARDWARE["tpu-v5p"], batch=1e6, strategy="fsdp")
    args[field] = value
    with pytest.raises(ValueError, match=message):
        estimate(**args)


def test_a_model_of_your_own_names_the_bad_dimension():
    with pytest.raises(
        ValueError, match="Model d_model must be a whole number from 1 to 2\\*\\*31; got 'wide'"
    ):
        Model("m", layers=2, d_model="wide", d_ff=64, heads=2, kv_heads=2, head_dim=32, vocab=100)


def test_formulas_take_arrays_and_trust_them():
    """A formula begins with its equation: valid arrays in, arrays out, nothing checked twice."""
    t = layer_times(strategy="fsdp", batch=[1e6, 1e7], d_model=8192, d_ff=32768, x=64, **HW)
    assert t.t_math.shape == (2,) and float(x_opt(batch=1e6, d_ff=1, chips=64)) == 8000.0


def test_estimate_rejects_a_slice_larger_than_the_pod():
    fits = "slice_shape must be a slice that fits in the chip's pod of 16x16x16 .*; got 32x16x16"
    with pytest.raises(ValueError, match=fits):
        estimate(
            model=MODELS["llama-2-7b"],
            chip=HARDWARE["tpu-v4p"],
            batch=1e6,
            slice_shape=(32, 16, 16),
        )


def test_estimate_rejects_tp_on_a_pure_fsdp_strategy():
    with pytest.raises(ValueError, match="y must be 1 for strategy 'fsdp'"):
        estimate(
            model=MODELS["llama-2-7b"], chip=HARDWARE["tpu-v5p"], batch=1e6, strategy="fsdp", y=4
        )


def test_a_layout_that_does_not_fit_is_not_an_error():
    e = estimate(model=MODELS["llama-3-405b"], chip=HARDWARE["tpu-v5e"], batch=1e6, strategy="dp")
    assert not e.fits


def test_user_defined_model_and_chip_are_checked_field_by_field():
    with pytest.raises(
        ValueError, match="Model d_ff must be a whole number from 1 to 2\\*\\*31; got 0"
    ):
        Model("m", layers=2, d_model=64, d_ff=0, heads=2, kv_heads=2, head_dim=32, vocab=100)
    with pytest.raises(ValueError, match="Chip ici_bw must be a number > 0 and < 1e30; got -1"):
        Chip("c", flops=1e14, hbm_bytes=1e10, hbm_bw=1e12, ici_bw=-1, pod_shape=(4, 4), dcn_bw=1e9)


@pytest.mark.parametrize(
    "knobs, message",
    [
        (
            dict(remat=["full", "bogus"]),
            r"remat must be one of .*, or an array of them; got 'bogus'",
        ),
        (dict(remat=[]), r"remat must be one of .*, or an array of them; got \[\]"),
        (dict(zero=[1, 5]), r"zero must be a ZeRO stage 0, 1, 2 or 3 \(or an array of them\)"),
        (dict(zero=[]), r"zero must be a ZeRO stage 0, 1, 2 or 3 \(or an array of them\)"),
        # Every stage needs a layer: 64 stages of 40 layers leave 24 empty.
        (
            dict(slice_shape=(16, 16, 16), z=[1, 64], x=[512, 64], y=[8, 1]),
            r"z must be such that Z·v is at most the model's 40 layers: every stage needs one; got "
            r"64",
        ),
        (
            dict(virtual_stages=[2, 1], schedule="1f1b"),
            "virtual_stages must be 1 unless the schedule is 'interleaved'",
        ),
    ],
)
def test_a_bad_element_of_an_array_of_knobs_is_named(knobs, message):
    with pytest.raises(ValueError, match=message) as err:
        estimate(
            model=MODELS["llama-2-13b"], chip=HARDWARE["tpu-v5p"], batch=3e6, seq_len=4096, **knobs
        )
    assert err.value.field == message.split()[0]
