"""The peak a framework measures (MODEL.md §E): the development set of measured peaks and run/OOM
statements, one case by hand, and the properties the physics demands."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaling_widgets.cost import InputError, estimate, evaluate
from scaling_widgets.cost.calibrate import calibrate_memory, profile_from_json, profile_to_json
from scaling_widgets.cost.hardware.chip import Chip
from scaling_widgets.cost.schedules import in_flight_microbatches
from scaling_widgets.cost.stacks import STACKS
from scaling_widgets.cost.step.profiles import profile_for, with_stack
from scaling_widgets.cost.transformer.shapes import Model
from scaling_widgets.measured import PUBLIC_MEMORY, load_memory_cases
from scaling_widgets.presets import HARDWARE, MODELS, PRECISIONS

CASES = load_memory_cases()
PEAKS = [c for c in CASES if c.peak_bytes is not None]
GiB = 2**30


def predicted(case) -> float:
    """The peak as the source counted it: allocated or reserved bytes."""
    peak = evaluate(*case.values).peak
    return float(peak.allocated if case.measures == "allocated" else peak.reserved)


def test_the_measured_peaks_are_met_within_5_percent_on_average():
    errors = {c.id: predicted(c) / c.peak_bytes - 1 for c in PEAKS}
    print(f"\n  {'case':<32} {'measured GiB':>12} {'predicted':>10} {'error':>7}")
    for c in PEAKS:
        print(
            f"  {c.id:<32} {c.peak_bytes / GiB:>12.2f} {predicted(c) / GiB:>10.2f} "
            f"{errors[c.id]:>+7.1%}"
        )
    mean, worst = np.mean(np.abs(list(errors.values()))), max(np.abs(list(errors.values())))
    print(f"  mean |error| {mean:.1%}, max {worst:.1%} over {len(PEAKS)} peaks")
    assert len(PEAKS) == 12 and mean <= 0.05 and worst <= 0.10


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_every_run_and_oom_statement_agrees_with_the_verdict(case):
    # what ran fits or is tight; what ran out of memory does not fit
    e = evaluate(*case.values)
    allowed = ("fits", "tight") if case.outcome == "ran" else ("does not fit",)
    assert str(e.verdict) in allowed, f"{case.id}: {float(e.peak.reserved) / GiB:.1f} GiB reserved"


def test_each_source_reads_as_its_own_stack():
    stacks = {c.case["group"]: c.values[3].stack for c in CASES}
    assert stacks == {"TTA": "fsdp2", "SIMUMAX": "megatron-lm", "MCORE_CI": "megatron-lm"}


def test_the_v100_logits_case_by_hand():
    """GPT-2 1.5B on one 32 GB V100, 4 sequences of 1,024 at once, Megatron-LM, full recompute:
    the fp32 logits alone are 4·1024·50304·4 bytes, the allocation that ran out of memory."""
    v100 = Chip(
        "V100 SXM2 32GB",
        flops=1.25e14,
        hbm_bytes=34.08e9,
        hbm_bw=9e11,
        ici_bw=1.5e11,
        pod_shape=(4096, 8),
        dcn_bw=1.25e10,
        wraparound="switched",
        node_size=8,
        scaleout_bw=1.25e10,
    )
    gpt2 = Model(
        "GPT-2 1.5B",
        layers=48,
        d_model=1600,
        d_ff=6400,
        heads=16,
        kv_heads=16,
        head_dim=100,
        vocab=50304,
        gated=False,
        tied_embeddings=True,
    )
    e = estimate(
        model=gpt2,
        chip=v100,
        slice_shape=(1, 1),
        batch=4 * 1024,
        seq_len=1024,
        microbatches=1,  # the four at once, as the case ran (the default would accumulate)
        strategy="dp",
        precision=PRECISIONS["mixed-adam"],
        remat="full",
        stack="megatron-lm",
    )
    tokens, V, D, F, L = 4 * 1024, 50304, 1600, 6400, 48
    assert float(e.peak.logits) == tokens * V * (2 + 4)  # bf16 logits and their fp32 softmax
    assert 4 * 1024 * 50304 * 4 < float(e.peak.logits)
    params = L * (4 * D * D + 2 * D * F) + V * D  # attention, MLP, one (tied) embedding
    # fp32 main gradients
    assert float(e.peak.weights) == 2 * params and float(e.peak.grads) == 4 * params
    assert float(e.peak.optimizer) == 12 * params
    assert float(e.peak.activations) == tokens * 2 * D * L  # full recompute: each layer's input
    whole_layer = 2 * (4 * D + 2 * D + 2 * D + 2 * F)  # norms, Q, K, V, output, the MLP's two [F]
    # recomputed + its gradients
    assert float(e.peak.working_set) == pytest.approx(2 * tokens * whole_layer)
    # the forward's and the backward's cuBLAS workspaces, PyTorch's 8 MiB + 128 KiB before Hopper
    workspaces = 2 * (4096 * 1024 * 2 + 16 * 1024 * 8)
    assert float(e.peak.workspaces) == workspaces
    allocated = 18 * params + tokens * (2 * D * L + 2 * whole_layer + 6 * V) + workspaces
    assert float(e.peak.reserved) == pytest.approx(1.05 * allocated)
    assert bool(e.fits) == (1.05 * allocated <= 0.9 * 34.08e9)  # a tenth of HBM to spare


def test_interleaving_holds_more_on_the_first_stage_than_1f1b():
    """Measured (issue 15): 1F1B and interleaved schedules differ; interleaving holds more."""
    kw = dict(
        model=MODELS["llama-3-70b"],
        chip=HARDWARE["h100"],
        slice_shape=(8, 8),
        batch=64 * 4096,
        seq_len=4096,
        x=2,
        y=8,
        z=4,
        zero=1,
        microbatches=32,
        remat="selective",
        stack="megatron-lm",
    )
    one_f_one_b = estimate(**kw, schedule="1f1b")
    interleaved = estimate(**kw, schedule="interleaved", virtual_stages=4)
    assert float(interleaved.peak.activations) == pytest.approx(
        float(one_f_one_b.peak.activations) * (4 + 3 / 4) / 4
    )
    assert [
        float(in_flight_microbatches(schedule="1f1b", stage=r, stages=4, microbatches=32))
        for r in range(4)
    ] == [
        4,
        3,
        2,
        1,
    ]


@settings(deadline=None, max_examples=40, derandomize=True)
@given(
    st.sampled_from(list(STACKS)),
    st.sampled_from(["none", "selective", "full", "checkpoints"]),
    st.sampled_from([1, 2, 4, 8]),
    st.sampled_from(["gpipe", "1f1b"]),
)
def test_a_larger_microbatch_never_needs_less_memory(stack, remat, z, schedule):
    kw = dict(
        model=MODELS["llama-3-8b"],
        chip=HARDWARE["h100"],
        slice_shape=(8, 8),
        batch=256 * 4096,
        seq_len=4096,
        x=64 // z,
        y=1,
        z=z,
        zero=1,
        remat=remat,
        schedule=schedule,
        stack=stack,
    )
    # The same batch in fewer, larger microbatches: each microbatch 1, 2, 4 sequences a replica.
    peaks = [float(estimate(**kw, microbatches=m).peak.reserved) for m in (4 * z, 2 * z, z)]
    assert peaks == sorted(peaks)


@settings(deadline=None, max_examples=40, derandomize=True)
@given(st.sampled_from(list(STACKS)), st.sampled_from([0, 1, 3]), st.booleans())
def test_more_stages_never_put_more_weights_on_a_chip(stack, zero, interleaved):
    model = MODELS["llama-3-70b"]  # 80 layers: uneven over 32 stages; the data axis stays 8 GPUs
    v = 2 if interleaved else 1
    weights = []
    for z in (1, 2, 4, 8, 16, 32):
        if z * v > model.layers or (z == 1 and interleaved):
            continue
        e = estimate(
            model=model,
            chip=HARDWARE["h100"],
            slice_shape=(z, 8),
            batch=1024 * 4096,
            seq_len=4096,
            x=8,
            y=1,
            z=z,
            zero=zero,
            microbatches=4 * z,
            schedule="interleaved" if z > 1 and interleaved else "1f1b",
            virtual_stages=v if z > 1 else 1,
            stack=stack,
        )
        weights.append(float(e.peak.weights + e.peak.grads + e.peak.optimizer))
    assert weights == sorted(weights, reverse=True)


def test_flash_attention_is_the_default_and_its_switch_brings_the_scores_back():
    kw = dict(
        model=MODELS["llama-3-8b"],
        chip=HARDWARE["h100"],
        slice_shape=(1, 8),
        batch=8 * 4096,
        seq_len=4096,
        x=8,
        y=1,
        remat="none",
    )
    heads, s, layers, tokens = 32, 4096, 32, 4096  # a chip's microbatch: one sequence
    # The softmax of the scores, per token and layer: N_h·s scores kept at 2 bytes under
    # Megatron-LM's fused kernel; PyTorch's eager softmax keeps its fp32 output beside the bf16
    # copy the next matmul reads, 6 bytes (the H100's default stack). Its backward holds two
    # score-sized gradients at once, in the softmax's dtype: 2 x 2 bytes, or 2 x 4.
    for stack, each, grads in (("megatron-lm", 2, 4), (None, 6, 8)):
        flash = estimate(**kw, stack=stack)
        scores = estimate(**kw, stack=stack, flash_attention=False)
        assert float(scores.peak.activations - flash.peak.activations) == pytest.approx(
            tokens * each * heads * s * layers
        )
        assert float(scores.peak.working_set - flash.peak.working_set) == pytest.approx(
            tokens * grads * heads * s
        )
    # the step reads the same switch (MODEL.md §C.2)
    assert float(scores.step_time) > float(flash.step_time)
    with pytest.raises(InputError, match="flash_attention must be true, false or None"):
        estimate(**kw, flash_attention="yes")


def test_a_measured_peak_calibrates_the_profile_and_survives_json():
    case = PEAKS[0]
    profile = calibrate_memory(*case.values, peak_bytes=1.1 * case.peak_bytes)
    options = dataclasses.replace(
        case.values[3], profile=profile_from_json(profile_to_json(profile)), stack=None
    )
    assert float(evaluate(*case.values[:3], options).peak.allocated) == pytest.approx(
        1.1 * case.peak_bytes
    )
    with pytest.raises(InputError, match="measured_peak must be above .* GB, what the weights"):
        calibrate_memory(*case.values, peak_bytes=1e9)


def test_a_stack_replaces_every_memory_choice_of_the_chips_profile():
    h100 = profile_for(HARDWARE["h100"])  # torchtitan's FSDP2: fp32 weights
    megatron = with_stack(h100, "megatron-lm")
    assert (h100.weight_bytes, megatron.weight_bytes, megatron.grad_bytes) == (4.0, 2.0, 4.0)
    assert (h100.selective, megatron.selective) == ("alternate-matmuls", "attention")
    assert megatron.e_max == h100.e_max  # the efficiencies stay the chip's
    with pytest.raises(InputError, match="stack must be one of 'megatron-lm'.*; got 'jax'"):
        estimate(
            model=MODELS["llama-3-8b"], chip=HARDWARE["h100"], batch=1e6, seq_len=4096, stack="jax"
        )


def test_fsdp2_under_pipelining_keeps_its_stage_gathered_and_its_gradients_unsharded():
    kw = dict(
        model=MODELS["llama-3-70b"],
        chip=HARDWARE["h100"],
        slice_shape=(8, 8),
        batch=64 * 4096,
        seq_len=4096,
        x=8,
        y=2,
        z=4,
        zero=3,
        microbatches=8,
        remat="full",
    )
    fsdp2, megatron = estimate(**kw, stack="fsdp2"), estimate(**kw, stack="megatron-lm")
    model = MODELS["llama-3-70b"]
    layers = 20  # 80 over 4 stages
    p = fsdp2.params
    stage = (
        (p.total - p.embeddings) / model.layers * layers + model.vocab * model.d_model
    ) / 2  # over TP 2
    # bf16 gathered, fp32 gradients
    assert float(fsdp2.peak.buffers) == pytest.approx((2 + 4) * stage)
    # two layers ahead, one reduced
    assert float(megatron.peak.buffers) < float(fsdp2.peak.buffers) / 5


def test_deepspeeds_step_copies_its_gradient_partition_to_fp32_when_that_is_the_peak():
    # ZeRO-2 over 4 A100s, one sequence of 512 recomputed whole: the step, not the backward, peaks.
    # DeepSpeed's step makes an fp32 copy of the chip's gradient partition (stage_1_and_2.py)
    args = dict(model=MODELS["llama-2-13b"], chip=HARDWARE["a100"], slice_shape=(1, 4),
                batch=4 * 512, seq_len=512, x=4, y=1, zero=2, remat="full", stack="deepspeed",
                precision=PRECISIONS["mixed-adam"], microbatches=1)  # fmt: skip
    p = estimate(**args).peak
    psi = float(estimate(**args).params.total)
    assert float(p.optimizer_step) == pytest.approx(4 * psi / 4)
    assert float(p.grads) == pytest.approx(2 * psi / 4) and float(p.activations) == 0
    assert float(p.allocated) == pytest.approx(
        (2 + 2 / 4 + 12 / 4 + 4 / 4) * psi
        + float(p.buffers)
        + float(p.workspaces)
        + float(p.overhead)
    )
    # another stack makes no copy: its peak is the backward pass's
    fsdp = estimate(**{**args, "stack": "fsdp2"}).peak
    assert float(fsdp.optimizer_step) == 0 and float(fsdp.activations) > 0


def test_megatrons_step_copies_gradients_kept_in_16_bits_to_fp32_beside_them():
    # Megatron-LM's optimizer copies each gradient to fp32 at the step ("main_param.grad =
    # model_param.grad.float()"): the whole stage's without the distributed optimizer, its shard's
    # with it; fp32 main gradients (its default) need no copy. BigScience's 2021 log of a 40-layer
    # GPT on TP 4 x PP 4 reads 20 bytes a parameter allocated after the step: 2 + 2 + 4 + 12.
    args = dict(model=MODELS["llama-2-13b"], chip=HARDWARE["a100"], slice_shape=(1, 4),
                batch=4 * 512, seq_len=512, x=4, y=1, zero=0, remat="full", stack="megatron-lm",
                precision=PRECISIONS["mixed-adam"], microbatches=1)  # fmt: skip
    psi = float(estimate(**args).params.total)
    kept_16 = estimate(**args, grad_dtype="bf16").peak
    assert float(kept_16.optimizer_step) == pytest.approx(4 * psi)
    assert float(kept_16.grads) == pytest.approx(2 * psi) and float(kept_16.activations) == 0
    assert float(estimate(**args).peak.optimizer_step) == 0  # fp32 main gradients
    sharded = estimate(**{**args, "zero": 1}, grad_dtype="bf16").peak
    assert float(sharded.optimizer_step) == pytest.approx(4 * psi / 4)
    assert float(sharded.grads) == pytest.approx(2 * psi)  # its whole buffer, beside the copy
    # TransformerEngine's precision-aware optimizer (bf16 moments) reads them as they are
    aware = estimate(**{**args, "zero": 1}, grad_dtype="bf16", moment_dtype="bf16").peak
    assert float(aware.optimizer_step) == 0


def nanotron_1b(seq_len: int, zero: int) -> dict:
    """nanotron's benchmark model of 1.34B parameters on one node of 8 H100s, DP 8, one sequence
    a GPU (its result table's rows)."""
    model = Model("nanotron 1.34B", layers=16, d_model=2048, d_ff=8192, heads=32, kv_heads=32,
                  head_dim=64, vocab=131072, gated=True, tied_embeddings=True)  # fmt: skip
    return dict(model=model, chip=HARDWARE["h100"], slice_shape=(1, 8), batch=8 * seq_len,
                seq_len=seq_len, x=8, y=1, zero=zero, remat="none", stack="nanotron",
                precision=PRECISIONS["mixed-adam"], microbatches=1)  # fmt: skip


def test_nanotron_without_zero_holds_ddps_bucket_copy_of_the_gradients():
    # nanotron's result table: a ZeRO-0 step of its 1.34B model on 8 H100s allocates 25.07 GiB,
    # 20.1 bytes a parameter: bf16 weights, the fp32 gradient buffer, fp32 master and Adam, and
    # torch DDP's bf16 buckets (job 14113488). Under its ZeRO-1 there is no DDP, and the fp32
    # gradient buffer still covers every parameter.
    args = nanotron_1b(seq_len=4096, zero=0)
    psi = float(estimate(**args).params.total)
    p = estimate(**args).peak
    state = sum(float(getattr(p, part)) for part in ("weights", "grads", "optimizer", "buffers"))
    assert state / psi == pytest.approx(20.0)
    assert state / GiB == pytest.approx(25.07, rel=0.01)
    zero1 = estimate(**{**args, "zero": 1}).peak
    assert float(zero1.buffers) == 0 and float(zero1.grads) == pytest.approx(4 * psi)
    assert float(zero1.optimizer) == pytest.approx(12 * psi / 8)
    # one GPU: no DDP, no buckets; one replica in each of two pods: DDP across them
    assert float(estimate(**{**args, "slice_shape": (1, 1), "x": 1}).peak.buffers) == 0
    pods = estimate(**{**args, "slice_shape": (1, 1), "x": 1, "pods": 2, "batch": 2 * 4096}).peak
    assert float(pods.buffers) == pytest.approx(2 * psi)


def test_nanotrons_zero1_step_gathers_the_weights_through_flattened_copies():
    # After Adam its ZeRO-1 all-gathers the updated bf16 weights (all_gather_coalesced): the
    # outputs flattened and NCCL's flat output, 2 + 2 bytes a parameter, and the shard's input,
    # beside the fp32 gradient buffer of every parameter. Its result table allocates 14.76 GiB at
    # that step for the 1.34B model on 8 GPUs (job 13436292's ZeRO-1 twin): 2 + 4 + 12/8 + 4 + 2/8.
    args = nanotron_1b(seq_len=128, zero=1)
    psi = float(estimate(**args).params.total)
    p = estimate(**args).peak  # a short sequence: the step, not the backward, peaks
    assert float(p.optimizer_step) == pytest.approx((4 + 2 / 8) * psi)
    assert float(p.grads) == pytest.approx(4 * psi) and float(p.activations) == 0
    state = sum(float(getattr(p, k)) for k in ("weights", "grads", "optimizer", "optimizer_step"))
    assert state / GiB == pytest.approx(14.76, rel=0.01)
    # without ZeRO nothing is gathered: DDP's buckets instead
    assert float(estimate(**{**args, "zero": 0}).peak.optimizer_step) == 0


def test_foreach_adam_makes_a_temporary_of_the_optimizer_shard_at_the_step():
    # LLaMA-Factory #1158's run: a 13B model, DeepSpeed ZeRO-2 over 4 A100s, torch's AdamW
    args = dict(model=MODELS["llama-2-13b"], chip=HARDWARE["a100"], slice_shape=(1, 4),
                batch=4 * 1536, seq_len=1536, strategy="fsdp", x=4, zero=2, remat="full",
                stack="deepspeed", microbatches=1)  # fmt: skip
    fused = estimate(**args)
    foreach = estimate(**args, optimizer_impl="foreach")
    psi = float(fused.params.total)
    # DeepSpeed copies the shard's bf16 gradients to fp32 and frees them; Adam's √v then takes
    # 4 bytes a parameter of the shard beside the copy (LLaMA-Factory #1158's 12.94 GiB)
    assert float(fused.peak.optimizer_step) == pytest.approx(4 * psi / 4)
    assert float(fused.peak.grads) == pytest.approx(2 * psi / 4)
    assert float(foreach.peak.optimizer_step) == pytest.approx((4 + 4) * psi / 4)
    assert float(foreach.peak.grads) == 0
    assert float(foreach.peak.allocated - fused.peak.allocated) == pytest.approx(2 * psi / 4)
    # in bf16 moments, √v takes two bytes: no more than the bf16 gradients it outlives
    bf16 = estimate(**args, optimizer_impl="foreach", moment_dtype="bf16")
    assert float(bf16.peak.optimizer_step) == pytest.approx(4 * psi / 4)
    # and none where the backward pass stays the peak
    short = {**args, "stack": "fsdp2", "zero": 3, "remat": "none", "batch": 4 * 8 * 1536}
    assert float(estimate(**short, optimizer_impl="foreach").peak.reserved) == float(
        estimate(**short).peak.reserved
    )
    with pytest.raises(InputError, match="optimizer_impl must be"):
        estimate(**args, optimizer_impl="adamw")


def test_a_chunked_loss_holds_one_chunks_logits_and_the_hidden_states_fp32_gradient():
    # torchtitan's ChunkedLossWrapper (8 chunks in its 2026 configs): Llama 3 8B, 8,192 tokens
    args = dict(model=MODELS["llama-3-8b"], chip=HARDWARE["h100"], slice_shape=(1, 8),
                batch=8 * 8192, seq_len=8192, strategy="fsdp", x=8, stack="fsdp2")  # fmt: skip
    whole = float(estimate(**args).peak.logits)
    chunked = float(estimate(**args, loss_chunks=8).peak.logits)
    assert whole == 8192 * 128_256 * 12  # torchtitan's fp32 log-softmax, its gradients
    assert chunked == whole / 8 + 4 * 4096 * 8192
    with pytest.raises(InputError, match="loss_chunks must be"):
        estimate(**args, loss_chunks=0)


def test_a_loop_holding_two_steps_outputs_peaks_at_the_loss_with_both():
    # atorch's FSDP example: Llama 2 7B (32 KV heads of 128), 4 x 4,096 tokens a GPU, full
    # recompute, a loop that rebinds outputs = model(**batch) with use_cache on
    args = dict(model=MODELS["llama-2-7b"], chip=HARDWARE["a100"], slice_shape=(1, 8),
                batch=32 * 4096, seq_len=4096, strategy="fsdp", x=8, stack="fsdp2",
                remat="full")  # fmt: skip
    cache = 2 * 32 * 128 * 2 * (4 * 4096) * 32  # K and V, bf16, every token and layer: 8 GiB
    logits = 4 * (4 * 4096) * 32_000  # the outputs' logits.float()
    none, one, two = (estimate(**args, kv_caches_held=n).peak for n in (0, 1, 2))
    assert float(none.outputs_held) == 0.0
    # the step's own outputs, beside the backward's working set and gradients
    assert float(one.outputs_held) == cache + logits
    assert float(one.working_set) == float(none.working_set) > 0
    assert float(one.grads) == float(none.grads) > 0
    # at this step's loss, the last step's too: no working set, no gradients yet (zero_grad)
    assert float(two.outputs_held) == 2 * cache + logits
    assert float(two.working_set) == 0.0 and float(two.grads) == 0.0
    # without recompute the layers keep K and V: the step's own outputs add their logits only
    kept = estimate(**args | {"remat": "none"}, kv_caches_held=1)
    tokens = 32 * 4096 / 8 / float(kept.microbatches)
    assert float(kept.peak.outputs_held) == 4 * tokens * 32_000
    with pytest.raises(InputError, match="kv_caches_held must be"):
        estimate(**args, kv_caches_held=3)


def test_held_outputs_outlive_the_optimizer_step():
    # DeepSpeed ZeRO-2 copies its gradient partition to fp32 at the step, where the peak is:
    # a loop's outputs are still there
    args = dict(model=MODELS["llama-2-13b"], chip=HARDWARE["a100"], slice_shape=(1, 8),
                batch=8 * 512, seq_len=512, strategy="fsdp", x=8, stack="deepspeed", zero=2,
                remat="full", optimizer_impl="foreach")  # fmt: skip
    none, one = (estimate(**args, kv_caches_held=n).peak for n in (0, 1))
    assert float(none.optimizer_step) > 0 and float(one.optimizer_step) > 0
    assert float(one.outputs_held) > 0
    assert float(one.allocated) == float(none.allocated) + float(one.outputs_held)


def test_a_compiled_loss_keeps_the_bf16_logits_and_their_gradient():
    # torchtitan compiles the loss with the layers (compile.components, default "model" and
    # "loss"), or alone: the logits it is handed and their gradient, bf16, 4 bytes a logit
    args = dict(model=MODELS["llama-3-8b"], chip=HARDWARE["h100"], slice_shape=(1, 8),
                batch=8 * 8192, seq_len=8192, strategy="fsdp", x=8, stack="fsdp2")  # fmt: skip
    logits = 8192 * 128_256
    assert float(estimate(**args).peak.logits) == logits * 12  # eager
    assert float(estimate(**args, torch_compile=True).peak.logits) == logits * 4
    assert float(estimate(**args, compile_loss=True).peak.logits) == logits * 4  # alone
    # torchtitan before April 2025 compiled the layers only
    assert float(estimate(**args, torch_compile=True, compile_loss=False).peak.logits) == (
        logits * 12
    )
    chunked = estimate(**args, torch_compile=True, loss_chunks=8)  # each chunk's loss compiled
    assert float(chunked.peak.logits) == logits * 4 / 8 + 4 * 4096 * 8192
    with pytest.raises(InputError, match="compile_loss must be off with megatron-lm"):
        estimate(**args | {"stack": "megatron-lm"}, compile_loss=True)


def test_torchtitans_moe_keeps_the_fp32_copy_its_scores_weigh():
    # MoE.forward: routed_output.to(torch.float32) * top_scores: the multiplication keeps the fp32
    # copy for the scores' gradient; compiled, the cast fuses and the bf16 copy is kept;
    # Megatron-Core applies the scores inside the experts' activation
    from scaling_widgets.cost.step.profiles import profile_for
    from scaling_widgets.cost.transformer.kept import tensor_bytes

    h100, mixtral = HARDWARE["h100"], MODELS["mixtral-8x7b"]
    titan, megatron = profile_for(h100, "fsdp2"), profile_for(h100, "megatron-lm")
    compiled = dataclasses.replace(titan, torch_compile=True)
    assert [p.combine_kept(2.0) for p in (titan, compiled, megatron)] == [4.0, 2.0, 0.0]
    sizes = tensor_bytes(mixtral, 4096, 2, True, flash=True, combine_bytes=4.0)
    assert float(sizes["combine"]) == 4 * 2 * 4096 / 2  # top-2 copies of D, over TP 2
    assert float(tensor_bytes(MODELS["llama-3-8b"], 4096, 1, False, True, 4.0)["combine"]) == 0
    # kept without recompute, made again with the layer under full recompute
    args = dict(model=mixtral, chip=h100, slice_shape=(1, 8), batch=8 * 4096, seq_len=4096,
                strategy="fsdp", x=8, stack="fsdp2")  # fmt: skip
    routed = 4096 * 4 * 2 * 4096 * 32  # a chip's tokens x 4 bytes x k x D x 32 MoE layers
    none = estimate(**args, remat="none")
    assert (
        float(none.peak.activations)
        - float(estimate(**args, remat="none", torch_compile=True).peak.activations)
        >= routed / 2
    )  # the fp32 copy now bf16, the rest compiled away too
    assert float(estimate(**args, remat="full").peak.activations) < routed


def test_torchtitans_op_recompute_under_tp_keeps_the_unreduced_output_and_the_scatters():
    # Its save list holds aten.mm and reduce_scatter_tensor: under TP with sequence parallelism
    # the MLP's w2 (the 7th matmul, kept) is a partial sum of the whole sequence, A·D a token, and
    # both reduce-scatters' outputs are kept, A·D/t each; its DTensor matmuls keep the sequence
    # they gathered, so the layer run again holds the norms' outputs whole
    from scaling_widgets.cost.transformer.kept import kept_bytes, tensor_bytes
    from scaling_widgets.cost.transformer.recompute import policy

    llama, A, D = MODELS["llama-3-8b"], 2.0, 4096
    op = policy("selective:op")

    def kept(tp, gathered=False):
        sizes = tensor_bytes(llama, 8192, tp, tp > 1, True, A, gathered_inputs=gathered)
        return float(kept_bytes(op, sizes)), sizes

    alone, _ = kept(1)
    # without TP: the input, Q, V, the attention's output, w1's and w2's outputs
    assert alone == A * (D + 4096 + 1024 + 4096 + 14336 + D)
    for t in (2, 4, 8):
        split, sizes = kept(t, gathered=True)
        widths = 4096 + 1024 + 4096 + 14336  # Q, V, the attention's output, w1's
        assert split == pytest.approx(A * (D / t + widths / t + D + 2 * D / t))
        assert float(sizes["attention_norm"]) == float(sizes["mlp_norm"]) == A * D
        assert float(kept(t)[1]["mlp_norm"]) == A * D / t  # Megatron-LM gathers again
    # no policy but the op-level one keeps the partial sum or the scatters' outputs
    unkept = kept(4)[1] | {"mlp_unreduced": 0.0, "attention_reduced": 0.0, "mlp_reduced": 0.0}
    none = policy("none")
    assert float(kept_bytes(none, kept(4)[1])) == float(kept_bytes(none, unkept))
    args = dict(model=llama, chip=HARDWARE["h100"], slice_shape=(1, 8), batch=8 * 8192,
                seq_len=8192, strategy="fsdp+tp", x=4, y=2, remat="full",
                sequence_parallel=True)  # fmt: skip
    titan = profile_for(HARDWARE["h100"], "fsdp2")
    shards = dataclasses.replace(titan, gathered_inputs=False)
    whole, sharded = (estimate(**args, profile=p).peak for p in (titan, shards))
    # the two norms' outputs whole in the layer run again and in its gradients, a replica's two
    # sequences of 8,192 tokens
    gathered = 2 * 2 * A * D * (1 - 1 / 2) * 2 * 8192
    assert float(whole.working_set - sharded.working_set) == pytest.approx(gathered)


def test_fsdp_not_resharded_keeps_its_fp32_weights_sharded_and_a_bf16_copy_whole():
    # torchtitan's fsdp_reshard_after_forward "never" (FSDP1's SHARD_GRAD_OP), FSDP's ZeRO-2
    args = dict(model=MODELS["llama-3-8b"], chip=HARDWARE["h100"], slice_shape=(1, 8),
                batch=8 * 8192, seq_len=8192, strategy="fsdp", x=8, stack="fsdp2",
                remat="full")  # fmt: skip
    three, two = estimate(**args, zero=3), estimate(**args, zero=2)
    psi = float(two.params.total)
    assert float(two.peak.weights) == pytest.approx(4 * psi / 8) == float(three.peak.weights)
    assert float(two.peak.buffers) == pytest.approx(2 * psi)  # the whole model, bf16
    assert float(two.peak.grads) == float(three.peak.grads)  # reduce-scattered as ever
    # DeepSpeed's ZeRO-2 keeps its fp16 weights whole, its fp32 master in the optimizer
    ds = estimate(**args | {"stack": "deepspeed"}, zero=2)
    assert float(ds.peak.weights) == pytest.approx(2 * psi)


def test_the_swiglu_input_in_fp8_keeps_the_gate_and_up_projection_a_byte_each():
    # Megatron-Core's activation_func_fp8_input_store; DeepSeek-V3's MoE layers
    from scaling_widgets.cost.transformer.kept import tensor_bytes

    model = MODELS["llama-3-8b"]
    bf16 = tensor_bytes(model, 8192, 1, False, flash=True)
    fp8 = tensor_bytes(model, 8192, 1, False, flash=True, swiglu_fp8=True)
    assert fp8["mlp_gate"] == fp8["mlp_up"] == 14336 == bf16["mlp_up"] / 2
    assert {k: v for k, v in fp8.items() if k not in ("mlp_gate", "mlp_up")} == {
        k: v for k, v in bf16.items() if k not in ("mlp_gate", "mlp_up")
    }
    args = dict(model=model, chip=HARDWARE["h100"], slice_shape=(1, 8), batch=8 * 8192,
                seq_len=8192, strategy="fsdp", x=8, stack="megatron-lm", remat="none",
                microbatches=1)  # fmt: skip
    saved = (
        estimate(**args).peak.activations - estimate(**args, swiglu_input_fp8=True).peak.activations
    )
    assert float(saved) == pytest.approx(32 * 8192 * 2 * 14336)  # L layers, 2F bytes a token less


def test_the_mtp_module_weighs_on_the_output_layers_stage_only():
    # DeepSeek-V3 on 16 stages under 1F1B: the first stage, most microbatches in flight, is the
    # busiest; the MTP module sits with the output layer on the last (MODEL.md §D.1)
    import dataclasses

    v3 = MODELS["deepseek-v3"]
    args = dict(chip=HARDWARE["h100"], slice_shape=(256, 8), batch=15_360 * 4096, seq_len=4096,
                x=128, y=1, z=16, zero=1, ep=64, microbatches=120, remat="selective",
                stack="megatron-lm")  # fmt: skip
    first = estimate(model=v3, **args).peak
    without = estimate(model=dataclasses.replace(v3, mtp_layers=0), **args).peak
    assert int(first.stage) == 0
    assert float(first.weights) == float(without.weights)
    last = estimate(model=v3, **{**args, "remat": "full", "microbatches": 30}).peak
    bare = estimate(
        model=dataclasses.replace(v3, mtp_layers=0), **{**args, "remat": "full", "microbatches": 30}
    ).peak
    assert int(last.stage) == 15 and float(last.weights) > float(bare.weights)


def test_adams_and_the_weights_precision_are_refused_where_the_stack_has_not_them():
    args = dict(model=MODELS["llama-2-7b"], chip=HARDWARE["h100"], slice_shape=(1, 8),
                batch=8 * 1024, seq_len=1024, strategy="dp", zero=0, remat="full")  # fmt: skip
    with pytest.raises(InputError, match="optimizer_impl must be 'fused' with megatron-lm"):
        estimate(**args, stack="megatron-lm", optimizer_impl="foreach")
    with pytest.raises(InputError, match="weight_dtype must be unset with deepspeed"):
        estimate(**args, stack="deepspeed", weight_dtype="bf16")
    with pytest.raises(InputError, match="weight_dtype must be unset with fp8 weights"):
        estimate(**args, stack="fsdp2", weight_dtype="bf16", matmul_dtype="fp8", fp8_params=True)
    # a weight dtype is the master copy's: its gradients and Adam's moments take it too
    bf16 = estimate(**args, stack="fsdp2", weight_dtype="bf16").peak
    fp32 = estimate(**args, stack="fsdp2").peak
    for part in ("weights", "grads", "optimizer"):
        assert float(getattr(bf16, part)) == float(getattr(fp32, part)) / 2
    # a peak the optimizer step sets cannot calibrate the activations: refused by name
    e = estimate(**args, stack="fsdp2", optimizer_impl="foreach")
    assert float(e.peak.optimizer_step) > 0
    with pytest.raises(InputError, match="measured_peak must be of a layout whose activations"):
        calibrate_memory(e.cluster, e.workload, e.layout, e.options, peak_bytes=150e9)


def test_accumulating_unsharded_holds_the_whole_gradients_and_scatters_once_a_step():
    # LLaMA-2 7B under FSDP over 8 A100s, 8 microbatches of one sequence: FSDP's no_sync keeps
    # the whole model's gradients in bf16 from the second microbatch on (MODEL.md §E.1)
    args = dict(model=MODELS["llama-2-7b"], chip=HARDWARE["a100"], slice_shape=(1, 8),
                batch=64 * 512, seq_len=512, x=8, y=1, strategy="fsdp", remat="none",
                stack="fsdp2", microbatches=8)  # fmt: skip
    synced, unsharded = estimate(**args), estimate(**args, accumulate_unsharded=True)
    whole = 2 * float(synced.params.total)  # bf16, on every chip alike
    assert float(unsharded.peak.grads - synced.peak.grads) == pytest.approx(whole)
    # one reduce-scatter a step instead of eight: less of ZeRO-3's traffic is exposed
    assert float(unsharded.step_time) < float(synced.step_time)
    # one microbatch has nothing to accumulate; ZeRO-1 holds whole gradients anyway
    for same in ({"microbatches": 1}, {"strategy": "fsdp+tp", "zero": 1}):
        a, b = estimate(**{**args, **same}), estimate(**{**args, **same}, accumulate_unsharded=True)
        assert float(a.peak.reserved) == float(b.peak.reserved)
    with pytest.raises(InputError, match="accumulate_unsharded must be off with deepspeed"):
        estimate(**args | {"stack": "deepspeed"}, accumulate_unsharded=True)


def test_xla_recomputes_the_losss_fp32_copies_only_past_its_limit_and_never_the_bf16_logits():
    # MaxText keeps the fp32 logits and their exponentials for its loss (6 bytes a logit); XLA
    # recomputes them from the matmul's bf16 output only when the step is over the HBM limit
    args = dict(model=MODELS["gemma-7b"], chip=HARDWARE["tpu-v6e"], slice_shape=(16, 16),
                seq_len=8192, strategy="fsdp", x=256, remat="full", stack="maxtext",
                microbatches=1)  # fmt: skip
    limit, logits_a_sequence = HARDWARE["tpu-v6e"].usable_hbm, 8192 * MODELS["gemma-7b"].vocab
    one = estimate(**args, batch=256 * 8192).peak  # a sequence a chip: under the limit
    assert float(one.recomputed) == 0 and float(one.logits) == 6 * logits_a_sequence
    two = estimate(**args, batch=2 * 256 * 8192)  # two: over it, some copies recomputed
    assert float(two.peak.allocated) == pytest.approx(limit) and str(two.verdict) == "tight"
    assert float(two.peak.logits + two.peak.recomputed) == pytest.approx(12 * logits_a_sequence)
    assert 4 * logits_a_sequence < float(two.peak.logits) < 12 * logits_a_sequence
    eight = estimate(**args, batch=8 * 256 * 8192)  # eight: no recompute makes it fit
    assert float(eight.peak.logits) == pytest.approx(16 * logits_a_sequence)  # the bf16 logits
    assert str(eight.verdict) == "does not fit"
    # a GPU stack recomputes nothing for the limit's sake
    gpu = dict(args, chip=HARDWARE["h100"], slice_shape=(32, 8), stack="fsdp2")
    assert float(estimate(**gpu, batch=8 * 256 * 8192).peak.recomputed) == 0


def test_what_xla_recomputes_to_fit_leaves_the_optimizer_steps_phase_to_win_if_higher():
    # the backward fitted to the limit first, then the busier of it and the optimizer's step
    from scaling_widgets.cost.memory.peak import _busier_phase, _recompute_to_fit
    from scaling_widgets.cost.step.profiles import profile_for

    maxtext = with_stack(profile_for(HARDWARE["tpu-v6e"]), "maxtext")
    workload = type("W", (), {"precision": PRECISIONS["mixed-adam"]})()
    state = dict(weights=10e9, grads=30e9, optimizer=20e9, buffers=0.0)
    transient = dict(activations=10e9, working_set=1e9, logits=18e9)
    fitted, recomputed = _recompute_to_fit(state, transient, 0.0, 80e9, workload, maxtext)
    assert float(recomputed) == pytest.approx(9e9) and float(fitted["logits"]) == 9e9
    step = dict(grads=30e9, copy=28e9, temp=0.0, gather=0.0, keeps=False)  # a step phase of 88 GB
    parts = _busier_phase(state, step, fitted)
    assert sum(float(v) for v in parts.values()) == pytest.approx(88e9)


def test_a_source_that_prints_one_ranks_peak_is_read_on_that_device():
    # Megatron-LM's test of an uneven split, 2, 4, 4 and 2 layers: its CI prints the last rank's
    # peak, whose stage holds 2 layers and the output layer, lighter than a middle one of 4
    uneven = next(c for c in load_memory_cases(PUBLIC_MEMORY) if "pp4-2442" in c.id)
    peak = evaluate(*uneven.values).peak
    assert uneven.device == "output" and peak.stage != 3
    allocated, reserved = peak.on("output")
    assert allocated < peak.allocated and reserved < peak.reserved
    assert uneven.predicted == allocated  # the CI counts allocated bytes
    # one stage: the first device, the output layer's and the busiest are one
    e = estimate(model=MODELS["llama-3-8b"], chip=HARDWARE["h100"], slice_shape=(1, 8),
                 batch=8 * 8192, seq_len=8192, strategy="fsdp")  # fmt: skip
    busiest = (float(e.peak.allocated), float(e.peak.reserved))
    first, output = (tuple(map(float, e.peak.on(d))) for d in ("first", "output"))
    assert first == output == busiest
    # a pipeline: the busiest is one of them, the heavier
    piped = estimate(model=MODELS["llama-3-8b"], chip=HARDWARE["h100"], slice_shape=(1, 8),
                     batch=64 * 8192, seq_len=8192, strategy="fsdp+tp", x=2, y=1, z=4,
                     microbatches=8)  # fmt: skip
    ends = [float(piped.peak.on(d)[1]) for d in ("first", "output")]
    assert max(ends) <= float(piped.peak.reserved) and min(ends) < float(piped.peak.reserved)
