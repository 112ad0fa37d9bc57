"""The one check (cost/check.py, cost/placement.py): a layout that cannot run is refused with an
InputError naming the field, and the best split only picks layouts that can run (issue 10)."""

import json
import re

import pytest
from hypothesis import assume, given, settings
from hypothesis import strategies as st

from scaling_widgets.cli import main
from scaling_widgets.cost import REMAT_POLICIES, InputError, best_split, estimate
from scaling_widgets.presets import HARDWARE, MODELS

V5P, H100 = HARDWARE["tpu-v5p"], HARDWARE["h100"]
L7, L13, L70 = MODELS["llama-2-7b"], MODELS["llama-2-13b"], MODELS["llama-3-70b"]
CUBE = (16, 16, 16)


@pytest.mark.parametrize(
    "keywords, field, message",
    [
        # Half a token: no data replica gets a whole one, whatever the split.
        (dict(model=L13, batch=0.5), "batch", "batch must be at least"),
        (
            dict(model=L13, batch=0.5, slice_shape=(1, 1, 1), strategy="dp"),
            "batch",
            "at least 1 tokens",
        ),
        # 4M tokens of 32K sequences are 122: not one for each of 128 replicas, let alone 16
        # microbatches.
        (
            dict(
                model=L70,
                batch=4e6,
                seq_len=32768,
                slice_shape=CUBE,
                x=128,
                y=8,
                z=4,
                microbatches=16,
                cp=1,  # asked for: no context parallelism to split the sequences
            ),
            "batch",
            r"at least 67,108,864 tokens, a whole sequence of 32768 for each of the 128 data "
            r"replicas x 16 microbatches",
        ),
        # 976 sequences over 128 replicas are 7.6 each: at most 7 microbatches, not 1000.
        (
            dict(
                model=L70,
                batch=4e6,
                seq_len=4096,
                slice_shape=CUBE,
                x=128,
                y=8,
                z=4,
                microbatches=1000,
            ),
            "microbatches",
            r"microbatches must be at most the 7.63 sequences of 4096 each data replica gets",
        ),
        # 32 virtual stages x 4 stages = 128 chunks of 80 layers: 48 empty.
        (
            dict(
                model=L70,
                batch=16e6,
                seq_len=4096,
                slice_shape=CUBE,
                x=128,
                y=8,
                z=4,
                schedule="interleaved",
                virtual_stages=32,
                microbatches=8,
            ),
            "virtual_stages",
            r"such that Z·v is at most the model's 80 layers.*; got 32 x 4 stages",
        ),
        # TP 32 cannot split 40 attention heads.
        (
            dict(model=L13, batch=4e6, slice_shape=CUBE, x=128, y=32),
            "y",
            "y must be a TP degree dividing the model's 40 attention heads",
        ),
        # 64 stages of a 32-layer model.
        (
            dict(model=L7, batch=4e6, slice_shape=CUBE, x=64, y=1, z=64),
            "z",
            "z must be such that Z·v is at most the model's 32 layers: every stage needs one",
        ),
        # A million pods: far beyond the chips of any cluster.
        (dict(model=L13, batch=4e6, pods=10**6), "pods", "pods must be a whole number from 1 to"),
        # A step a billion times faster than the chips' peak.
        (
            dict(model=L13, batch=3e6, seq_len=4096, slice_shape=CUBE, measured_step_time=1e-9),
            "measured_step_time",
            "measured_step_time must be at least .* s, what this layout's FLOPs take at the chips' "
            "peak",
        ),
    ],
)
def test_a_layout_that_cannot_run_is_refused_naming_the_field(keywords, field, message):
    with pytest.raises(InputError, match=message) as err:
        estimate(chip=V5P, **keywords)
    assert err.value.field == field and str(err.value).startswith(f"{field} must be ")


def test_the_best_split_only_picks_a_split_that_can_run():
    # 732 sequences: FSDP 1024 x TP 4 (the token-level optimum, the chapter's example 16) runs with
    # each sequence split over 2 chips; TP 16 would not divide the 40 heads.
    chapter = dict(model=L13, chip=V5P, batch=3e6, slice_shape=CUBE, mfu=0.4)
    e = estimate(**chapter, seq_len=4096)
    assert (int(e.x), int(e.y), e.layout.cp, bool(e.cp_implied)) == (1024, 4, 2, True)
    token_level = estimate(**chapter)
    assert (int(token_level.x), int(token_level.y), token_level.layout.cp) == (1024, 4, 1)
    # Without context parallelism (CP 1 asked for), 1024 replicas would starve 292 of them: FSDP
    # 512 x TP 8 is the best that can run.
    whole = estimate(**chapter, seq_len=4096, cp=1)
    assert (int(whole.x), int(whole.y), bool(whole.cp_implied)) == (512, 8, False)


@pytest.mark.parametrize("batch", [5e5, 3e6, 16e6])
@pytest.mark.parametrize("mfu", [None, 0.4])
def test_the_split_chosen_is_the_fastest_legal_one_ties_to_the_chapters(batch, mfu):
    # Every legal split evaluated by hand: none is faster than the one chosen; at an MFU given the
    # compute-bound splits tie, and the chapter's pick (most headroom) is taken.
    base = dict(model=L13, chip=V5P, batch=batch, seq_len=4096, slice_shape=CUBE, mfu=mfu)
    chosen = estimate(**base)
    steps = {}
    for y in (1, 2, 4, 8):
        try:
            e = estimate(**base, x=4096 // y, y=y)
        except InputError:
            continue
        if e.fits:
            steps[(4096 // y, y)] = float(e.step_time)
    assert float(chosen.step_time) == pytest.approx(min(steps.values()))
    hardware = dict(flops=V5P.flops, ici_bw=V5P.ici_bw, dcn_bw=V5P.dcn_bw)
    chapters = best_split(batch=batch, d_model=L13.d_model, d_ff=L13.d_ff, slice_shape=CUBE,
                          heads=40, **hardware)  # fmt: skip
    if mfu is not None and chosen.compute_bound:
        assert (int(chosen.x), int(chosen.y)) == tuple(int(v) for v in chapters)


def _cli_json(args, capsys):
    code = main(["estimate", *args, "--json"])
    return code, json.loads(capsys.readouterr().out)


def test_cli_on_h100_picks_a_legal_split_or_says_what_batch_it_needs(capsys):
    args = ["--model", "llama-2-13b", "--hardware", "h100", "--batch", "3M"]
    # By default 1,024 GPUs (128 nodes): a legal split (TP dividing the 40 heads, a sequence each).
    code, data = _cli_json(args, capsys)
    assert code == 0 and data["chips"] == 1024 and 40 % data["layout"]["Y"] == 0
    # The preset's whole cluster (32,768 GPUs): TP at most 8 (a node, and 8 divides 40 heads)
    # leaves at least 4096 replicas, more than the 732 sequences of 4096. Each sequence is split
    # over CP GPUs (context parallelism); with CP 1 asked for, no split can run and the batch is
    # refused with what it would need.
    code, data = _cli_json([*args, "--chips", "32768"], capsys)
    X, CP = data["layout"]["X"], data["layout"]["CP"]
    assert code == 0 and CP > 1 and 3e6 * CP / (4096 * X) >= 1 > 3e6 * CP / 2 / (4096 * X)
    with pytest.raises(SystemExit) as exit_info:
        main(["estimate", *args, "--chips", "32768", "--cp", "1"])
    err = capsys.readouterr().err
    assert exit_info.value.code == 2 and "Traceback" not in err
    need = re.search(r"--batch must be at least ([\d,]+) tokens", err)
    assert need and int(need.group(1).replace(",", "")) > 3e6
    # On 4096 GPUs it runs, on a split that can: Y divides the heads, whole sequences per replica
    # of CP GPUs.
    code, data = _cli_json([*args, "--chips", "4096"], capsys)
    X, Y, P, CP = (data["layout"][k] for k in ("X", "Y", "P", "CP"))
    assert code == 0 and 40 % Y == 0 and 3e6 * CP / (4096 * X * P) >= 1
    assert X * Y == 4096


ALL_LAYOUTS = st.fixed_dictionaries(
    {
        "cluster": st.sampled_from(
            [(V5P, (4, 4, 4)), (V5P, (2, 2, 4)), (H100, (2, 8)), (H100, (4, 8))]
        ),
        "model": st.sampled_from([L7, L70]),
        "z": st.sampled_from([1, 2, 4]),
        "y": st.sampled_from([1, 2, 4, 8]),
        "per_stage": st.sampled_from([1, 2, 4]),
        "spare": st.integers(1, 4),  # sequences a microbatch: whole, as frameworks need
        "seq_len": st.sampled_from([None, 512, 2048]),
        "remat": st.sampled_from(REMAT_POLICIES),
        "schedule": st.sampled_from(["gpipe", "1f1b"]),
        "mfu": st.floats(0.05, 1),
        "slower": st.floats(1, 3),
    }
)


@settings(max_examples=25, deadline=None)
@given(ALL_LAYOUTS)
def test_mfu_and_hfu_never_exceed_one(d):
    chip, shape = d["cluster"]
    chips = shape[0] * shape[1] * (shape[2] if len(shape) == 3 else 1)
    z, y = d["z"], d["y"]
    assume(chips % (z * y) == 0)
    x, m = chips // (z * y), d["per_stage"] * z
    T = d["seq_len"] or 1
    remat = d["remat"] if d["seq_len"] else "checkpoints"  # the other policies count sequences
    keywords = dict(
        model=d["model"],
        chip=chip,
        slice_shape=shape,
        batch=x * m * T * d["spare"],
        seq_len=d["seq_len"],
        x=x,
        y=y,
        z=z,
        microbatches=m,
        remat=remat,
        schedule=d["schedule"],
    )
    predicted = estimate(mfu=d["mfu"], **keywords)
    # The chips sustain the given MFU on every FLOP, recompute included; the bubble and exposed
    # communication only lengthen the step: HFU <= the given MFU, and MFU <= HFU.
    assert float(predicted.hfu) <= d["mfu"] * (1 + 1e-9)
    assert float(predicted.mfu) <= float(predicted.hfu) * (1 + 1e-9)
    # A measured step at or above the peak's is taken, and implies utilisations <= 1.
    at_peak = float(estimate(mfu=1.0, **keywords).step_time)
    measured = estimate(measured_step_time=at_peak * d["slower"], **keywords)
    assert (
        float(measured.mfu) <= float(measured.hfu) * (1 + 1e-9) and float(measured.hfu) <= 1 + 1e-9
    )
