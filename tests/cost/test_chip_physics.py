"""Each chip's shipped physics (MODEL.md §F.1) against the published microbenchmarks it was fitted
on (``benchmarks/data/``, every row cited there)."""

import importlib.util
import sys
from pathlib import Path

import pytest

from scaling_widgets.cost.step.physics import DATASHEET, PHYSICS
from scaling_widgets.presets import HARDWARE

_spec = importlib.util.spec_from_file_location(
    "microbenchmarks", Path(__file__).resolve().parents[2] / "benchmarks" / "microbenchmarks.py"
)
bench = sys.modules["microbenchmarks"] = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(bench)

CHIPS = sorted(bench.CHIPS)


def _physics(chip: str):
    return PHYSICS.get(bench.CHIPS[chip].id, DATASHEET)


@pytest.mark.parametrize("chip", [c for c in CHIPS if bench.gemm_rows(c)])
def test_each_chips_gemm_curve_matches_its_measured_gemms_within_10_percent(chip):
    physics = _physics(chip)
    pairs = [(bench.gemm_predicted(r, physics), float(r["tflops"])) for r in bench.gemm_rows(chip)]
    assert bench.mean_abs_error(pairs) <= 0.10


@pytest.mark.parametrize("chip", [c for c in CHIPS if bench.gemm_rows(c, "fp8")])
def test_each_chips_fp8_gemm_curve_matches_its_measured_fp8_gemms(chip):
    # GB200's two rows come from two machines (MAMF's sweep; a cuBLAS run on Google's A4X, 13 %
    # slower than MAMF's in bf16 too) and have the smaller GEMM 18 % faster: no curve rising with
    # size meets both within 10 % (10.2 % at its die's knee)
    physics = _physics(chip)
    rows = bench.gemm_rows(chip, "fp8")
    pairs = [(bench.gemm_predicted(r, physics), float(r["tflops"])) for r in rows]
    assert bench.mean_abs_error(pairs) <= (0.11 if chip == "GB200" else 0.10)


@pytest.mark.parametrize("chip", [c for c in CHIPS if bench.attention_rows(c)])
def test_each_chips_attention_curve_matches_its_fused_kernel_within_10_percent(chip):
    physics = _physics(chip)
    rows = bench.attention_rows(chip)
    pairs = [(bench.attention_predicted(r, physics), float(r["tflops"])) for r in rows]
    assert bench.mean_abs_error(pairs) <= 0.10


@pytest.mark.parametrize("chip", [c for c in CHIPS if bench.hbm_rows(c)])
def test_each_chips_hbm_share_is_the_middle_of_its_measured_kernels(chip):
    shares = sorted(bench.hbm_share(r) for r in bench.hbm_rows(chip))
    rounding = 1e-3  # the shipped share has four significant figures
    assert shares[0] * (1 - rounding) <= _physics(chip).hbm_efficiency
    assert _physics(chip).hbm_efficiency <= shares[-1] * (1 + rounding)
    pairs = [(_physics(chip).hbm_efficiency, share) for share in shares]
    assert bench.mean_abs_error(pairs) <= 0.12


@pytest.mark.parametrize("chip", [c for c in CHIPS if bench.collective_rows(c)])
def test_each_chips_collectives_match_their_measured_times(chip):
    # Messages of a megabyte and more, what a training step sends: one share and one latency a
    # tier meet every chip's sweeps within 10 %, the H200's and the v5e's only just.
    physics = _physics(chip)
    pairs = [(bench.collective_predicted(c, chip, physics), c.seconds)
             for c in bench.collective_rows(chip)]  # fmt: skip
    assert bench.mean_abs_error(pairs) <= 0.10


def test_every_chip_preset_has_physics_of_its_own_none_the_bare_datasheet():
    assert set(HARDWARE) == set(PHYSICS)  # one table of chips, keyed by id
    assert all(chip.id == key for key, chip in HARDWARE.items())
    assert all(physics != DATASHEET for physics in PHYSICS.values())


@pytest.mark.parametrize("chip", [c for c in CHIPS if bench.speed_rows(c)])
def test_each_chips_speed_spread_is_its_measured_chips_spread(chip):
    # the interquartile range of many identical chips' speeds, over 1.349 (a normal's SD)
    measured = bench.speed_spread(bench.speed_rows(chip))
    assert _physics(chip).speed_spread == pytest.approx(measured, rel=1e-3)
    assert 0.01 < _physics(chip).speed_spread < 0.05
