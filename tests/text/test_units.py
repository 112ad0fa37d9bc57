"""Human units at the edges."""

import pytest

from scaling_widgets.text import units


@pytest.mark.parametrize("text", ["3M", "3e6", "3000000", "3_000_000", "3m", " 3M "])
def test_the_same_batch_written_three_ways(text):
    assert units.parse_count(text) == 3e6


@pytest.mark.parametrize("text", ["-3M", "0", "3X", "", "M", "nan", "inf", "1e999"])
def test_malformed_counts_are_rejected(text):
    with pytest.raises(ValueError, match="--batch must be a number > 0 and < 1e30"):
        units.parse_count(text, "--batch")


def test_mesh_and_whole_numbers():
    assert units.parse_mesh("16x20x28") == (16, 20, 28)
    with pytest.raises(ValueError, match="--mesh must be axis lengths"):
        units.parse_mesh("16x0x16", "--mesh")
    with pytest.raises(ValueError, match="--pods must be a whole number from 1"):
        units.parse_whole("1.5", "--pods")


def test_output_units():
    assert units.seconds(0.3115) == "312 ms"
    assert units.seconds(17 * 86400) == "17.0 days"
    assert units.nbytes(96e9) == "96 GB"
    assert units.tokens(870_400) == "870K"
    assert units.count(13.0e9) == "13.0B" and units.count(671e9) == "671B"  # no "671."
    assert (
        units.sci(6.25e9) == "6.25e9"
        and units.sci(4.59e14) == "4.59e14"
        and units.sci(1e-5) == "1e-5"
    )
