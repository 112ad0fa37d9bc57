"""Pictures of a notebook's widgets as the live front end draws them: the demo notebooks served by
Voila (which runs each notebook and renders its widgets in order), opened in Debian's Chromium,
headless, light theme, 1100 px wide, and each widget output screenshot once its figures have drawn.

Only ``refresh_outputs.py`` uses it: the tests check the saved images without a browser. The
servers, the browser's flags and the waits are the browser tests' own (``tests/ui``): Voila on a
free port of 127.0.0.1, stopped with SIGTERM; every request not to 127.0.0.1 aborted; every wait
on a condition, within a budget scaled by how busy the machine is.
"""

from __future__ import annotations

import math
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from playwright.sync_api import sync_playwright  # noqa: E402

from scaling_widgets.demo import TEMPLATES, voila_argv  # noqa: E402
from tests.ui.helpers import PANEL, budgeted, wait_for, wait_for_js, wait_for_quiet  # noqa: E402
from tests.ui.servers import CHROMIUM, FLAGS, VOILA_READY, Browser, kernel_of, local, serve  # noqa: E402

WIDTH, HEIGHT = 1100, 900  # px: a laptop's window, narrow enough to keep the images small
# A widget's view is an output without a MIME type of its own: text, images and errors have one.
OUTPUTS = ".jp-OutputArea-output:not([data-mime-type])"
# Voila has run the notebook (its spinner gone) and the page has rendered every output it was sent
# (their scripts replaced), every widget output holds a view, and every bqplot figure has drawn its
# marks' layer.
RENDERED = """(outputs) => {
  if (document.getElementById('loading')) return false;
  if (document.querySelector('script[type="application/vnd.voila.cell-output+json"]')) return false;
  const shown = [...document.querySelectorAll(outputs)];
  const figures = [...document.querySelectorAll('.bqplot.figure svg.svg-figure')];
  return shown.every(o => o.querySelector('.jupyter-widgets') || o.innerText.includes('Error'))
    && figures.every(f => f.getBoundingClientRect().width > 0 && f.querySelector('g g'));
}"""
STILL_ALIVE = 1800  # s: an idle kernel's cull; every page here shuts its own kernel down at once


class Voila:
    """Voila serving ``folder`` and a headless Chromium opening its notebooks, one page at a
    time; a context manager that stops both, and fails if a kernel outlived its page.

    Parameters
    ----------
    folder : Path
        The notebooks' folder, Voila's root.
    """

    def __init__(self, folder: Path):
        self.folder = folder

    def __enter__(self) -> Voila:
        # Voila finds our offline template (no CDN links) in the Jupyter data directories
        os.environ["JUPYTER_PATH"] = os.pathsep.join(
            filter(None, [str(TEMPLATES), os.environ.get("JUPYTER_PATH")])
        )
        self.server = serve(self._argv, VOILA_READY)
        try:
            self.playwright = sync_playwright().start()
            browser = self.playwright.chromium.launch(
                executable_path=str(CHROMIUM), args=FLAGS, headless=True
            )
            self.context = budgeted(
                browser.new_context(
                    viewport={"width": WIDTH, "height": HEIGHT},
                    device_scale_factor=1,
                    color_scheme="light",
                )
            )
            # Voila's tree page sets the cookie that a notebook's page sends with its shutdown
            # call as it closes; the notebook's page never asks for it (403 without it)
            tree = self._new_page()
            tree.goto(self.server.url + "/")
            tree.close()
        except BaseException:
            self.server.stop()
            raise
        return self

    def _close(self, page) -> None:
        """Shut the page's kernel down with the call the page makes as its tab closes, then close
        it: one kernel at a time (2 cores, 110 MB a kernel). The page's own call, a beacon sent
        as it unloads, can be lost as the browser routes it."""
        content = page.content()
        page.close()
        if '"kernelId"' in content:  # Voila served the page and started its kernel
            client = Browser(self.server)
            client.cookies = {c["name"]: c["value"] for c in self.context.cookies()}
            client.close_page(kernel_of(content))

    def _new_page(self):
        """A page that only reaches 127.0.0.1 (every other request aborted)."""
        page = self.context.new_page()
        page.route(
            "**/*",
            lambda route, request: route.continue_() if local(request.url) else route.abort(),
        )
        return page

    def _argv(self, port: int) -> list[str]:
        """The demo's own Voila options (template, theme, kernels' transport), on the folder."""
        options = voila_argv(port, False, STILL_ALIVE, "light", 0)[1:]  # [0]: the dashboard
        return [sys.executable, "-m", "voila", str(self.folder), *options]

    def __exit__(self, *exc) -> None:
        try:
            self.context.browser.close()
            self.playwright.stop()
        finally:
            code = self.server.stop()  # SIGTERM: Voila shuts its kernels down, then exits
        started, shut = self.server.kernels("started"), self.server.kernels("shutdown")
        if exc[0] is None and (code != 0 or started != shut):
            raise RuntimeError(
                f"Voila exited with {code}; kernels left behind: {sorted(started - shut)}"
                f" (its log: {self.server.log.name})"
            )

    def widgets(self, name: str) -> list[bytes]:
        """A PNG of each widget output of notebook ``name``, in the page's order.

        Parameters
        ----------
        name : str
            The notebook's file name in the folder.

        Returns
        -------
        pngs : list of bytes
            One PNG a widget output, cropped to it, at one pixel a CSS pixel.
        """
        page = self._new_page()
        errors = []
        page.on("pageerror", lambda err: errors.append(str(err)))
        try:
            url = f"{self.server.url}/voila/render/{name}"
            wait_for(f"Voila to run {name}", lambda ms: page.goto(url, timeout=ms), PANEL)
            page.mouse.move(0, 0)  # no tooltip on a picture
            wait_for_js(page, f"{name}'s widgets to render", RENDERED, PANEL, arg=OUTPUTS)
            pngs = [_picture(page, k, name) for k in range(page.locator(OUTPUTS).count())]
        finally:
            self._close(page)
        if errors:
            raise RuntimeError(f"{name}'s page: {errors}")
        return pngs


def _picture(page, k: int, name: str) -> bytes:
    """The k-th widget output, in view and quiet (its figures drawn), as a PNG."""
    output = page.locator(OUTPUTS).nth(k)
    text = output.inner_text()
    if "Error displaying widget" in text:
        raise RuntimeError(f"{name}'s widget {k} did not render: {text[:300]}")
    output.evaluate("(e, k) => e.setAttribute('data-sw-picture', k)", k)
    # The page scrolls inside a pane, and a screenshot leaves out what the pane does not show:
    # a widget taller than the window (a panel) gets a window taller than itself.
    height = math.ceil(output.bounding_box()["height"]) + 40
    page.set_viewport_size({"width": WIDTH, "height": max(HEIGHT, height)})
    output.scroll_into_view_if_needed()
    wait_for_quiet(page, f'[data-sw-picture="{k}"]', f"{name}'s widget {k} to finish drawing")
    return output.screenshot(animations="disabled", caret="hide")
