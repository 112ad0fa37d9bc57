"""torch.compile (MODEL.md §F.5): fused memory-bound kernels and fewer activations kept, on the
stacks that can compile; a refusal on those that cannot."""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaling_widgets.cli import main
from scaling_widgets.cost import estimate, evaluate
from scaling_widgets.cost.stacks import COMPILING, REGISTRY
from scaling_widgets.measured import PUBLIC_RUNS, load_runs
from scaling_widgets.presets import HARDWARE, MODELS
from scaling_widgets.widgets.scenario import Scenario

# torchtitan's Llama 3.1 8B on 8 H100s, as its benchmark ran it eager and compiled
EIGHT_GPUS = dict(model=MODELS["llama-3-8b"], chip=HARDWARE["h100"], batch=16 * 8192, seq_len=8192,
                  slice_shape=(1, 8), x=8, y=1, remat="selective")  # fmt: skip


def _eager_and_compiled(**keywords):
    return (estimate(torch_compile=on, **keywords) for on in (False, True))


def test_compiled_the_memory_bound_work_shrinks_and_nothing_else_moves():
    # the same microbatches: compiled, the loss holds less, and one microbatch would fit
    eager, compiled = _eager_and_compiled(**EIGHT_GPUS, microbatches=2)
    assert float(compiled.step_time) < 0.95 * float(eager.step_time)
    memory = [float(e.step_breakdown["memory_bound"]) for e in (eager, compiled)]
    assert memory[1] < 0.5 * memory[0]
    for term in ("matmul", "fsdp_exposed", "optimizer"):
        assert float(compiled.step_breakdown[term]) == pytest.approx(
            float(eager.step_breakdown[term])
        )


def test_the_stacks_default_is_eager():
    default = estimate(**EIGHT_GPUS)
    eager = estimate(torch_compile=False, **EIGHT_GPUS)
    assert float(default.step_time) == float(eager.step_time)


def test_the_measured_eager_compiled_and_fp8_runs_come_out_in_their_order():
    runs = {run.id: run for path in (None, PUBLIC_RUNS) for run in load_runs(path)}
    for chips in (8, 128):
        ids = [f"TT-H100-L3-8B-n{chips}", f"TTP-H100-L3-8B-n{chips}-compile",
               f"TTP-H100-L3-8B-n{chips}-fp8"]  # fmt: skip
        steps = [float(evaluate(*runs[i].values).step_time) for i in ids]
        assert [runs[i].step_time for i in ids] == sorted((runs[i].step_time for i in ids),
                                                          reverse=True)  # fmt: skip
        assert steps == sorted(steps, reverse=True)


@settings(max_examples=40, deadline=None)
@given(
    batch=st.sampled_from([2**16, 2**18, 2**20, 2**22]),
    y=st.sampled_from([1, 2, 8]),
    remat=st.sampled_from(["none", "selective", "full"]),
    stack=st.sampled_from(COMPILING),
)
def test_compiling_never_slows_a_step_nor_grows_a_microbatchs_peak(batch, y, remat, stack):
    keywords = dict(model=MODELS["llama-3-8b"], chip=HARDWARE["h100"], batch=batch, seq_len=4096,
                    slice_shape=(2, 8), x=16 // y, y=y, remat=remat, stack=stack)  # fmt: skip
    eager, compiled = _eager_and_compiled(**keywords)  # each at its fastest microbatches
    assert float(compiled.step_time) <= float(eager.step_time)
    eager, compiled = _eager_and_compiled(microbatch_seqs=1, **keywords)
    assert float(compiled.peak.allocated) <= float(eager.peak.allocated)


def test_compiled_a_layer_keeps_its_norms_inputs_and_up_projections_only():
    keywords = dict(EIGHT_GPUS, remat="none", stack="deepspeed", microbatch_seqs=1)
    eager, compiled = _eager_and_compiled(**keywords)
    model = keywords["model"]
    # per token of a layer: the norms' outputs (2 A·D), the SwiGLU's activation (A·F) and the
    # SiLU's output its eager multiplication keeps (A·F) go
    per_token = 2 * 2 * model.d_model + 2 * 2 * model.d_ff
    tokens, layers = 8192, model.layers  # a microbatch of one sequence, every layer
    saved = float(eager.peak.activations - compiled.peak.activations)
    assert saved == pytest.approx(per_token * tokens * layers, rel=0.02)
    full = dict(keywords, remat="full")
    eager, compiled = _eager_and_compiled(**full)
    assert float(compiled.peak.activations) == pytest.approx(float(eager.peak.activations))


@pytest.mark.parametrize("y", [1, 2])
def test_compiled_torchtitans_op_policy_drops_the_mlps_output_no_backward_reads(y):
    # torchtitan's op-level policy saves every other matmul's output and the reduce-scatters';
    # eager its cache keeps them all, compiled the partitioner keeps only what a backward reads:
    # not the MLP's last matmul's output, A·D a token of the whole sequence at any TP (under TP a
    # partial sum before its reduce-scatter), while the reduce-scatter's own output stays (a
    # saved collective lived on through its wait until pytorch/pytorch#149652)
    keywords = dict(EIGHT_GPUS, x=8 // y, y=y, remat="selective:op", stack="fsdp2",
                    microbatch_seqs=1)  # fmt: skip
    eager, compiled = _eager_and_compiled(**keywords)
    D, layers, tokens = keywords["model"].d_model, keywords["model"].layers, 8192
    saved = float(eager.peak.activations - compiled.peak.activations)
    assert saved == pytest.approx(2 * D * tokens * layers)


@pytest.mark.parametrize("stack", sorted(set(REGISTRY) - set(COMPILING)))
def test_a_stack_that_fuses_its_own_kernels_refuses_compile_naming_those_that_compile(stack):
    with pytest.raises(ValueError, match=f"torch_compile must be off with {stack}.*fsdp2"):
        estimate(torch_compile=True, stack=stack, **EIGHT_GPUS)


def test_the_tpus_default_stack_refuses_compile():
    with pytest.raises(ValueError, match="torch_compile must be off with maxtext"):
        estimate(model=MODELS["llama-3-8b"], chip=HARDWARE["tpu-v5p"], batch=2**20, seq_len=4096,
                 torch_compile=True)  # fmt: skip


def test_the_panel_drops_compile_for_a_stack_or_chip_without_it_and_keeps_it_otherwise():
    s = Scenario(model="llama-3-8b", hardware="h100", batch=2**20, torch_compile=True)
    s.update(stack="deepspeed")
    assert s.torch_compile is True
    s.update(stack="megatron-lm")
    assert s.torch_compile is None
    s.update(stack=None, torch_compile=True)
    s.update(hardware="tpu-v5p")
    assert s.torch_compile is None
    assert Scenario.from_json(s.to_json()).torch_compile is None


def test_the_command_line_refuses_compile_on_maxtext_in_one_line_naming_the_flag(capsys):
    argv = ["estimate", "--model", "llama-3-8b", "--hardware", "tpu-v5p", "--batch", "4M"]
    with pytest.raises(SystemExit) as exit_info:
        main([*argv, "--torch-compile", "on"])
    err = capsys.readouterr().err.strip()
    assert exit_info.value.code == 2 and "\n" not in err
    assert "--torch-compile must be off with maxtext" in err
