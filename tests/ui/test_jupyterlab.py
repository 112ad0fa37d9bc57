"""JupyterLab: the quickstart notebook runs in a real kernel, and its panel renders and responds."""

from .helpers import PANEL_TIMEOUT, curve_paths, summary, wait_for_change, wait_for_panel


def test_quickstart_runs_and_the_panel_responds(page, jupyterlab):
    page.goto(jupyterlab.url + "/lab/tree/01_quickstart.ipynb")
    page.wait_for_selector(".jp-Notebook .jp-Cell", timeout=PANEL_TIMEOUT)
    page.wait_for_selector(
        ".jp-Notebook-ExecutionIndicator[data-status='idle']", state="attached", timeout=PANEL_TIMEOUT
    )
    page.click("li.lm-MenuBar-item:has-text('Run')")
    page.click(".lm-Menu-item[data-command='runmenu:run-all']")
    wait_for_panel(page)
    last = page.locator(".jp-Cell").last
    last.locator(".jp-OutputArea-output:has-text('SPEC example 16: ok')").wait_for(timeout=PANEL_TIMEOUT)
    assert page.locator(".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']").count() == 0
    assert "Compute-bound" in summary(page)

    paths = curve_paths(page)
    page.select_option(".sw-panel .sw-mesh-picker select >> nth=0", label="TPU v6e")
    wait_for_change(page, curve_paths, paths)
    page.wait_for_function("document.querySelector('.sw-panel .sw-mesh-picker').innerText.includes('256 chips')")
    assert page.errors == []
