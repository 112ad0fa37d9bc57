"""A large grid evaluated in cache-sized blocks (``cost/evaluation/blocks.py``) gives what the
whole grid gives: every number, name and flag of the estimate (an array that broadcasts, such as a
split given once for every batch, joined in the grid's shape), and the same refusal."""

import dataclasses

import numpy as np
import pytest

from scaling_widgets.cost import estimate
from scaling_widgets.cost.evaluation import blocks
from scaling_widgets.cost.ground.refusals import InputError
from scaling_widgets.cost.values import Workload
from scaling_widgets.presets import HARDWARE, MODELS

V5P, H100 = HARDWARE["tpu-v5p"], HARDWARE["h100"]


def _leaves(value, path=""):
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        for field in dataclasses.fields(value):
            yield from _leaves(getattr(value, field.name), f"{path}.{field.name}")
    elif isinstance(value, dict):
        for key, item in value.items():
            yield from _leaves(item, f"{path}[{key}]")
    elif isinstance(value, tuple):
        for i, item in enumerate(value):
            yield from _leaves(item, f"{path}[{i}]")
    else:
        yield path, value


def _whole_and_in_blocks(monkeypatch, **keywords):
    monkeypatch.setattr(blocks, "BLOCK", 10**9)
    whole = estimate(**keywords)
    monkeypatch.setattr(blocks, "BLOCK", 700)
    return whole, estimate(**keywords)


def _assert_same(whole, joined):
    for (path, a), (path_b, b) in zip(_leaves(whole), _leaves(joined), strict=True):
        assert path == path_b
        if np.ndim(b) > np.ndim(a):  # an array held whole, joined in the grid's shape
            assert np.shape(b) == np.shape(joined.step_time), path
            a = np.broadcast_to(a, np.shape(b))
        if isinstance(a, (np.ndarray, np.generic, float, int, str)) or isinstance(b, np.ndarray):
            assert np.shape(a) == np.shape(b), path
            numbers = np.asarray(a).dtype.kind in "fc"
            assert np.array_equal(a, b, equal_nan=numbers), path
        else:
            assert a is b or a == b, path


def test_a_grid_in_blocks_equals_the_grid_whole_number_for_number(monkeypatch):
    # 2,400 layouts (a batch column against a row of splits, recompute and pods), the step
    # predicted: four blocks of 600.
    rng = np.random.default_rng(1)
    y = 2 ** rng.integers(0, 5, 120)
    whole, joined = _whole_and_in_blocks(
        monkeypatch,
        model=MODELS["llama-3-70b"],
        chip=V5P,
        slice_shape=(16, 16, 16),
        seq_len=4096,
        batch=np.geomspace(2e6, 512e6, 20)[:, None],  # a column of batches
        x=4096 // y,
        y=y,
        pods=rng.integers(1, 4, 120),
        remat=rng.choice(["full", "checkpoints"], 120),
    )
    assert np.shape(joined.step_time) == (20, 120)
    _assert_same(whole, joined)


def test_a_grid_in_blocks_says_cp_was_implied_if_any_layout_implied_it(monkeypatch):
    # 3M tokens of 4K sequences on FSDP 1024 x TP 4 split each sequence over 2 chips; 6M does
    # not. The blocks of the second half imply none.
    batch = np.repeat([3e6, 6e6], 1000)
    whole, joined = _whole_and_in_blocks(
        monkeypatch,
        model=MODELS["llama-2-13b"],
        chip=V5P,
        slice_shape=(16, 16, 16),
        batch=batch,
        seq_len=4096,
        x=1024,
        y=4,
        mfu=0.4,
    )
    assert bool(whole.cp_implied) and bool(joined.cp_implied)
    _assert_same(whole, joined)


def test_a_grid_in_blocks_refuses_the_first_layout_the_whole_grid_refuses(monkeypatch):
    # FSDP 15 x TP 8 on 128 GPUs, from the 1,500th layout on: the third block refuses it
    x = np.where(np.arange(2000) < 1500, 16, 15)
    keywords = dict(
        model=MODELS["llama-3-8b"],
        chip=H100,
        slice_shape=(16, 8),
        batch=4e6,
        seq_len=8192,
        x=x,
        y=8,
    )
    refusals = []
    for block in (10**9, 700):
        monkeypatch.setattr(blocks, "BLOCK", block)
        with pytest.raises(InputError) as refused:
            estimate(**keywords)
        # the field, the rule and its nearest choice; what it got is the block's part of the array
        refusals.append((refused.value.field, str(refused.value).split("; got")[0]))
    assert refusals[0] == refusals[1]
    assert refusals[0][0] == "x"


def test_a_block_of_fractions_after_a_block_of_whole_numbers_keeps_the_fractions(monkeypatch):
    @dataclasses.dataclass(frozen=True)
    class Out:
        value: np.ndarray

    def halves(workload):  # whole numbers below 1,000 tokens, fractions above
        b = workload.batch
        return Out(b.astype(int) if b[0] < 1000 else b / 2)

    monkeypatch.setattr(blocks, "BLOCK", 4)
    batch = np.array([100.0, 200, 300, 400, 1001, 1003, 1005, 1007])
    workload = Workload(MODELS["llama-3-8b"], batch)
    joined = blocks.in_blocks(halves, (8,), workload)
    assert joined.value.tolist() == [100, 200, 300, 400, 500.5, 501.5, 502.5, 503.5]
