"""GPU clusters (SPEC B.5): NVLink inside a node, a NIC per GPU across nodes.

Worked numbers from the Scaling Book's GPU chapter, as SPEC B.5 quotes them: on H100, DP/FSDP is
compute-bound above C/W = 9.9e14/4.5e11 = 2200 tokens per GPU inside a node and 9.9e14/4e11 ≈ 2475
across nodes (8 x 50 GB/s per node); TP inside a node is compute-bound for Y < F/2200.
"""

import pytest

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


def test_tp_inside_a_node_is_limited_to_f_over_2200_and_penalised_across_nodes():
    inside = estimate(model=L70, chip=H100, batch=4e6, slice_shape=(512, 8), x=512, y=8)
    assert inside.tp_limit == pytest.approx(L70.d_ff / 2200) and inside.my == 1
    across = estimate(model=L70, chip=H100, batch=4e6, slice_shape=(512, 8), x=256, y=16)
    assert across.my == pytest.approx(5e10 / 4.5e11)  # one NIC sets the pace of the ring
    assert across.layer.t_comms_y == pytest.approx(2 * 9 * inside.layer.t_comms_y)  # 2x the bytes, 9x slower


def test_data_parallel_across_nodes_with_tp_inside_still_needs_2475_per_gpu():
    e = estimate(model=L70, chip=H100, batch=4e6, slice_shape=(512, 8), x=512, y=8)
    # Each X group has one GPU per node: its slice goes through that GPU's own NIC.
    assert e.mx == pytest.approx(5e10 / 4.5e11)
    assert e.crossover_batch / e.chips == pytest.approx(2475)


def test_every_gpu_preset_is_a_cluster_of_nodes():
    for key in ("a100", "h100", "h200", "b200", "gb200-nvl72"):
        chip = HARDWARE[key]
        assert chip.is_gpu and chip.pod_shape[1] == chip.node_size
    assert HARDWARE["gb200-nvl72"].node_size == 72


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
    with pytest.raises(SystemExit):
        main(["estimate", "--model", "llama-3-70b", "--hardware", "h100", "--chips", "12", "--batch", "1M"])
    assert "chips must fill whole nodes of 8 GPUs; got 12" in capsys.readouterr().err
