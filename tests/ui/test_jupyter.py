"""JupyterLab and Notebook 7: the quickstart notebook runs in a real kernel, and its panel renders
and responds."""

import pytest

from .helpers import (
    CHANGE,
    PANEL,
    WaitedTooLong,
    curve_paths,
    reading_problems,
    summary,
    wait_for_change,
    wait_for_element,
    wait_for_js,
    wait_for_panel,
    wait_for_text,
)
from .servers import ARTIFACTS

# Each front end: the server fixture, where the quickstart opens, what shows the kernel is ready.
FRONT_ENDS = {
    "JupyterLab": (
        "jupyterlab",
        "/lab/tree/01_quickstart.ipynb",
        ".jp-StatusBar-TextItem:has-text('| Idle')",
    ),
    "JupyterLab Dark": (
        "jupyterlab_dark",
        "/lab/tree/01_quickstart.ipynb",
        ".jp-StatusBar-TextItem:has-text('| Idle')",
    ),
    "Notebook 7": (
        "notebook7",
        "/notebooks/01_quickstart.ipynb",
        ".jp-KernelName:has-text('Python 3')",
    ),
}

# Notebook 7.6.5 logs this while loading any page, /tree included, with every extension of ours off.
NOT_OURS = {"Notebook 7": ("page error: Cannot read properties of undefined (reading 'schema')",)}


def run_all_cells(page, ready: str) -> None:
    """Run > Run All Cells once the kernel is ready; again if nothing started (a busy machine can
    take the first click before the notebook is ready for it)."""
    wait_for_element(page.locator(ready).first, "the kernel to be ready", base=PANEL)
    # The notebook is saved with its outputs: cleared first, what shows next is this run's.
    page.click("li.lm-MenuBar-item:has-text('Edit')")
    page.click(".lm-Menu-item[data-command='editmenu:clear-all']")
    first_prompt = page.locator(".jp-InputPrompt:has-text('[1]')").first
    wait_for_element(first_prompt, "the saved outputs to clear", "detached")
    for _ in range(3):
        page.click("li.lm-MenuBar-item:has-text('Run')")
        page.click(".lm-Menu-item[data-command='runmenu:run-all']")
        try:
            wait_for_element(first_prompt, "the first cell to run", base=CHANGE)
            return
        except WaitedTooLong:  # try the menu again
            page.keyboard.press("Escape")
    raise AssertionError("Run All Cells never started the notebook")


@pytest.mark.parametrize("front_end", FRONT_ENDS)
def test_quickstart_runs_and_the_panel_responds(page, request, front_end):
    fixture, path, ready = FRONT_ENDS[front_end]
    page.goto(request.getfixturevalue(fixture).url + path)
    cell = page.locator(".jp-Notebook .jp-Cell").first
    wait_for_element(cell, "the notebook's cells to show", base=PANEL)
    run_all_cells(page, ready)
    wait_for_panel(page)
    last = page.locator(".jp-Cell").last
    done = "1,024 GPUs:"  # the what-if, printed by the last cell
    printed = last.locator(f".jp-OutputArea-output:has-text('{done}')")
    wait_for_element(printed, "the last cell to print its what-if", base=PANEL)
    assert (
        page.locator(
            ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"
        ).count()
        == 0
    )
    assert "roofline): compute-bound" in summary(page)
    if front_end.startswith("JupyterLab"):  # its theme, light or dark, and the panel reads on it
        dark = page.evaluate("document.body.dataset.jpThemeLight") == "false"
        assert dark == front_end.endswith("Dark")
        page.locator(".sw-panel .sw-roofline").scroll_into_view_if_needed()
        assert reading_problems(page) == {"contrast": [], "cut": [], "labels": []}
        page.screenshot(path=str(ARTIFACTS / f"{front_end.replace(' ', '-').lower()}.png"))
        # the strategy map reads on the theme too
        page.get_by_text("Strategy map: which layout wins").click()
        page.click(".sw-map-view button:has-text('Draw the map')")
        wait_for_js(
            page,
            "the strategy map to draw 100 cells",
            "document.querySelectorAll('.sw-strategy-map rect.heatmapcell').length >= 100",
        )
        assert reading_problems(page, ".sw-map-view") == {"contrast": [], "cut": [], "labels": []}

    paths = curve_paths(page)
    page.select_option(".sw-panel .sw-mesh-picker select >> nth=0", label="TPU v6e")
    wait_for_change(page, curve_paths, paths, "the roofline to redraw for the TPU v6e")
    wait_for_text(page, ".sw-panel .sw-mesh-picker", "256 chips")
    assert [e for e in page.errors if e not in NOT_OURS.get(front_end, ())] == []
