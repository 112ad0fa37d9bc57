"""The house's values are frozen: set once by their constructor, then never again."""

import dataclasses

import pytest

from scaling_widgets.cost import Layout, Options
from scaling_widgets.presets import HARDWARE


def test_a_value_cannot_be_changed_once_made():
    layout = Layout(strategy="fsdp", x=8)
    for change in (
        lambda: setattr(layout, "x", 16),
        lambda: setattr(layout, "anything_new", 1),
        lambda: delattr(layout, "x"),
    ):
        with pytest.raises(dataclasses.FrozenInstanceError):
            change()
    assert layout.x == 8
    assert dataclasses.replace(layout, x=16).x == 16  # a new value, the old one kept
    assert layout.x == 8


def test_values_compare_and_hash_by_their_fields():
    h100, again = HARDWARE["h100"], dataclasses.replace(HARDWARE["h100"])
    assert h100 == again and h100 is not again
    assert len({h100, again, HARDWARE["tpu-v5p"]}) == 2


def test_results_of_arrays_compare_by_identity():
    assert Options(mfu=0.4) != Options(mfu=0.4)  # eq=False: arrays have no one truth value
