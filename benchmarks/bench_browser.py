"""Latency in a real browser: the first render of the page, and from a control change to the
changed SVG path, in Voila.

Serves the panel with ``scaling-widgets demo``, drives Debian's Chromium with Playwright.
First render: from the request of the page to the drawn panel (its kernel started and the
dashboard run), for 5 fresh pages on a warm server. Goal: under 3 s.
Redraw: for each of 30 changes, from the change (performance.now() in the page, just before the
click or the keystroke) to the first mutation of a roofline path. Goal on this 2-core machine:
p50 <= 150 ms, p95 <= 300 ms. Run: ``python benchmarks/bench_browser.py``; it asserts nothing.
"""

from __future__ import annotations

import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from playwright.sync_api import sync_playwright  # noqa: E402

from tests.ui.helpers import summary, wait_for_change, wait_for_panel  # noqa: E402
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


def first_renders(browser, url: str, loads: int = 5) -> list[float]:
    """Seconds from asking for the page to the drawn panel, each on a fresh page."""
    panel = []
    for _ in range(loads):
        page = browser.new_page(viewport={"width": 1500, "height": 1300})
        page.route(
            "**/*", lambda route: route.continue_() if local(route.request.url) else route.abort()
        )
        start = time.perf_counter()
        page.goto(url + "/")
        wait_for_panel(page)
        panel.append(time.perf_counter() - start)
        page.close()
    return panel


def main() -> None:
    port = free_port()
    server = Server(voila_demo_argv(port), port, "/voila/static/voila.js")
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
            first = first_renders(browser, server.url)
            page = browser.new_page(viewport={"width": 1500, "height": 1300})
            page.route(
                "**/*",
                lambda route: route.continue_() if local(route.request.url) else route.abort(),
            )
            page.goto(server.url + "/")
            wait_for_panel(page)
            # 50M tokens: 12,207 sequences, enough for FSDP over the 4,096 chips (TP alone cannot
            # split LLaMA-2 13B's 40 heads 4,096 ways; DP and FSDP shade the same region).
            before = summary(page)
            batch = page.locator(".sw-training-controls input[type=text]").first
            batch.fill("50M")
            batch.press("Enter")
            wait_for_change(page, summary, before)
            page.evaluate(WATCH)
            buttons = ["FSDP + TP", "FSDP"] * 2  # from i = 1: FSDP first, as FSDP + TP is on show
            strategy = [
                measure(
                    page,
                    lambda i=i: page.click(
                        f".sw-strategy-selector button:text-is('{buttons[i % 4]}')"
                    ),
                )
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
    print(
        f"first render of the panel, {len(first)} fresh pages: p50 {statistics.median(first):.2f} "
        "s,"
        f" max {max(first):.2f} s"
    )
    print(f"{CHANGES} changes each, Voila + Chromium on this machine")
    print(f"{'control -> changed roofline path':<36} {'p50 ms':>8} {'p95 ms':>8} {'max ms':>8}")
    for name, times in (("strategy toggle button", strategy), ("mesh axis length (typed)", mesh)):
        p95 = sorted(times)[int(0.95 * len(times)) - 1]
        print(f"{name:<36} {statistics.median(times):>8.0f} {p95:>8.0f} {max(times):>8.0f}")


if __name__ == "__main__":
    main()
