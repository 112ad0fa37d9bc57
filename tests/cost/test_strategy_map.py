"""The strategy map: each cell is the planner's first row for its batch and chips; the chapter's
thresholds on it; its axes and its refusals."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaling_widgets.cost import InputError
from scaling_widgets.cost.search.map_axes import batch_axis, chip_axis, chip_range, doubling
from scaling_widgets.cost.search.plan import plan
from scaling_widgets.cost.search.strategy_map import (
    FAMILIES,
    NONE_FITS,
    families,
    strategy_map,
)
from scaling_widgets.presets import HARDWARE, MODELS

H100, V5P = HARDWARE["h100"], HARDWARE["tpu-v5p"]


def _same_as_plan(m, row, column):
    """The cell's layout, step and MFU are those of the plan for its batch and chips."""
    keywords = m.plan_keywords(row, column)
    if not m.fits[row, column]:
        with pytest.raises(ValueError):
            plan(**keywords)
        return
    p = plan(**keywords)
    cell = m.layout(row, column)
    assert cell.pop("pods") == keywords["pods"]
    assert cell == p.layout(0)
    assert m.step_time[row, column] == pytest.approx(float(p.step_time[p.order[0]]), rel=1e-12)
    assert m.mfu[row, column] == pytest.approx(float(p.estimate(0).mfu), rel=1e-9)


MAPS = {
    # a dense model on GPUs, the planner's whole search
    "llama-3-8b on H100": dict(
        model=MODELS["llama-3-8b"], chip=H100, seq_len=8192,
        batches=[2**16, 2**19, 2**22, 2**25], chips=[8, 48, 512, 4096],
    ),
    # a TPU slice in every order of its axes, and whole pods over the data-center network
    "llama-2-13b on v5p": dict(
        model=MODELS["llama-2-13b"], chip=V5P, seq_len=2048, remat="checkpoints",
        batches=[2**17, 2**21, 2**24], chips=[64, 4096, 17920],
    ),
    # a mixture of experts: EP searched, folded over TP and not
    "mixtral on H100": dict(
        model=MODELS["mixtral-8x7b"], chip=H100, seq_len=4096, remat="selective",
        batches=[2**20, 2**23], chips=[64, 1024],
    ),
}  # fmt: skip


@pytest.mark.parametrize("name", MAPS)
def test_every_cell_is_the_plans_first_row(name):
    m = strategy_map(**MAPS[name])
    rows, columns = m.step_time.shape
    assert m.fits.any()
    for row in range(rows):
        for column in range(columns):
            _same_as_plan(m, row, column)


@settings(max_examples=6, deadline=None)
@given(st.data())
def test_a_sample_of_a_full_map_is_the_plans_first_row(data):
    m = FULL_MAP()
    row = data.draw(st.integers(0, m.step_time.shape[0] - 1))
    column = data.draw(st.integers(0, m.step_time.shape[1] - 1))
    _same_as_plan(m, row, column)


def _full_map():
    cache = {}

    def get():
        if "m" not in cache:
            cache["m"] = strategy_map(
                model=MODELS["llama-3-70b"], chip=H100, seq_len=8192, remat="none",
                schedule="1f1b", batches=batch_axis(8192, 2**18, 2**26, 12),
                chips=chip_axis(H100, 16, 16384, 12),
            )  # fmt: skip
        return cache["m"]

    return get


FULL_MAP = _full_map()


def test_the_map_reads_like_the_chapters_picture():
    # On a v5p slice, the chapter's thresholds: pure FSDP is compute-bound above alpha/M_X =
    # 2550/3 = 850 tokens a chip over the torus's three axes; FSDP + TP far lower.
    m = strategy_map(**MAPS["llama-2-13b on v5p"])
    one_pod = m.chips <= V5P.pod_chips
    assert m.thresholds["fsdp"][one_pod] / m.chips[one_pod] == pytest.approx(850)
    assert np.all(m.thresholds["fsdp+tp"][one_pod] < m.thresholds["fsdp"][one_pod])
    # At many tokens a chip, data parallelism wins, alone or with at most a pair of TP chips
    # (which halves the norms' memory-bound work at a near-tie of step times).
    family = m.family
    many = m.batches[None, :] / m.chips[:, None] > 4 * m.thresholds["fsdp"][:, None]
    for i, j in np.argwhere(many & m.fits):
        data_parallel = family[i, j] in (FAMILIES.index("dp"), FAMILIES.index("fsdp"))
        assert data_parallel or m.layout(i, j)["y"] <= 2, m.layout(i, j)


def test_families_take_the_most_elaborate_parallelism():
    got = families(y=[1, 1, 8, 8, 8, 1], z=[1, 1, 1, 4, 4, 1], zero=[0, 3, 3, 2, 2, 1],
                   ep=[1, 1, 1, 1, 8, 1], cp=[1, 1, 1, 1, 1, 4])  # fmt: skip
    assert [FAMILIES[f] for f in got] == ["dp", "fsdp", "tp", "pp", "ep_cp", "ep_cp"]


def test_cells_where_nothing_fits_or_runs_say_so():
    m = strategy_map(
        model=MODELS["llama-3-70b"], chip=H100, seq_len=8192, remat="none", schedule="1f1b",
        batches=[8192, 2**27], chips=[8, 4096],
    )  # fmt: skip
    assert m.family[0, 1] == NONE_FITS and m.runs[0, 1]  # 70B at 128M tokens on one node
    assert m.memory[0, 1] > H100.hbm_bytes  # the leanest layout's need
    assert m.layout(0, 1) is None
    # held to whole sequences (CP 1), one sequence cannot fill 4,096 GPUs
    m = strategy_map(
        model=MODELS["llama-3-70b"], chip=H100, seq_len=8192, remat="none", schedule="1f1b",
        cp=1, batches=[8192], chips=[4096],
    )  # fmt: skip
    assert not m.runs[0, 0] and np.isnan(m.memory[0, 0]) and m.family[0, 0] == NONE_FITS
    with pytest.raises(ValueError, match="cp must be a degree some layout"):
        plan(**m.plan_keywords(0, 0))


def test_bad_axes_are_refused_by_name():
    with pytest.raises(InputError, match=r"chips .*nearest: 4,096.*got 8192"):
        strategy_map(model=MODELS["llama-3-8b"], chip=V5P, seq_len=2048, batches=[2**20],
                     chips=[8192])  # fmt: skip
    with pytest.raises(InputError, match="batch"):
        strategy_map(model=MODELS["llama-3-8b"], chip=H100, seq_len=2048, batches=[-1],
                     chips=[8])  # fmt: skip
    with pytest.raises(InputError, match="chips"):
        strategy_map(model=MODELS["llama-3-8b"], chip=H100, seq_len=2048, batches=[2**20],
                     chips=[])  # fmt: skip
    with pytest.raises(InputError, match="batches"):
        batch_axis(8192, 10, 100)


@settings(max_examples=60, deadline=None)
@given(
    lo=st.floats(1, 1e9),
    span=st.floats(1, 1e4),
    count=st.integers(1, 64),
    seq_len=st.sampled_from([512, 2048, 8192]),
)
def test_batch_axes_are_whole_sequences_in_range(lo, span, count, seq_len):
    try:
        axis = batch_axis(seq_len, lo, lo * span, count)
    except InputError as err:
        assert err.field == "batches"
        return
    assert 1 <= len(axis) <= count and np.all(np.diff(axis) > 0)
    assert np.all((axis >= lo) & (axis <= lo * span)) and np.all(axis % seq_len == 0)


@settings(max_examples=60, deadline=None)
@given(chip=st.sampled_from(sorted(HARDWARE)), lo=st.integers(1, 2**16), count=st.integers(1, 30))
def test_chip_axes_are_slices_or_whole_pods(chip, lo, count):
    c = HARDWARE[chip]
    try:
        axis = chip_axis(c, lo, 4 * lo, count)
    except InputError as err:
        assert err.field == "chips"
        return
    assert 1 <= len(axis) <= count and np.all(np.diff(axis) > 0)
    m_rows = [n for n in axis if n <= c.pod_chips or n % c.pod_chips == 0]
    assert len(m_rows) == len(axis)


def test_default_axes():
    assert doubling(20).tolist() == [1, 2, 3, 4, 6, 8, 12, 16]
    assert chip_axis(V5P, *chip_range(V5P)).tolist()[-4:] == [8960, 17920, 26880, 35840]
    assert 8 in chip_axis(H100, *chip_range(H100)) and 12 not in chip_axis(H100, 8, 16)
