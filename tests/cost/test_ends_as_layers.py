"""The embedding and the loss in a layer's place in the pipeline split (MODEL.md §A.6), as
Megatron-LM's --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split
give them: Llama 3 405B's 126 layers on 8 stages of 16 virtual ones run, the first and the last
stage hold a layer fewer, and the split reads and writes back through Megatron-LM's flags."""

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from scaling_widgets import fields
from scaling_widgets.cost import Cluster, InputError, Layout, Options, Workload, evaluate
from scaling_widgets.cost.step.pipeline import ENDS_AS_LAYERS, stage_layers
from scaling_widgets.launch import read_config, write_config
from scaling_widgets.presets import HARDWARE, MODELS
from scaling_widgets.text.memory import stage_name

LLAMA_405B = MODELS["llama-3-405b"]
H100_16K = Cluster(HARDWARE["h100"], (2048, 8))
BATCH = Workload(LLAMA_405B, 2048 * 8192, seq_len=8192)  # 2,048 sequences of 8,192
MEGATRON = Options(stack="megatron-lm")


def read_and_evaluate(text: str, chip, chips: int, framework: str):
    """A launch file's fields as read, and the estimate they give."""
    got, _ = read_config(text, chip=chip, chips=chips, pods=1, framework=framework)
    return got, evaluate(*fields.values(fields.checked({**fields.defaults(), **got}, tuple(got))))


def interleaved(ends: str, z: int = 8, v: int = 16, schedule: str = "interleaved") -> Layout:
    return Layout(
        x=16384 // (8 * z), y=8, z=z, zero=1, schedule=schedule, virtual_stages=v,
        sequence_parallel=True, ends_as_layers=ends,
    )  # fmt: skip


def test_126_layers_on_8_stages_of_16_refused_as_layers_alone_and_the_refusal_names_the_ends():
    with pytest.raises(InputError) as refused:
        evaluate(H100_16K, BATCH, interleaved("none"), MEGATRON)
    assert refused.value.field == "virtual_stages"
    assert "ends_as_layers 'both'" in str(refused.value)
    assert "128" in str(refused.value)  # what it got: 8 x 16 stages


def test_with_both_ends_as_layers_they_run_the_middle_stages_holding_16_layers():
    e = evaluate(H100_16K, BATCH, interleaved("both"), MEGATRON)
    assert float(e.step_time) > 0 and np.isfinite(e.peak.reserved)
    # 126 + 2 slots over 128 chunks: one layer a chunk, 16 a device, the ends' devices 15
    assert [int(n) for n in stage_layers(layers=126, stages=8, virtual_stages=16,
                                         ends_as_layers="both")] == [15, 16, 15]  # fmt: skip


def test_the_ends_as_layers_take_the_output_layer_off_the_critical_stage():
    """126 layers on 8 stages, 1F1B: as layers alone every stage is charged 16 and the last
    runs the output layer and the loss beside them. With the ends as layers, 128 slots: 16 on a
    middle stage, 15 and the output layer on the last, which is lighter than a layer. The step
    is shorter by the output layer's time, and never shorter than 16 layers."""
    plain = evaluate(H100_16K, BATCH, interleaved("none", v=1, schedule="1f1b"), MEGATRON)
    both = evaluate(H100_16K, BATCH, interleaved("both", v=1, schedule="1f1b"), MEGATRON)
    assert [int(n) for n in stage_layers(layers=126, stages=8, ends_as_layers="both")] == [
        15,
        16,
        15,
    ]
    head = float(plain.step_breakdown["matmul"] - both.step_breakdown["matmul"])
    assert head > 0  # the output layer's matmuls left the busiest stage
    assert float(both.step_time) < float(plain.step_time)


@given(
    layers=st.integers(1, 200),
    stages=st.integers(1, 64),
    virtual=st.integers(1, 8),
    ends=st.sampled_from(tuple(ENDS_AS_LAYERS)),
    together=st.booleans(),
)
def test_every_layer_is_placed_and_no_device_holds_fewer_than_none(
    layers, stages, virtual, ends, together
):
    slots = layers + (stages > 1) * sum(ENDS_AS_LAYERS[ends])
    if stages * virtual > slots:
        return  # refused: a stage without a layer
    first, middle, last = (
        int(n)
        for n in stage_layers(
            layers=layers,
            stages=stages,
            virtual_stages=virtual,
            ends_as_layers=ends,
            ends_together=together,
        )  # fmt: skip
    )
    assert min(first, middle, last) >= 0
    if stages == 1:
        assert first == middle == last == layers
        return
    devices = stages - 1 if together else stages - 2  # the middle ones
    held = first + devices * middle + (0 if together else last)
    assert held >= layers  # every layer on a device; the busiest charged where it is uneven
    if ends == "none":  # as before: v·ceil(L/(Z·v)) on every device
        assert first == middle == last == virtual * -(-layers // (stages * virtual))


def test_megatron_flags_read_and_write_back_the_ends():
    script = (
        "torchrun pretrain_gpt.py --num-layers 126 --hidden-size 16384 --ffn-hidden-size 53248"
        " --num-attention-heads 128 --group-query-attention --num-query-groups 8 --swiglu"
        " --untie-embeddings-and-output-weights --vocab-size 128256 --seq-length 8192"
        " --tensor-model-parallel-size 8 --pipeline-model-parallel-size 8"
        " --num-virtual-stages-per-pipeline-rank 16 --account-for-embedding-in-pipeline-split"
        " --account-for-loss-in-pipeline-split --micro-batch-size 1 --global-batch-size 2048"
        " --use-distributed-optimizer --sequence-parallel --bf16"
    )
    chip = HARDWARE["h100"]
    got, e = read_and_evaluate(script, chip, 16384, "megatron")
    assert got["ends_as_layers"] == "both"
    assert int(e.z) == 8 and int(e.virtual_stages) == 16
    text = write_config("megatron", e)
    assert "--account-for-embedding-in-pipeline-split" in text
    assert "--account-for-loss-in-pipeline-split" in text
    back, _ = read_config(text, chip=chip, chips=16384, pods=1, framework="megatron")
    assert back["ends_as_layers"] == "both"
    # torchtitan's job file has no such key: it says so rather than drop it silently
    assert "the embedding and the loss as layers" in write_config("torchtitan", e)


TORCHTITAN_PP = """
[model]
name = "llama3"
flavor = "405B"

[training]
local_batch_size = 16
seq_len = 8192

[parallelism]
data_parallel_shard_degree = -1
tensor_parallel_degree = 8
pipeline_parallel_degree = 8
pipeline_parallel_schedule = "Interleaved1F1B"
pipeline_parallel_layers_per_stage = 1
pipeline_parallel_microbatch_size = 1
"""


@pytest.mark.parametrize(
    "less, ends, chunks",
    [("", "both", 16), ("first_stage_less_layers = 0\nlast_stage_less_layers = 0", "none", None)],
)
def test_torchtitans_split_counts_the_embedding_and_the_output_as_layers_by_default(
    less, ends, chunks
):
    """torchtitan's pipeline_parallel_first/last_stage_less_layers, 1 each by default: its split
    of 126 layers at one a stage is 128 stages, 16 a device on 8. Without them, 126 stages
    do not split over 8 devices, and the reader names the key."""
    text = TORCHTITAN_PP + "".join(f"pipeline_parallel_{line}\n" for line in less.splitlines())
    chip = HARDWARE["h100"]
    if chunks is None:
        with pytest.raises(InputError, match="pipeline_parallel_layers_per_stage"):
            read_config(text, chip=chip, chips=16384, framework="torchtitan")
        return
    got, e = read_and_evaluate(text, chip, 16384, "torchtitan")
    assert got["ends_as_layers"] == ends and got["virtual_stages"] == chunks
    written = write_config("torchtitan", e)
    assert "pipeline_parallel_layers_per_stage = 1" in written
    assert "less_layers" not in written  # torchtitan's default, not written
    assert "as layers in the pipeline split" not in written  # no "Cannot express" line


DEEPSEEK_V3 = MODELS["deepseek-v3"]
H800_2K = Cluster(HARDWARE["h800"], (256, 8))
DSV3_BATCH = Workload(DEEPSEEK_V3, 15360 * 4096, seq_len=4096)


def dsv3(**split) -> Layout:
    return Layout(z=16, ep=64, x=128, y=1, zero=1, **split)


def test_the_first_and_last_stages_given_layers_lighten_their_devices_and_the_step():
    """Megatron-LM's --decoder-first-pipeline-num-layers 3 and --decoder-last-pipeline-num-layers
    2 on DeepSeek-V3's 61 layers over 16 stages: the 14 between hold 4 each; the last no longer
    runs 4 layers and the output layer, so the step is the middle stages' and shorter."""
    assert [int(n) for n in stage_layers(layers=61, stages=16, first_layers=3, last_layers=2)] == [
        3,
        4,
        2,
    ]
    even = evaluate(H800_2K, DSV3_BATCH, dsv3(), MEGATRON)
    given = evaluate(H800_2K, DSV3_BATCH, dsv3(first_stage_layers=3, last_stage_layers=2), MEGATRON)
    assert float(given.step_time) < float(even.step_time)
    assert float(given.peak.reserved) < float(even.peak.reserved)


@pytest.mark.parametrize(
    "split, field, words",
    [
        (dict(first_stage_layers=40, last_stage_layers=40), "first_stage_layers", "leaves -19"),
        (dict(first_stage_layers=3, schedule="dualpipev"), "first_stage_layers", "share a device"),
        (dict(last_stage_layers=2, ends_as_layers="both"), "ends_as_layers", "'none' when"),
    ],
)
def test_stage_layers_that_cannot_run_are_refused_naming_the_field(split, field, words):
    with pytest.raises(InputError) as refused:
        evaluate(H800_2K, DSV3_BATCH, dsv3(**split), MEGATRON)
    assert refused.value.field == field and words in str(refused.value)


def test_megatron_reads_and_writes_the_first_and_last_stages_layers():
    script = (
        "torchrun pretrain_gpt.py --num-layers 61 --hidden-size 7168 --ffn-hidden-size 18432"
        " --num-attention-heads 128 --swiglu --untie-embeddings-and-output-weights"
        " --vocab-size 129280 --seq-length 4096 --tensor-model-parallel-size 1"
        " --pipeline-model-parallel-size 16 --decoder-first-pipeline-num-layers 3"
        " --decoder-last-pipeline-num-layers 2 --micro-batch-size 1 --global-batch-size 1024"
        " --use-distributed-optimizer --bf16"
    )
    got, e = read_and_evaluate(script, HARDWARE["h800"], 2048, "megatron")
    assert (got["first_stage_layers"], got["last_stage_layers"]) == (3, 2)
    text = write_config("megatron", e)
    assert "--decoder-first-pipeline-num-layers 3" in text
    assert "--decoder-last-pipeline-num-layers 2" in text
    assert "the first stage's 3 layers" in write_config("maxtext", e)  # said, not dropped


def test_the_report_names_a_middle_stage_when_it_is_the_busiest():
    e = evaluate(H100_16K, BATCH, interleaved("both"), MEGATRON)
    assert int(e.peak.stage) == 1
    assert "stage 2 of 8: the most layers" in stage_name(e)


def test_megatron_is_never_written_ends_as_layers_that_do_not_divide_over_its_stages():
    """32 layers and two ends are 34 slots: Megatron-LM asserts they divide over 4 stages."""
    e = evaluate(
        Cluster(HARDWARE["h100"], (8, 8)),
        Workload(MODELS["llama-3-8b"], 128 * 8192, seq_len=8192),
        Layout(x=8, y=2, z=4, zero=1, ends_as_layers="both"),
        MEGATRON,
    )
    text = write_config("megatron", e)
    assert "--account-for" not in text and "34 slots do not divide" in text


def test_the_busiest_device_is_charged_its_own_layers_and_ends_alone():
    """Llama 3 405B on 8 stages, both ends as layers, interleaved: a middle device holds 16
    layers and no embedding, and it is the busiest. Its weights are 16 layers', the embedding's
    less than on 1F1B's first device, which holds 16 layers and the embedding."""
    one_f_one_b = interleaved("none", v=1, schedule="1f1b")
    first_holds_embedding = evaluate(H100_16K, BATCH, one_f_one_b, MEGATRON)
    middle = evaluate(H100_16K, BATCH, interleaved("both"), MEGATRON)
    assert int(first_holds_embedding.peak.stage) == 0 and int(middle.peak.stage) == 1
    embedding = LLAMA_405B.vocab * LLAMA_405B.d_model / 8 * 2  # over TP 8, bf16 weights
    saved = float(first_holds_embedding.peak.weights - middle.peak.weights)
    assert saved == pytest.approx(embedding, rel=1e-6)


def test_a_v_on_two_stages_compares_its_second_device():
    """ZB-V on 2 stages of 2 chunks, LLaMA-2 13B's 40 layers and both ends as layers: 44 slots,
    22 a device. The first holds 20 layers and both ends, the second 22 layers: with a vocabulary
    of 32,000, the second is the busier, and the peak is its."""
    both = Layout(x=32, y=1, z=2, zero=1, schedule="zbv", virtual_stages=2,
                  ends_as_layers="both", microbatches=8)  # fmt: skip
    workload = Workload(MODELS["llama-2-13b"], 64 * 4096, seq_len=4096)
    e = evaluate(Cluster(HARDWARE["h100"], (8, 8)), workload, both, MEGATRON)
    assert int(e.peak.stage) == 1


@pytest.mark.parametrize("ends", tuple(ENDS_AS_LAYERS))
def test_dualpipes_first_device_holds_one_copys_first_stage_and_the_others_last(ends):
    """DualPipe: each of two copies splits S = ceil((L + e + l)/Z) slots a stage; device 0 holds
    the first stage of one (S − e layers) and the last of the other (S − l)."""
    embedding, loss = ENDS_AS_LAYERS[ends]
    slots = -(-(62 + embedding + loss) // 16)
    first, middle, _ = stage_layers(
        layers=62, stages=16, ends_as_layers=ends, ends_together=True, copies=2
    )
    assert 2 * first == (slots - embedding) + (slots - loss)
    assert 2 * middle == 2 * slots
