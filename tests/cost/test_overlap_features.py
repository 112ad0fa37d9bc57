"""A stack's features that hide communication (MODEL.md §F.2) and ZeRO-3's prefetch (§C.2): what
a user checks when they turn an overlap on or off, or split a replica's batch finer."""

from __future__ import annotations

import pytest

from scaling_widgets.cost import Cluster, InputError, Layout, Options, Workload, evaluate
from scaling_widgets.cost.hardware.nodes import gpu_slice
from scaling_widgets.cost.stacks import REGISTRY
from scaling_widgets.presets import HARDWARE, MODELS, PRECISIONS
from scaling_widgets.text.lines import plain
from scaling_widgets.text.step import step

H100 = HARDWARE["h100"]


def _run(*, features=None, stack="megatron-lm", zero=1, microbatches=None, x=64, y=8):
    cluster = Cluster(H100, gpu_slice(chips=x * y, node_size=8))
    workload = Workload(MODELS["llama-3-70b"], batch=512 * 8192, seq_len=8192,
                        precision=PRECISIONS["mixed-adam"])  # fmt: skip
    layout = Layout(strategy="fsdp+tp", x=x, y=y, zero=zero, sequence_parallel=True,
                    microbatches=microbatches, remat="full")  # fmt: skip
    return evaluate(cluster, workload, layout, Options(stack=stack, features=features))


def test_megatrons_overlaps_hide_what_they_name_and_nothing_else():
    off = _run(features="none").step_breakdown
    tp = _run(features="tp_comm_overlap").step_breakdown
    grads = _run(features="overlap_grad_reduce").step_breakdown
    both = _run(features="overlap_grad_reduce,overlap_param_gather").step_breakdown
    assert tp["tp_exposed"] < 0.5 * off["tp_exposed"]
    assert tp["dp_exposed"] == off["dp_exposed"]
    assert grads["dp_exposed"] < off["dp_exposed"] and grads["tp_exposed"] == off["tp_exposed"]
    assert both["dp_exposed"] < grads["dp_exposed"]
    # with every data-parallel overlap on, at least one layer's chunk still shows
    assert both["dp_exposed"] > 0


def test_a_stack_named_without_features_runs_its_releases_defaults_and_says_so():
    assert REGISTRY["megatron-lm"].default_features == ("overlap_p2p_comm",)
    default = _run()
    assert float(default.step_time) == float(_run(features="overlap_p2p_comm").step_time)


def test_deepspeeds_overlap_comm_hides_zero1s_reduction_and_holds_a_second_bucket():
    # off by default below ZeRO-3 (DeepSpeedZeroConfig.overlap_comm_valid)
    assert REGISTRY["deepspeed"].default_features == ()
    off, on = (_run(stack="deepspeed", features=f) for f in ("none", "overlap_comm"))
    default = _run(stack="deepspeed")
    assert default.step_breakdown["dp_exposed"] == off.step_breakdown["dp_exposed"]
    assert on.step_breakdown["dp_exposed"] < 0.5 * off.step_breakdown["dp_exposed"]
    assert float(on.peak.buffers) == pytest.approx(float(off.peak.buffers) + 1e9)
    # ZeRO-3's scatters hide as prefetched traffic, DeepSpeed's default there, said so
    zero3 = [_run(stack="deepspeed", zero=3, features=f) for f in ("none", "overlap_comm")]
    assert len({float(e.step_breakdown["fsdp_exposed"]) for e in zero3}) == 1
    said = plain(step(_run(stack="deepspeed", zero=3)))
    assert "overlaps on: overlap_comm (deepspeed's defaults" in said
    assert "overlaps on: none (deepspeed's defaults" in plain(step(default))


@pytest.mark.parametrize(
    "stack, features, field",
    [("megatron-lm", "overlap_grads", "features"), ("fsdp2", "tp_comm_overlap", "features")],
)
def test_a_feature_the_stack_does_not_have_is_refused_naming_the_ones_it_has(
    stack, features, field
):
    with pytest.raises(InputError) as err:
        _run(stack=stack, features=features, zero=3 if stack == "fsdp2" else 1)
    assert err.value.field == field
    if stack == "megatron-lm":
        assert "overlap_grad_reduce" in str(err.value)


def test_zero3_prefetch_exposes_only_what_exceeds_each_microbatchs_compute():
    # Llama 3 70B on 512 H100, FSDP 64 x TP 8, 8 sequences of 8,192 a replica: a layer's gathers
    # and scatter over the NIC take about as long as its compute on one sequence. Splitting the
    # replica's batch into 8 microbatches exposes some of it, never the whole traffic again.
    steps = {m: _run(stack="fsdp2", zero=3, microbatches=m) for m in (1, 2, 4, 8)}
    exposed = {m: float(e.step_breakdown["fsdp_exposed"]) for m, e in steps.items()}
    assert exposed[1] <= exposed[2] <= exposed[4] <= exposed[8]
    assert exposed[8] < 0.1 * float(steps[8].step_time)
    # and the default picks the fastest count that fits
    chosen = _run(stack="fsdp2", zero=3)
    fits = [e for e in steps.values() if bool(e.fits)]
    assert float(chosen.step_time) <= min(float(e.step_time) for e in fits) * (1 + 1e-9)


def test_tp_comm_overlap_hides_nothing_without_sequence_parallelism():
    # Megatron-LM runs --tp-comm-overlap only with --sequence-parallel
    def tp(sp):
        cluster = Cluster(H100, gpu_slice(chips=64, node_size=8))
        workload = Workload(MODELS["llama-3-70b"], batch=64 * 8192, seq_len=8192,
                            precision=PRECISIONS["mixed-adam"])  # fmt: skip
        layout = Layout(strategy="fsdp+tp", x=8, y=8, zero=1, sequence_parallel=sp, remat="full")
        options = Options(stack="megatron-lm", features="tp_comm_overlap")
        return float(evaluate(cluster, workload, layout, options).step_breakdown["tp_exposed"])

    assert tp(sp=True) < 0.5 * tp(sp=False) and tp(sp=False) > 0


def test_torchtitans_async_tp_hides_the_forwards_tp_collectives_and_needs_compile():
    # PyTorch's async TP fuses the forward's gathers and scatters into their matmuls, not the
    # backward's reduce-scatters of summed matmuls (pytorch/pytorch#149946): part of the TP
    # traffic stays, all of it the feature leaves off; and it runs only compiled
    def tp(features, compiled=True):
        cluster = Cluster(H100, gpu_slice(chips=512, node_size=8))
        workload = Workload(MODELS["llama-3-70b"], batch=512 * 8192, seq_len=8192,
                            precision=PRECISIONS["mixed-adam"])  # fmt: skip
        layout = Layout(strategy="fsdp+tp", x=64, y=8, zero=3, remat="full")
        options = Options(stack="fsdp2", features=features, torch_compile=compiled)
        return float(evaluate(cluster, workload, layout, options).step_breakdown["tp_exposed"])

    off, on = tp("none"), tp("async_tp")
    assert 0 < on < 0.6 * off  # the forward and the recompute: 8 of 12 collectives a layer
    assert tp(None) == off  # off in its release, as torchtitan's job config has it
    with pytest.raises(InputError, match="^features must be without async_tp unless torch_compile"):
        tp("async_tp", compiled=False)
