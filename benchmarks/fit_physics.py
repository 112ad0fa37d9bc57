"""Fit each chip's physics (MODEL.md §F.1) to its published microbenchmarks, and print it.

For every chip preset with rows in ``benchmarks/data/``, each fit minimises the relative error
robustly (a soft L1 loss: about the mean |error| that ``tests/cost/test_chip_physics.py``
checks):
- GEMMs: e_max and g_half. A chip measured only at large shapes cannot place g_half; it gets the
  median time constant g_half/C of the chips of its kind (GPU or TPU) that were measured at small
  shapes (a GEMM's fixed cost, the launch and the first wave, is the compiler's and the driver's
  more than the die's), and its own large GEMMs then place the curve's top;
- fused attention: a_max, s_half, H_half and the backward share;
- HBM: the median share of the datasheet's bandwidth the memory-bound kernels reached;
- the spread of identical chips' speed: the interquartile range of many chips' speeds on one
  kernel or training step, over 1.349 (a normal's standard deviation);
- collectives: per tier, the share of the bandwidth and the latency per step (across TPU slices
  the share alone: the rows are large messages).
What a chip has no rows for stays at ``physics.DATASHEET`` and is printed as such.

Run: ``pip install -e ".[fit]"`` then ``python benchmarks/fit_physics.py``. It asserts nothing;
``tests/cost/test_chip_physics.py`` checks the shipped numbers against the rows.
"""

from __future__ import annotations

import dataclasses

import numpy as np
from microbenchmarks import (
    CHIPS,
    LINK,
    NVLS_CHIPS,
    attention_predicted,
    attention_rows,
    collective_predicted,
    collective_rows,
    gemm_flops,
    gemm_predicted,
    gemm_rows,
    hbm_rows,
    hbm_share,
    mean_abs_error,
    speed_rows,
    speed_spread,
)
from scipy.optimize import least_squares

from scaling_widgets.cost.step.physics import DATASHEET, ChipPhysics


def _fit(residual, x0, lo, hi):
    return least_squares(residual, x0, bounds=(lo, hi), loss="soft_l1", f_scale=0.01).x


KNEE_FLOOR = 6.0  # log10 FLOPs: a GEMM of a megaFLOP runs at half speed on no chip


def fit_gemm(chip: str, physics: ChipPhysics, dtype: str = "bf16") -> tuple[ChipPhysics, bool]:
    """The GEMM curve in ``dtype``; and whether the rows could place its g_half (sizes spanning a
    decade); from large GEMMs alone only its top."""
    data = gemm_rows(chip, dtype)
    top, half = ("e_max", "g_half") if dtype == "bf16" else ("e_max_fp8", "g_half_fp8")
    if not data:
        return physics, False
    measured = np.array([float(r["tflops"]) for r in data])
    sizes = [gemm_flops(r) for r in data]
    small = max(sizes) >= 10 * min(sizes)  # a decade of sizes places the knee

    def residual(x):
        p = dataclasses.replace(physics, **{top: x[0], half: 10 ** x[1]})
        return np.array([gemm_predicted(r, p) for r in data]) / measured - 1

    if small:
        e, log_g = _fit(residual, [0.8, 9.5], [0.3, KNEE_FLOOR], [1.0, 13.0])
        if log_g > KNEE_FLOOR + 0.01:  # on its floor, the smaller GEMMs ran no slower: no knee
            return dataclasses.replace(physics, **{top: e, half: 10**log_g}), True
    return top_at_half(chip, physics, dtype), False


def top_at_half(chip: str, physics: ChipPhysics, dtype: str = "bf16") -> ChipPhysics:
    """The top of the GEMM curve that large GEMMs alone can place, at the curve's g_half as it
    stands (a chip's own, or its kind's once ``fill_gaps`` has set it)."""
    data = gemm_rows(chip, dtype)
    top, half = ("e_max", "g_half") if dtype == "bf16" else ("e_max_fp8", "g_half_fp8")
    measured = np.array([float(r["tflops"]) for r in data])

    def residual(x):
        p = dataclasses.replace(physics, **{top: x[0]})
        return np.array([gemm_predicted(r, p) for r in data]) / measured - 1

    return dataclasses.replace(physics, **{top: float(_fit(residual, [0.8], [0.3], [1.0])[0])})


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
        return np.array([attention_predicted(r, p) for r in data]) / measured - 1

    x = _fit(residual, [0.7, 2.5, 1.3, 0.8], [0.1, 0.0, -1.0, 0.3], [1.0, 5.0, 3.0, 1.5])
    return dataclasses.replace(
        physics, attention_max=x[0], attention_half=10 ** x[1],
        attention_head_half=10 ** x[2], attention_backward=x[3],
    )  # fmt: skip


def fit_collectives(chip: str, physics: ChipPhysics) -> ChipPhysics:
    """Each tier's share of its bandwidth and its latency a ring's step (NVLink or ICI inside,
    the NICs across)."""
    data = collective_rows(chip)
    changes = {}
    for tier in ("nvlink", "ici", "nic", "dcn"):
        mine = [c for c in data if c.tier == tier]
        if not mine:
            continue
        measured = np.array([c.seconds for c in mine])

        if tier == "dcn":  # large messages across slices: the share alone, at ICI's latency
            changes[LINK[tier]] = _dcn_share(mine, chip, physics)
            continue
        field = "latency_nic" if tier == "nic" else "latency"
        # NVLS's share where some all-reduce ran (or may have run) through the switch
        nvls = any(c.algorithm != "ring" for c in mine)

        def residual(x, mine=mine, measured=measured, field=field, link=LINK[tier], nvls=nvls):
            shares = {link: x[0], field: 10 ** x[1]} | ({"link_nvls": x[2]} if nvls else {})
            p = dataclasses.replace(physics, **shares)
            return np.array([collective_predicted(c, chip, p) for c in mine]) / measured - 1

        # a ring's step takes at least a microsecond: a hop and a synchronisation
        x0, lo, hi = [0.8, -5.5, 0.6][: 2 + nvls], [0.05, -6.0, 0.05][: 2 + nvls], [1.5, -2.0, 1.5]
        fitted = _fit(residual, x0, lo, hi[: 2 + nvls])
        changes[LINK[tier]] = fitted[0]
        changes[field] = 10 ** fitted[1]
        if nvls:
            changes["link_nvls"] = fitted[2]
    return dataclasses.replace(physics, **changes)


def _dcn_share(mine, chip: str, physics: ChipPhysics) -> float:
    """The share of the data-center network the rows reach: the time they took over the time at
    full bandwidth (a least-squares fit of one parameter, in logs)."""
    at_full = [
        collective_predicted(c, chip, dataclasses.replace(physics, link_dcn=1.0)) for c in mine
    ]
    return float(np.exp(np.mean(np.log(at_full) - np.log([c.seconds for c in mine]))))


# The curves, as groups of fields, and what each needs measured.
GROUPS = {
    "GEMM": ("e_max", "g_half"),
    "GEMM fp8": ("e_max_fp8", "g_half_fp8"),
    "attention": ("attention_max", "attention_half", "attention_head_half", "attention_backward"),
    "HBM": ("hbm_efficiency",),
    "NVLink": ("link_nvlink",),
    "NVLS": ("link_nvls",),
    "NIC": ("link_nic",),
    "ICI": ("link_ici",),
    "DCN": ("link_dcn",),
    "latency": ("latency",),
    "NIC latency": ("latency_nic",),
    "speed spread": ("speed_spread",),
}
DTYPE = {"GEMM": "bf16", "GEMM fp8": "fp8"}
GPU_ONLY, TPU_ONLY = ("NVLink", "NVLS", "NIC", "NIC latency"), ("ICI", "DCN")  # its tiers
# A chip whose own die was measured under another preset's name runs that kernel alike.
SAME_DIE = {"H200": "H100", "GB200": "B200"}
SAME_DIE_GROUPS = ("GEMM", "GEMM fp8", "attention")  # the kernels: the die's, not the board's


def fit_chip(chip: str) -> tuple[ChipPhysics, set[str]]:
    """A chip's curves fitted on its own rows, and the groups its rows measured (GEMM counts only
    if small shapes placed g_half)."""
    physics, placed = fit_gemm(chip, DATASHEET)
    physics, placed_fp8 = fit_gemm(chip, physics, "fp8")
    physics = fit_attention(chip, physics)
    shares = [hbm_share(r) for r in hbm_rows(chip)]
    if shares:
        physics = dataclasses.replace(physics, hbm_efficiency=float(np.median(shares)))
    if speed_rows(chip):
        physics = dataclasses.replace(physics, speed_spread=speed_spread(speed_rows(chip)))
    physics = fit_collectives(chip, physics)
    rows = collective_rows(chip)
    tiers = {c.tier for c in rows}
    measured = {
        "GEMM": placed,
        "GEMM fp8": placed_fp8,
        "attention": len(attention_rows(chip)) >= 4,
        "HBM": bool(shares),
        # the ring's share only from rows a ring ran (where NVLS won them all, it is unseen)
        "NVLink": any(c.tier == "nvlink" and _ring_ran(c, chip, physics) for c in rows),
        "NVLS": any(c.algorithm != "ring" for c in rows),
        "NIC": "nic" in tiers,
        "ICI": "ici" in tiers,
        "DCN": "dcn" in tiers,
        "latency": bool(tiers & {"nvlink", "ici"}),
        "NIC latency": "nic" in tiers,
        "speed spread": bool(speed_rows(chip)),
    }
    return physics, {group for group, seen in measured.items() if seen}


def _ring_ran(c, chip: str, physics: ChipPhysics) -> bool:
    """Whether a ring ran the row: so it says, or NCCL's choice and the ring the faster."""
    if c.algorithm != "default":
        return c.algorithm == "ring"
    ring = collective_predicted(dataclasses.replace(c, algorithm="ring"), chip, physics)
    return ring <= collective_predicted(c, chip, physics)


def fill_gaps(fitted: dict) -> dict[str, tuple[ChipPhysics, list[str]]]:
    """Each chip's curves with what its rows did not measure taken, in order, from its own die
    measured under another name (attention), else the median of the chips of its kind (GPU or
    TPU) that measured it (g_half as the time constant g_half/C), else ``DATASHEET``. A chip
    measured at large GEMMs only keeps its own e_max. Returns the curves and the notes."""
    out = {}
    for name, (physics, measured) in fitted.items():
        notes, changes = [], {}
        for group, fields in GROUPS.items():
            if group in measured or group in (GPU_ONLY if not CHIPS[name].is_gpu else TPU_ONLY):
                continue
            if group == "GEMM fp8" and not CHIPS[name].flops_fp8:
                continue  # no fp8 matmuls
            if group == "NVLS" and name not in NVLS_CHIPS:
                continue  # its switch does not reduce: its all-reduces are rings
            twin = SAME_DIE.get(name)
            kin = [n for n, (p, seen) in fitted.items()
                   if group in seen and CHIPS[n].is_gpu is CHIPS[name].is_gpu]  # fmt: skip
            if group in SAME_DIE_GROUPS and twin and group in fitted[twin][1]:
                kin = [twin]  # its own die's kernels, measured under the twin's name
            if not kin:
                notes.append(f"{group} datasheet")
                continue
            for f in fields:
                if f in ("e_max", "e_max_fp8") and gemm_rows(name, DTYPE[group]):
                    continue  # its own large GEMMs set the curve's top, refitted below
                values = [getattr(fitted[n][0], f) / _scale(n, f) for n in kin]
                changes[f] = float(np.median(values)) * _scale(name, f)
            notes.append(f"{group} of the {twin}'s die" if kin == [twin] else
                         f"{group} median of {', '.join(sorted(kin))}")  # fmt: skip
        physics = dataclasses.replace(physics, **changes)
        for group, dtype in DTYPE.items():
            if group not in measured and gemm_rows(name, dtype):  # its top, at its kind's knee
                physics = top_at_half(name, physics, dtype)
        out[name] = (physics, notes)
    return out


def _scale(chip: str, field: str) -> float:
    """g_half is carried across chips as a time, g_half/C (its dtype's peak); the rest as is."""
    peaks = {"g_half": CHIPS[chip].flops, "g_half_fp8": CHIPS[chip].flops_fp8}
    return peaks.get(field, 1.0)


def _errors(name: str, p: ChipPhysics) -> str:
    """Each curve's mean |error| against the chip's rows, and the rows' count."""
    gemm = [(gemm_predicted(r, p), float(r["tflops"])) for r in gemm_rows(name)]
    fp8 = [(gemm_predicted(r, p), float(r["tflops"])) for r in gemm_rows(name, "fp8")]
    attention = [(attention_predicted(r, p), float(r["tflops"])) for r in attention_rows(name)]
    collectives = [(collective_predicted(c, name, p), c.seconds) for c in collective_rows(name)]
    parts = {"GEMM": gemm, "fp8": fp8, "attention": attention, "collectives": collectives}
    text = ", ".join(f"{k} {mean_abs_error(v):.1%} over {len(v)}" for k, v in parts.items())
    return f"{text}, HBM rows {len(hbm_rows(name))}"


def main() -> None:
    filled = fill_gaps({name: fit_chip(name) for name in CHIPS})
    for name, (p, notes) in filled.items():
        print(f"# {name}: {_errors(name, p)}" + (f"; {'; '.join(notes)}" if notes else ""))
        fields = ", ".join(
            f"{f.name}={getattr(p, f.name):.4g}"
            for f in dataclasses.fields(p)
            if getattr(p, f.name) != getattr(DATASHEET, f.name)
        )
        print(f'    "{CHIPS[name].id}": ChipPhysics({fields}),')


if __name__ == "__main__":
    main()
