"""The palette reads on both pages: WCAG AA, 4.5:1, for every colour against its page."""

import pytest

from scaling_widgets.widgets.theme import CSS, PAGES, PALETTE, color, css_color


def luminance(hex_color: str) -> float:
    """WCAG 2 relative luminance of ``#rrggbb``."""
    channels = [int(hex_color[i : i + 2], 16) / 255 for i in (1, 3, 5)]
    linear = [c / 12.92 if c <= 0.03928 else ((c + 0.055) / 1.055) ** 2.4 for c in channels]
    return 0.2126 * linear[0] + 0.7152 * linear[1] + 0.0722 * linear[2]


def contrast(a: str, b: str) -> float:
    high, low = sorted((luminance(a), luminance(b)), reverse=True)
    return (high + 0.05) / (low + 0.05)


def test_contrast_of_a_known_pair():
    assert contrast("#000000", "#ffffff") == pytest.approx(21.0)
    assert contrast("#777777", "#ffffff") == pytest.approx(4.48, abs=0.01)


@pytest.mark.parametrize("page", ["light", "dark"])
@pytest.mark.parametrize("name", PALETTE)
def test_every_colour_reads_as_text_on_its_page(name, page):
    ours = PALETTE[name][0 if page == "light" else 1]
    assert contrast(ours, PAGES[page]) >= 4.5, (name, page, ours)
    if page == "dark":
        assert contrast(ours, "#111111") >= 4.5  # JupyterLab Dark's darker background too


def test_the_page_chooses_the_colour_and_without_a_theme_the_light_one_holds():
    assert f"--sw-blue: {PALETTE['blue'][0]};" in CSS and f"--sw-blue: {PALETTE['blue'][1]};" in CSS
    assert 'body[data-jp-theme-light="false"]' in CSS
    assert css_color("blue") == f"var(--sw-blue, {PALETTE['blue'][0]})"
    # ipywidgets 7 takes no variables
    assert color("blue") in (css_color("blue"), PALETTE["blue"][0])
