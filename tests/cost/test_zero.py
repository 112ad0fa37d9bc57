"""ZeRO stages on the data axis (MODEL.md §B.3), for memory and communication.

Source: Rajbhandari et al. 2020, "ZeRO: Memory Optimizations Toward Training Trillion Parameter
Models", Figure 1: Ψ = 7.5B parameters, N_d = 64 data-parallel ranks, mixed-precision Adam
(K = 12): 120 GB per device at stage 0 (baseline), 31.4 GB with P_os, 16.6 GB with P_os+g and
1.9 GB with P_os+g+p. Communication (sec. 7): stages 0-2 move 2Ψ per rank, stage 3 moves 3Ψ.
"""

import pytest

from scaling_widgets.cost import estimate, memory_per_chip
from scaling_widgets.presets import HARDWARE, MODELS, PRECISIONS


@pytest.mark.parametrize("stage, gigabytes", [(0, 120), (1, 31.4), (2, 16.6), (3, 1.9)])
def test_zero_paper_figure_1(stage, gigabytes):
    mem = memory_per_chip(
        params=7.5e9,
        layers=1,
        d_model=1,
        d_ff=1,
        batch=1,
        x=64,
        zero=stage,
        weight_bytes=2,
        grad_bytes=2,
        optimizer_bytes=12,
    )
    assert float(mem.params + mem.grads + mem.optimizer) / 1e9 == pytest.approx(gigabytes, abs=0.06)


def test_stage_3_moves_one_and_a_half_times_the_bytes_of_stages_0_to_2():
    m, chip = MODELS["llama-2-13b"], HARDWARE["tpu-v5p"]
    common = dict(
        model=m, chip=chip, batch=8e6, slice_shape=(16, 16, 16), precision=PRECISIONS["mixed-adam"]
    )
    moved = {
        stage: float(estimate(strategy="dp", zero=stage, **common).layer.t_comms_x)
        for stage in range(4)
    }
    assert moved[0] == moved[1] == moved[2]
    assert moved[3] == pytest.approx(1.5 * moved[0])
    fsdp = estimate(strategy="fsdp", **common)  # FSDP is stage 3
    assert fsdp.zero == 3 and float(fsdp.layer.t_comms_x) == pytest.approx(moved[3])


def test_zero_stages_shrink_memory_in_order():
    m, chip = MODELS["llama-2-13b"], HARDWARE["tpu-v5p"]
    common = dict(
        model=m, chip=chip, batch=8e6, slice_shape=(16, 16, 16), precision=PRECISIONS["mixed-adam"]
    )
    totals = [
        float(estimate(strategy="dp", zero=stage, **common).memory.total) for stage in range(4)
    ]
    assert totals == sorted(totals, reverse=True) and totals[0] > chip.hbm_bytes > totals[1]


def test_tp_with_zero_1_allreduces_the_gradients_instead_of_gathering_weights():
    common = dict(
        model=MODELS["llama-2-13b"],
        chip=HARDWARE["tpu-v5p"],
        batch=3e6,
        slice_shape=(16, 16, 16),
        x=1024,
        y=4,
    )
    zero3, zero1 = (
        estimate(strategy="fsdp+tp", **common),
        estimate(strategy="fsdp+tp", zero=1, **common),
    )
    assert float(zero1.layer.x[0]) == 0 and float(zero1.layer.x[1]) == pytest.approx(
        float(zero3.layer.x[1])
    )
    assert zero1.memory.params > zero3.memory.params and zero1.bottleneck in ("compute", "dp")
