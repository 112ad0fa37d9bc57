"""The panel's recompute menu offers the stack's own policies by their names (docs/MODEL.md §E.4),
follows a change of stack or chip, and keeps a policy a file or the API set."""

from __future__ import annotations

from scaling_widgets.widgets.scenario import Scenario
from scaling_widgets.widgets.training_controls import TrainingControls


def test_the_menu_follows_the_stack_and_keeps_what_was_set():
    s = Scenario(model="llama-2-70b", hardware="tpu-v5p", slice_shape=(8, 8, 4), batch=4 * 2**20,
                 seq_len=4096)  # fmt: skip
    menu = TrainingControls(s)._remat
    # a TPU runs MaxText: its remat_policy values, after the chapter's and the generic names
    assert menu.options[:4] == ("checkpoints", "none", "selective", "full")
    assert "save_dot_except_mlpwi" in menu.options and "selective:core_attn" not in menu.options
    menu.value = "save_dot_except_mlpwi"
    assert s.remat == "save_dot_except_mlpwi"
    # Megatron-LM's names on its stack; the policy in use stays, and stays shown
    s.update(stack="megatron-lm")
    assert "selective:core_attn,mlp" in menu.options and "minimal" not in menu.options
    assert menu.value == s.remat == "save_dot_except_mlpwi"
    # a GPU chip's own stack when none is named: torchtitan's on the H100
    s.update(stack=None, hardware="h100", slice_shape=(8, 8), remat="selective:op")
    assert "selective:2" in menu.options and menu.value == "selective:op"
