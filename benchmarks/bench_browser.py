"""Latency in a real browser: from a control change to the changed SVG path, in Voila.

Serves the panel with ``scaling-widgets demo``, drives Debian's Chromium with Playwright and, for
each of 30 changes, times from the change (performance.now() in the page, just before the click
or the keystroke) to the first mutation of a roofline path. Goal on this 2-core machine: p50 <=
150 ms, p95 <= 300 ms. Run: ``python benchmarks/bench_browser.py``; it asserts nothing.
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from playwright.sync_api import sync_playwright  # noqa: E402

from tests.ui.helpers import wait_for_panel  # noqa: E402
from tests.ui.servers import CHROMIUM, FLAGS, Server, free_port, local, voila_demo_argv  # noqa: E402

CHANGES = 30
WATCH = """() => {
  window.__changed = 0;
  const figure = document.querySelector('.sw-panel .sw-roofline');
  new MutationObserver(() => { window.__changed = performance.now(); })
    .observe(figure, {subtree: true, childList: true, attributes: true, attributeFilter: ['d']});
}"""


def measure(page, act) -> float:
    """Milliseconds from just before ``act()`` to the first changed path."""
    start = page.evaluate("performance.now()")
    act()
    page.wait_for_function(f"window.__changed > {start}", timeout=30_000)
    return page.evaluate("window.__changed") - start


def main() -> None:
    port = free_port()
    server = Server(voila_demo_argv(port), port, "/voila/static/voila.js")
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
            page = browser.new_page(viewport={"width": 1500, "height": 1300})
            page.route("**/*", lambda route: route.continue_() if local(route.request.url) else route.abort())
            page.goto(server.url + "/")
            wait_for_panel(page)
            page.evaluate(WATCH)
            buttons = ["TP", "FSDP", "TP", "FSDP + TP"]  # DP and FSDP draw the same region: no change
            strategy = [
                measure(page, lambda i=i: page.click(f".sw-strategy-selector button:text-is('{buttons[i % 4]}')"))
                for i in range(1, CHANGES + 1)
            ]
            axis = page.locator(".sw-panel .sw-mesh-picker input[type=number]").first

            def set_axis(n):
                axis.fill(str(n))
                axis.press("Enter")

            mesh = [measure(page, lambda i=i: set_axis((8, 16)[i % 2])) for i in range(CHANGES)]
            browser.close()
    finally:
        server.stop()
    print(f"{CHANGES} changes each, Voila + Chromium on this machine")
    print(f"{'control -> changed roofline path':<36} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    for name, times in (("strategy toggle button", strategy), ("mesh axis length (typed)", mesh)):
        p95 = sorted(times)[int(0.95 * len(times)) - 1]
        print(f"{name:<36} {statistics.median(times):>8.0f} {p95:>8.0f} {max(times):>8.0f}")


if __name__ == "__main__":
    main()
