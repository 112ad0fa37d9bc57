"""The corrections the chapter leaves out (MODEL.md §B.7) and the cautious "fits" (MODEL.md
§B.8)."""

import pytest

from scaling_widgets.cost import Exactness, estimate, layer_times
from scaling_widgets.presets import HARDWARE, MODELS

V5P, L13 = HARDWARE["tpu-v5p"], MODELS["llama-2-13b"]
HW = dict(flops=V5P.flops, ici_bw=V5P.ici_bw, dcn_bw=V5P.dcn_bw)


def test_ring_factor_moves_n_minus_1_over_n_of_the_array():
    plain = layer_times(strategy="dp", batch=1e6, d_model=4096, d_ff=16384, x=[2, 64], **HW)
    ring = layer_times(
        strategy="dp",
        batch=1e6,
        d_model=4096,
        d_ff=16384,
        x=[2, 64],
        exact=Exactness(ring_factor=True),
        **HW,
    )
    assert ring.t_comms_x.tolist() == pytest.approx((plain.t_comms_x * [1 / 2, 63 / 64]).tolist())


def test_a_tpu_group_without_wraparound_gets_half_the_bandwidth():
    # not whole cubes
    common = dict(model=L13, chip=V5P, batch=3e6, slice_shape=(2, 16, 16), strategy="fsdp")
    plain = estimate(**common)
    halved = estimate(exact=Exactness(halve_without_wrap=True), **common)
    assert not plain.wrap_x and float(halved.layer.t_comms_x) == pytest.approx(
        2 * float(plain.layer.t_comms_x)
    )
    cube = dict(common, slice_shape=(16, 16, 16))  # a ring: nothing changes
    assert float(
        estimate(exact=Exactness(halve_without_wrap=True), **cube).layer.t_comms_x
    ) == pytest.approx(float(estimate(**cube).layer.t_comms_x))


def test_a_latency_per_collective_makes_small_messages_cost_something():
    tiny = MODELS["llama-2-7b"]
    common = dict(model=tiny, chip=V5P, batch=1e5, slice_shape=(4, 4, 4), strategy="fsdp")
    plain = estimate(**common)
    slow = estimate(exact=Exactness(latency=20e-6), **common)
    # FSDP: 2 AllGathers forward, 2 AllGathers and 2 ReduceScatters backward, 20 µs each.
    assert float(slow.layer.t_comms_x - plain.layer.t_comms_x) == pytest.approx(6 * 20e-6)
    assert slow.crossover_batch > plain.crossover_batch


def test_fits_below_a_share_of_hbm_with_a_runtime_overhead():
    common = dict(model=L13, chip=V5P, batch=3e6, slice_shape=(16, 16, 16))
    e = estimate(**common)
    assert e.fits
    cautious = estimate(overhead_bytes=5e9, fits_below=0.05, **common)  # 1.95 + 5 GB > 4.8 GB
    assert float(cautious.memory.overhead) == 5e9 and not cautious.fits
