"""GPU clusters (MODEL.md §B.5): NVLink inside a node, a NIC per GPU across nodes.

Worked numbers from the Scaling Book's GPU chapter, as MODEL.md §B.5 quotes them: on H100, DP/FSDP
is compute-bound above C/W = 9.9e14/4.5e11 = 2200 tokens per GPU inside a node and 9.9e14/4e11 ≈
2475 across nodes (8 x 50 GB/s per node); TP inside a node is compute-bound for Y < F/2200.
"""

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaling_widgets.cli import main
from scaling_widgets.cost import estimate
from scaling_widgets.presets import HARDWARE, MODELS

H100, L70 = HARDWARE["h100"], MODELS["llama-3-70b"]


def test_fsdp_needs_2200_tokens_per_gpu_inside_a_node_and_2475_across():
    inside = estimate(model=L70, chip=H100, batch=1e6, slice_shape=(1, 8), strategy="fsdp")
    across = estimate(model=L70, chip=H100, batch=1e6, slice_shape=(512, 8), strategy="fsdp")
    assert inside.critical_tokens_per_chip == pytest.approx(2200)
    assert across.critical_tokens_per_chip == pytest.approx(2475)
    assert across.crossover_batch / across.chips == pytest.approx(2475)  # the time model agrees


def test_tp_inside_a_node_is_limited_to_f_over_2200_and_across_nodes_is_slower():
    inside = estimate(model=L70, chip=H100, batch=4e6, slice_shape=(512, 8), x=512, y=8)
    assert inside.tp_limit == pytest.approx(L70.d_ff / 2200) and inside.my == 1
    # NCCL runs TP 16 over two nodes as 8 rings, one through each GPU's NIC: the node's 400 GB/s,
    # 0.889 of NVLink, not the GPU chapter's 1.78x (its rule counts only the half that crosses).
    # LLaMA-3 70B's TP 16 is then communication-bound: 16·C/(F·400 GB/s) = 1.38.
    two = estimate(model=L70, chip=H100, batch=8e6, slice_shape=(512, 8), x=256, y=16)
    assert two.my == pytest.approx(4e11 / 4.5e11)
    assert float(two.layer.comm_ratio("y")) == pytest.approx(16 * 9.9e14 / (L70.d_ff * 4e11))
    assert float(two.layer.comm_ratio("y")) > float(inside.layer.comm_ratio("y")) * 2
    four = estimate(model=L70, chip=H100, batch=8e6, slice_shape=(512, 8), x=128, y=32)
    assert four.my == two.my and four.layer.comm_ratio("y") > two.layer.comm_ratio("y")


GPUS = sorted(key for key, chip in HARDWARE.items() if chip.is_gpu)


@settings(max_examples=60, deadline=None)
@given(key=st.sampled_from(GPUS), nodes_log=st.integers(1, 6), y_log=st.integers(0, 6))
def test_growing_a_group_across_a_slower_tier_never_makes_it_faster(key, nodes_log, y_log):
    # A TP group (up to the 64 heads of LLaMA-3 70B) never gains bandwidth as it spreads over more
    # nodes: inside a node NVLink, across nodes at most the NICs of its GPUs there, never above
    # NVLink (MODEL.md §B.5)
    chip = HARDWARE[key]
    per_node = 1 << (chip.node_size.bit_length() - 1)  # GB200 NVL72 runs 64 of 72
    slice_shape = (1 << nodes_log, per_node)
    chips = slice_shape[0] * per_node
    y = min(1 << y_log, chips)

    def split(tp):
        return estimate(model=L70, chip=chip, batch=8e6, slice_shape=slice_shape, x=chips // tp,
                        y=tp)  # fmt: skip

    inside, across = split(min(y, per_node)), split(y)
    for e in (inside, across):
        assert 0 < float(e.mx) <= 1 and 0 < float(e.my) <= 1
    assert float(across.my) <= float(inside.my)
    # a layer's TP traffic over its compute grows with the group, Y·C/(F·W·M_Y)
    assert float(across.layer.comm_ratio("y")) >= float(inside.layer.comm_ratio("y"))


def test_a_data_group_across_pods_is_never_faster_than_inside_one():
    # on a TPU the data-center network links pods, slower than ICI: the same FSDP group over two
    # pods needs more tokens per chip, never fewer
    v5p = HARDWARE["tpu-v5p"]
    one = estimate(model=L70, chip=v5p, batch=4e6, slice_shape=(8, 8, 8), strategy="fsdp")
    two = estimate(model=L70, chip=v5p, batch=8e6, slice_shape=(8, 8, 8), pods=2, strategy="fsdp")
    assert v5p.dcn_bw < v5p.ici_bw
    assert two.critical_tokens_per_chip >= one.critical_tokens_per_chip


def test_data_parallel_across_nodes_with_tp_inside_still_needs_2475_per_gpu():
    e = estimate(model=L70, chip=H100, batch=4e6, slice_shape=(512, 8), x=512, y=8)
    # Each X group has one GPU per node: its slice goes through that GPU's own NIC.
    assert e.mx == pytest.approx(5e10 / 4.5e11)
    assert e.crossover_batch / e.chips == pytest.approx(2475)


# The NVLink domain of each GPU preset and the GPUs its pod has room for, as presets.py cites
# them: DGX systems of 8 GPUs with room for 32,768; GB200 NVL72 racks of 72 with room for 18,432.
NVLINK_DOMAIN = {"a100": 8, "a100-40gb": 8, "h100": 8, "h100-96gb": 8, "h800": 8, "h200": 8,
                 "b200": 8, "gb200-nvl72": 72, "gb300-nvl72": 72, "v100": 8}  # fmt: skip
ROOM = {"a100": 32_768, "a100-40gb": 32_768, "h100": 32_768, "h100-96gb": 32_768, "h800": 32_768,
        "h200": 32_768, "b200": 32_768, "gb200-nvl72": 18_432, "gb300-nvl72": 18_432,
        "v100": 32_768}  # fmt: skip


def test_every_gpu_preset_is_a_cluster_of_nodes():
    gpus = {key for key, chip in HARDWARE.items() if chip.is_gpu}
    assert gpus == set(NVLINK_DOMAIN)  # a new GPU preset needs its NVLink domain here
    assert {
        key for key, chip in HARDWARE.items() if chip.wraparound == "switched"
    } == gpus  # no torus on a GPU
    for key, n in NVLINK_DOMAIN.items():
        chip = HARDWARE[key]
        assert chip.node_size == n and chip.pod_shape == (ROOM[key] // n, n), key
        # between pods the NIC is the DCN; NVLink is faster
        assert chip.scaleout_bw == chip.dcn_bw < chip.ici_bw, key
        # FSDP inside one node moves over NVLink alone: compute-bound above C / W_NVLink tokens per
        # GPU.
        inside = estimate(model=L70, chip=chip, batch=1e6, slice_shape=(1, n), strategy="fsdp")
        assert inside.critical_tokens_per_chip == pytest.approx(chip.flops / chip.ici_bw), key


def test_cli_takes_chips_for_a_gpu_cluster(capsys):
    assert (
        main(
            [
                "estimate",
                "--model",
                "llama-3-70b",
                "--hardware",
                "h100",
                "--chips",
                "4096",
                "--batch",
                "4M",
                "--fsdp",
                "512",
                "--tp",
                "8",
            ]
        )
        == 0
    )
    out = capsys.readouterr().out
    assert "H100 512x8" in out and "Y inside a node (NVLink)" in out and "X across nodes" in out
    # 100 GPUs: 13 nodes cannot hold them evenly; 96 or 104 run (12 run as two nodes of 6)
    with pytest.raises(SystemExit):
        main(["estimate", "--model", "llama-3-70b", "--hardware", "h100", "--chips", "100",
              "--batch", "1M"])  # fmt: skip
    assert (
        "--chips must be a count the fewest nodes of 8 hold evenly, such as 96 or 104; got 100"
        in capsys.readouterr().err
    )


def test_an_all_reduce_inside_an_nvswitch_node_runs_through_the_switch_where_that_is_faster():
    # NVLS sends the array once and receives the sum once; a ring moves 2(n - 1)/n of it. On 8
    # H200s nccl-tests measured 482 GB/s of bus bandwidth with NVLS against 365 as a ring (the
    # rows of benchmarks/data/collectives.csv); the A100's NVSwitch has no NVLS.
    from scaling_widgets.cost.step.collectives import collective_time
    from scaling_widgets.cost.step.physics import PHYSICS

    def bus_bandwidth(chip, nvls):
        p, nbytes, n = PHYSICS[chip], 8 * 2**30, 8
        seconds = collective_time(nbytes=nbytes, group=n, bandwidth=HARDWARE[chip].ici_bw,
                                  efficiency=p.link_nvlink, latency=p.latency,
                                  nvls=p.link_nvls if nvls else 0.0)  # fmt: skip
        return float(nbytes / seconds * 2 * (n - 1) / n / 1e9)

    assert bus_bandwidth("h200", nvls=True) == pytest.approx(482, rel=0.1)
    assert bus_bandwidth("h200", nvls=False) == pytest.approx(365, rel=0.1)
    assert PHYSICS["a100"].link_nvls == 0 and PHYSICS["v100"].link_nvls == 0


def test_tp_without_sequence_parallelism_all_reduces_through_the_switch_with_it_rings():
    # The same bytes either way: two all-reduces a pass, or an all-gather and a reduce-scatter
    # for each (sequence parallelism), which NCCL runs as rings. On H100 the all-reduces go
    # through the switch and take less; on A100, whose switch cannot reduce, the same. (Megatron-LM
    # runs TP either way; torchtitan's always shards the sequence.)
    def tp_time(chip, sp):
        e = estimate(model=L70, chip=HARDWARE[chip], batch=2**20, seq_len=4096, slice_shape=(1, 8),
                     strategy="tp", sequence_parallel=sp, microbatches=1,
                     stack="megatron-lm")  # fmt: skip
        assert bool(e.layout.sequence_parallel) is sp
        return float(e.step_breakdown["tp_exposed"])

    assert tp_time("h100", sp=False) < 0.85 * tp_time("h100", sp=True)
    assert tp_time("a100", sp=False) == pytest.approx(tp_time("a100", sp=True), rel=1e-9)
