"""Context parallelism (MODEL.md §D.3): sequences split over CP chips of the data axis, the keys and
values they pass, and the layouts it makes possible."""

import math

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from scaling_widgets import estimate
from scaling_widgets.cost import InputError
from scaling_widgets.cost.transformer.context import (
    cp_seconds_per_token,
    kv_bytes_per_token,
    ring_hides,
)
from scaling_widgets.presets import HARDWARE, MODELS

H100, V5P, L405 = HARDWARE["h100"], HARDWARE["tpu-v5p"], MODELS["llama-3-405b"]
# Llama 3 405B at 128K (Grattafiori et al. 2024, Table 4): TP 8, CP 16, PP 16, DP 8 on 16,384 GPUs.
AT_128K = dict(
    model=L405,
    chip=H100,
    slice_shape=(2048, 8),
    batch=16e6,
    seq_len=131072,
    x=128,
    y=8,
    z=16,
    zero=1,
    microbatches=15,
    mfu=0.4,
)


def test_fewer_sequences_than_replicas_take_the_smallest_cp_that_keeps_them_whole():
    # 122 sequences of 128K over 128 replicas x 15 microbatches: 1,920 replica-microbatches need
    # each sequence split over 16 GPUs, the next power of two above 1,920/122.
    e = estimate(**AT_128K)
    assert (e.layout.cp, bool(e.cp_implied)) == (16, True)
    with pytest.raises(
        InputError,
        match="a whole sequence of 131072 .* \\(or split each sequence over chips:"
        " context parallelism, --cp\\)",
    ):
        estimate(**AT_128K, cp=1)  # asked for: refused
    e = estimate(**AT_128K, cp=16, cp_kind="all-gather")
    assert bool(e.fits) and float(e.memory.total) < H100.hbm_bytes
    assert not e.cp_implied


@given(cp=st.sampled_from([1, 2, 4, 8, 16]), kind=st.sampled_from(["ring", "all-gather"]))
def test_cp_never_changes_the_weights_per_chip(cp, kind):
    base = dict(AT_128K, seq_len=8192, batch=64e6)
    assert float(estimate(**base, cp=cp, cp_kind=kind).memory.params) == float(
        estimate(**base).memory.params
    )


def test_activations_per_chip_shrink_by_cp_for_the_same_replicas():
    # Llama 3's 8 data replicas of TP 8 x PP 16, each on 16 times the chips with CP 16: a chip holds
    # 1/16 of the tokens it held.
    one = estimate(
        **{**AT_128K, "slice_shape": (128, 8), "x": 8, "batch": 2e6, "microbatches": 1},
        remat="full",
    )
    cp = estimate(**{**AT_128K, "x": 128, "batch": 2e6, "microbatches": 1}, cp=16, remat="full")
    assert float(cp.memory.activations) == pytest.approx(float(one.memory.activations) / 16)
    # And where X is the same, CP changes nothing a chip holds: the same tokens, whoever splits
    # them.
    same = dict(AT_128K, seq_len=8192)
    a, b = estimate(**same, remat="full"), estimate(**same, cp=2, remat="full")
    assert float(a.memory.activations) == pytest.approx(float(b.memory.activations))


def test_the_ring_hides_exactly_when_the_spec_rule_holds():
    need, _ = ring_hides(chip=V5P, model=L405, seq_len=4096, cp=2)
    assert float(need) == pytest.approx(2 * 8 / 128 * V5P.flops / V5P.ici_bw)  # 2·(K/N_h)·C/W
    for s in (1024, 4096, 32768):
        for cp in (2, 4, 8):
            exposed = cp_seconds_per_token(
                chip=V5P, model=L405, cp=cp, kind="ring", seq_len=s, x=cp, mx=1
            )
            # Our count passes CP − 1 blocks: MODEL.md's s/CP against ours s/(CP − 1).
            assert (float(exposed) == 0) == (s / (cp - 1) >= float(need)), (s, cp)


def test_the_all_gather_moves_every_other_chips_keys_and_values():
    per_token = cp_seconds_per_token(
        chip=H100, model=L405, cp=16, kind="all-gather", seq_len=131072, y=8
    )
    kv = kv_bytes_per_token(L405, y=8)  # 2·K·H·2/Y bytes
    assert float(kv) == 2 * 8 * 128 * 2 / 8
    # CP 16 x TP 8 spans 16 nodes
    assert float(per_token) == pytest.approx(15 * float(kv) / H100.scaleout_bw)


@pytest.mark.parametrize("cp", [2, 4])
def test_torchtitans_flex_cp_keeps_the_keys_and_values_it_gathered_and_megatrons_does_not(cp):
    # Llama 3 8B on one node of H100s. Without recompute torchtitan's FlexAttention keeps the
    # whole sequence's K and V that its all-gather CP gathered; its op-level policy does not save
    # the gather, and TransformerEngine's all-gather keeps its shard: both gather again in the
    # backward, as a ring keeps its own block.
    L8 = MODELS["llama-3-8b"]
    given = dict(model=L8, chip=H100, slice_shape=(1, 8), batch=8 * 8192, seq_len=8192, mfu=0.4)
    cases = (("fsdp2", "none", cp - 1), ("fsdp2", "selective:op", 0), ("megatron-lm", "none", 0))
    for stack, remat, kept in cases:
        ring, gather = (
            estimate(**given, remat=remat, cp=cp, cp_kind=kind, stack=stack)
            for kind in ("ring", "all-gather")
        )
        lay = ring.layout
        tokens = given["batch"] / lay.x / lay.microbatches  # one microbatch in flight on a chip
        kv = 2 * 2 * L8.kv_heads * L8.head_dim / lay.y  # K and V, bf16, a token and layer
        extra = kept * kv * tokens * L8.layers
        assert float(gather.peak.activations - ring.peak.activations) == pytest.approx(extra)


def test_ulysses_needs_kv_heads_for_each_cp_chip():
    with pytest.raises(
        InputError, match="cp must be a CP degree dividing .* and the 1 KV heads of each TP shard"
    ):
        estimate(**AT_128K, cp=16, cp_kind="ulysses")
    e = estimate(
        **{**AT_128K, "y": 1, "x": 1024, "batch": 64e6, "microbatches": 2}, cp=8, cp_kind="ulysses"
    )
    assert float(e.layer.t_comms_cp) > 0


@given(
    shape=st.sampled_from([(4, 4, 4), (8, 8, 8), (16, 16, 16), (16, 20, 28)]),
    model=st.sampled_from(["llama-2-13b", "llama-3-70b", "gemma-7b"]),
    seq_len=st.sampled_from([2048, 4096, 8192, 32768]),
    sequences=st.integers(1, 4096),  # whole: a part is rounded off (tested apart)
    strategy=st.sampled_from(["fsdp", "fsdp+tp", "dp"]),
)
def test_a_token_level_layout_runs_with_sequences_and_keeps_the_chapters_layer(
    shape, model, seq_len, sequences, strategy
):
    # The chapter counts tokens. With sequences of any length the same layout runs (each
    # sequence split over the fewest chips that keep them whole), and its layer is the chapter's:
    # the same split, compute and traffic, thresholds and verdict.
    base = dict(model=MODELS[model], chip=V5P, slice_shape=shape, batch=sequences * seq_len,
                strategy=strategy, mfu=0.4)  # fmt: skip
    chips = math.prod(shape)
    # The chapter's layouts need a token a chip; sequences split evenly over at most gcd(N, T)
    # chips (on the 8,960 chips of a v5p pod, 256 of a sequence of 4096: 16 tokens a chip).
    assume(base["batch"] >= seq_len * chips / math.gcd(chips, seq_len))
    tokens = estimate(**base, seq_len=None)  # the chapter: tokens alone
    # Where the chapter's layout does not fit, the split chosen is one that fits with more
    # microbatches (tested apart): the chapter's layer is compared where it can run.
    assume(bool(tokens.fits))
    e = estimate(**base, seq_len=seq_len)
    cp = e.layout.cp
    assert cp >= 1 and e.batch * cp / (seq_len * int(e.x)) >= 1  # whole sequences per replica
    assert (int(e.x), int(e.y)) == (int(tokens.x), int(tokens.y))
    for part in ("math", "x", "y", "dcn"):
        assert getattr(e.layer, part) == pytest.approx(getattr(tokens.layer, part))
    assert bool(e.compute_bound) == bool(tokens.compute_bound)
    assert float(e.critical_tokens_per_chip) == pytest.approx(
        float(tokens.critical_tokens_per_chip), nan_ok=True
    )
    assert float(e.step_time) == pytest.approx(float(tokens.step_time))
