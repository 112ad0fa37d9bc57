"""Fit each chip's physics (MODEL.md §F.1) to its published microbenchmarks, and print it.

For every chip preset with rows in ``benchmarks/data/``:
- GEMMs: e_max and g_half, least squares on the log of the achieved TFLOP/s. A chip measured only
  at large shapes cannot place g_half; it gets the median time constant g_half/C of the chips of
  its kind (GPU or TPU) that were measured at small shapes: a GEMM's fixed cost (the launch and
  the first wave) is the compiler's and the driver's more than the die's;
- fused attention: a_max, s_half, H_half and the backward share, on the log of TFLOP/s;
- HBM: the median share of the datasheet's bandwidth the memory-bound kernels reached;
- collectives: per tier, the share of the bandwidth and the latency per step, on the log of the
  time.
What a chip has no rows for stays at ``physics.DATASHEET`` and is printed as such.

Run: ``pip install -e ".[fit]"`` then ``python benchmarks/fit_physics.py``. It asserts nothing;
``tests/cost/test_chip_physics.py`` checks the shipped numbers against the rows.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from microbenchmarks import (
    CHIPS,
    attention_predicted,
    attention_rows,
    collective_predicted,
    collective_rows,
    gemm_predicted,
    gemm_rows,
    hbm_rows,
    hbm_share,
    mean_abs_error,
)
from scipy.optimize import least_squares

from scaling_widgets.cost.step.physics import DATASHEET, ChipPhysics

LINK = {"nvlink": "link_nvlink", "nic": "link_nic", "ici": "link_ici", "dcn": "link_dcn"}


def _fit(residual, x0, lo, hi):
    return least_squares(residual, x0, bounds=(lo, hi)).x


def fit_gemm(chip: str, physics: ChipPhysics) -> tuple[ChipPhysics, bool]:
    """The GEMM curve; and whether the rows could place g_half (a GEMM under 1e10 FLOPs)."""
    data = gemm_rows(chip)
    if not data:
        return physics, False
    measured = np.array([float(r["tflops"]) for r in data])
    small = any(2 * float(r["M"]) * float(r["N"]) * float(r["K"]) < 1e10 for r in data)

    def residual(x):
        p = dataclasses.replace(physics, e_max=x[0], g_half=10 ** x[1])
        return np.log([gemm_predicted(r, p) for r in data]) - np.log(measured)

    if small:
        e, log_g = _fit(residual, [0.8, 9.5], [0.3, 6.0], [1.0, 13.0])
        return dataclasses.replace(physics, e_max=e, g_half=10**log_g), True
    e = float(np.exp(np.mean(np.log(measured))) * 1e12 / CHIPS[chip].flops)  # large: ~ e_max
    return dataclasses.replace(physics, e_max=min(e, 1.0)), False


def fit_attention(chip: str, physics: ChipPhysics) -> ChipPhysics:
    data = attention_rows(chip)
    if len(data) < 4:
        return physics
    measured = np.array([float(r["tflops"]) for r in data])

    def residual(x):
        p = dataclasses.replace(
            physics, attention_max=x[0], attention_half=10 ** x[1],
            attention_head_half=10 ** x[2], attention_backward=x[3],
        )  # fmt: skip
        return np.log([attention_predicted(r, p) for r in data]) - np.log(measured)

    x = _fit(residual, [0.7, 2.5, 1.3, 0.8], [0.1, 0.0, -1.0, 0.3], [1.0, 5.0, 3.0, 1.5])
    return dataclasses.replace(
        physics, attention_max=x[0], attention_half=10 ** x[1],
        attention_head_half=10 ** x[2], attention_backward=x[3],
    )  # fmt: skip


def fit_collectives(chip: str, physics: ChipPhysics) -> ChipPhysics:
    """Each tier's share of its bandwidth; the latency of the tier inside (NVLink or ICI)."""
    data = collective_rows(chip)
    changes = {}
    for tier in ("nvlink", "ici", "nic", "dcn"):
        mine = [c for c in data if c.tier == tier]
        if not mine:
            continue
        measured = np.log([c.seconds for c in mine])

        def residual(x, mine=mine, measured=measured):
            predicted = [collective_predicted(c, chip, x[0], 10 ** x[1]) for c in mine]
            return np.log(predicted) - measured

        share, log_latency = _fit(residual, [0.8, -5.0], [0.05, -7.0], [1.5, -2.0])
        changes[LINK[tier]] = share
        if tier in ("nvlink", "ici"):
            changes["latency"] = 10**log_latency
    return dataclasses.replace(physics, **changes)


def fit_chip(chip: str) -> tuple[ChipPhysics, bool]:
    physics, placed = fit_gemm(chip, DATASHEET)
    physics = fit_attention(chip, physics)
    shares = [hbm_share(r) for r in hbm_rows(chip)]
    if shares:
        physics = dataclasses.replace(physics, hbm_efficiency=float(np.median(shares)))
    return fit_collectives(chip, physics), placed


def _errors(name: str, p: ChipPhysics) -> str:
    """Each curve's mean |error| against the chip's rows, and the rows' count."""
    gemm = [(gemm_predicted(r, p), float(r["tflops"])) for r in gemm_rows(name)]
    attention = [(attention_predicted(r, p), float(r["tflops"])) for r in attention_rows(name)]
    collectives = [
        (collective_predicted(c, name, getattr(p, LINK[c.tier]), p.latency), c.seconds)
        for c in collective_rows(name)
    ]
    parts = {"GEMM": gemm, "attention": attention, "collectives": collectives}
    text = ", ".join(f"{k} {mean_abs_error(v):.1%} over {len(v)}" for k, v in parts.items())
    return f"{text}, HBM rows {len(hbm_rows(name))}"


def main() -> None:
    fitted = {name: fit_chip(name) for name in CHIPS}
    # A GEMM's fixed time, g_half / C, from the chips measured at small shapes, by kind.
    for kind in (True, False):
        taus = [p.g_half / CHIPS[n].flops for n, (p, placed) in fitted.items()
                if placed and CHIPS[n].is_gpu is kind]  # fmt: skip
        for name, (p, placed) in fitted.items():
            if not placed and CHIPS[name].is_gpu is kind and taus and gemm_rows(name):
                g_half = float(np.median(taus)) * CHIPS[name].flops
                e_max = p.e_max * 1.0  # large GEMMs only: the curve's top is theirs
                fitted[name] = (dataclasses.replace(p, g_half=g_half, e_max=e_max), False)
    for name, (p, placed) in fitted.items():
        note = "" if placed or not gemm_rows(name) else "; g_half from its kind's time constant"
        print(f"# {name}: {_errors(name, p)}{note}")
        fields = ", ".join(
            f"{f.name}={getattr(p, f.name):.4g}"
            for f in dataclasses.fields(p)
            if getattr(p, f.name) != getattr(DATASHEET, f.name)
        )
        print(f'    "{CHIPS[name].name}": ChipPhysics({fields}),')


if __name__ == "__main__":
    main()
