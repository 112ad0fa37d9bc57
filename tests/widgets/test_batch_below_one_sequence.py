"""A batch below one sequence runs nowhere: the API, the command line and the panel refuse it,
each naming the smallest batch that runs (one sequence), where before it became one sequence
shown as "0 tokens"."""

from __future__ import annotations

import pytest

import scaling_widgets as sw
from scaling_widgets.cli import main
from scaling_widgets.cost import InputError, Workload
from scaling_widgets.presets import MODELS

SAYS = "batch must be at least one sequence: 4,096 tokens or more"


def test_the_cost_model_refuses_it_naming_one_sequence():
    with pytest.raises(InputError) as refused:
        Workload(MODELS["llama-3-8b"], batch=[8192, 100], seq_len=4096)
    assert refused.value.field == "batch" and SAYS in str(refused.value)
    assert Workload(MODELS["llama-3-8b"], batch=4096, seq_len=4096).batch == 4096  # one runs


def test_the_command_line_refuses_it_in_one_line(capsys):
    args = ["estimate", "--model", "llama-3-70b", "--hardware", "h100", "--chips", "512"]
    with pytest.raises(SystemExit) as exit_:
        main([*args, "--batch", "0.5"])
    err = capsys.readouterr().err
    assert exit_.value.code == 2 and err.count("\n") == 1 and f"--{SAYS}; got 0.5 tokens" in err


def test_the_panel_says_it_inline_and_keeps_the_batch_it_had():
    panel = sw.explore(model="llama-2-13b", hardware="tpu-v5p", slice_shape=(16, 16, 16),
                       batch=4194304, seq_len=4096)  # fmt: skip
    panel.training._batch.value = 100
    assert panel.scenario.batch == 4194304 and SAYS in panel.training._message.text
