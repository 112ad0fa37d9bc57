"""Colours that read on light and dark pages, and layout rules that hold at any width.

Every colour has a light-page and a dark-page value, each at least 4.5:1 against its page
(WCAG AA for text, so also for the lines, markers and legend text drawn in it). The page picks
one through CSS variables: JupyterLab and Voila mark a dark theme with
``data-jp-theme-light="false"`` on the body. Where a colour trait cannot hold a CSS variable
(ipywidgets 7, as on Colab), the light value is used.
"""

from __future__ import annotations

import ipywidgets as w
from traitlets import TraitError

# name: (on a light page, on a dark page); checked in tests/widgets/test_theme.py
PALETTE = {
    "ink": ("#212121", "#e0e0e0"),
    "blue": ("#1f77b4", "#2791da"),
    "orange": ("#b65500", "#ff7f0e"),
    "green": ("#248424", "#2ca02c"),
    "red": ("#d62728", "#e26263"),
    "purple": ("#8c5cb8", "#a37cc6"),
    "brown": ("#8c564b", "#b57f74"),
    "pink": ("#ca2a99", "#e377c2"),
    "grey": ("#727272", "#8c8c8c"),
    "olive": ("#737415", "#bcbd22"),
    "cyan": ("#0f7f8a", "#17becf"),
    "indigo": ("#3949ab", "#8c9eff"),
    "teal": ("#00796b", "#26a69a"),
    "gold": ("#8a6d00", "#ffd54f"),
    "error": ("#b00020", "#ff7a7a"),
}
PAGES = {"light": "#ffffff", "dark": "#212121"}  # the lighter of JupyterLab Dark's two backgrounds


def _takes_variables() -> bool:
    """Whether this ipywidgets' colour trait accepts ``var(--name, fallback)`` (8 does, 7 not)."""
    try:
        w.ColorPicker(value="var(--sw-ink, #212121)")
    except TraitError:
        return False
    return True


VARIABLES = _takes_variables()


def color(name: str) -> str:
    """The colour ``name`` for a widget trait: the page's own where the trait allows it.

    Parameters
    ----------
    name : str
        A key of ``PALETTE``.

    Returns
    -------
    color : str
        ``var(--sw-<name>, <light value>)`` where ipywidgets' colour traits take CSS variables
        (ipywidgets 8), else the light value.
    """
    light = PALETTE[name][0]
    return f"var(--sw-{name}, {light})" if VARIABLES else light


def css_color(name: str) -> str:
    """The colour ``name`` for HTML we write: CSS always takes variables.

    Parameters
    ----------
    name : str
        A key of ``PALETTE``.

    Returns
    -------
    color : str
        ``var(--sw-<name>, <light value>)``.
    """
    return f"var(--sw-{name}, {PALETTE[name][0]})"


def _variables(page: int) -> str:
    return " ".join(f"--sw-{name}: {pair[page]};" for name, pair in PALETTE.items())


CSS = f"""
:root {{ {_variables(0)} }}
body[data-jp-theme-light="false"] {{ {_variables(1)} }}
/* Rows wrap rather than squeeze: no control shrinks below the width it was given. */
.sw-panel .widget-hbox {{ flex-wrap: wrap; }}
.sw-panel .widget-hbox > .widget-inline-hbox, .sw-panel .widget-hbox > .widget-button,
.sw-panel .widget-hbox > .widget-toggle-buttons,
.sw-panel .widget-hbox > .widget-html {{ flex-shrink: 0; }}
.sw-panel .widget-toggle-button,
.sw-panel .widget-toggle-buttons .widget-toggle-button {{ overflow: visible; }}
.sw-panel .widget-html, .sw-panel .widget-html-content {{
  color: var(--jp-ui-font-color1, {PALETTE["ink"][0]}); }}
.sw-panel .widget-html-content {{ white-space: normal; overflow-wrap: anywhere; }}
.sw-panel .sw-axis-length input {{ width: 70px; flex: 0 0 70px; }}
.sw-panel .sw-plan-table .widget-html-content {{ line-height: 1.35; }}
.sw-panel .sw-plan-table .widget-html {{ margin: 1px 0; }}
/* Pinned scenarios side by side: the rows whose numbers differ stand out. */
.sw-panel .sw-compare-table th, .sw-panel .sw-compare-table td {{ padding: 1px 10px 1px 4px;
  text-align: left; vertical-align: top; }}
.sw-panel .sw-compare-table tr.sw-differs th {{ font-weight: bold;
  border-left: 3px solid var(--sw-orange, {PALETTE["orange"][0]}); }}
.sw-panel .sw-compare-table tr.sw-differs td {{ font-weight: bold; }}
/* Section titles in the page's own text colour (ipywidgets greys them below 4.5:1). */
.sw-panel .jupyter-widget-Collapse-header, .sw-panel .p-Collapse-header {{
  color: var(--jp-ui-font-color1, {PALETTE["ink"][0]}); }}
"""


class Style(w.HTML):
    """The stylesheet above, as an invisible widget: put one in any box of ours."""

    def __init__(self):
        super().__init__(f"<style>{CSS}</style>", layout=w.Layout(display="none"))
