"""Human units at the edges."""

import pytest

from scaling_widgets.text import units


@pytest.mark.parametrize("text", ["3M", "3e6", "3000000", "3_000_000", "3000k", " 3M "])
def test_the_same_batch_written_three_ways(text):
    assert units.parse_count(text) == 3e6


@pytest.mark.parametrize("text", ["-3M", "0", "", "M", "nan", "inf", "1e999", "2e12"])
def test_malformed_counts_are_rejected_naming_the_limit(text):
    with pytest.raises(ValueError, match="--batch must be a number > 0 and at most 1e12"):
        units.parse_count(text, "--batch", high=1e12)


@pytest.mark.parametrize("text", ["3m", "3X", "3b", "3 tokens"])
def test_a_suffix_that_is_not_one_is_refused_rather_than_guessed(text):
    # "3m" could be milli as well as millions: it is refused, not read as 3M.
    with pytest.raises(ValueError, match="--batch takes the suffixes k, K, M, B, G, T"):
        units.parse_count(text, "--batch")


@pytest.mark.parametrize(("text", "value"), [("8k", 8192), ("16K", 16384), ("1M", 2**20)])
def test_sizes_count_in_powers_of_two(text, value):
    # a sequence of 8k is 8,192 tokens; 16k GPUs are 16,384
    assert units.parse_whole(text, "--seq-len") == value


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
