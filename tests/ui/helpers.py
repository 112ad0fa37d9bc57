"""What a user sees, read off the page: curve paths, bar heights, summary text, messages."""

from __future__ import annotations

from pathlib import Path

PANEL_TIMEOUT = 90_000  # ms: the kernel starts and runs the notebook first
CHECKS = (Path(__file__).with_name("checks.js")).read_text()


def curve_paths(page) -> list[str]:
    """The ``d`` of every curve of the panel's roofline, in order."""
    return page.eval_on_selector_all(
        ".sw-panel .sw-roofline .curve path", "els => els.map(e => e.getAttribute('d') || '')"
    )


def bar_heights(page) -> list[float]:
    return page.eval_on_selector_all(
        ".sw-panel .sw-memory-bar rect.bar", "els => els.map(e => +e.getAttribute('height'))"
    )


def summary(page) -> str:
    return page.inner_text(".sw-panel .sw-summary")


def wait_for_change(page, read, before, timeout: int = 20_000):
    """Poll ``read(page)`` until it differs from ``before``; return the new value."""
    return wait_until(page, read, lambda now: now != before, timeout)


def wait_until(page, read, accept, timeout: int = 20_000):
    """Poll ``read(page)`` until ``accept`` takes its value; return that value. A widget's
    parts arrive as separate messages, so a page can show one part's new state before another's."""
    step, waited = 100, 0
    while waited < timeout:
        now = read(page)
        if accept(now):
            return now
        page.wait_for_timeout(step)
        waited += step
    raise AssertionError(f"{read.__name__} stayed at {now!r} for {timeout} ms")


def wait_for_panel(page) -> None:
    page.wait_for_selector(
        ".sw-panel .sw-roofline .curve path", state="attached", timeout=PANEL_TIMEOUT
    )
    page.wait_for_selector(
        ".sw-panel .sw-memory-bar rect.bar", state="attached", timeout=PANEL_TIMEOUT
    )
    page.wait_for_selector(
        ".sw-panel .sw-step-breakdown rect.bar", state="attached", timeout=PANEL_TIMEOUT
    )
    # JupyterLab renders only the cells in view: the summary has its text once scrolled to
    page.locator(".sw-panel .sw-summary").first.scroll_into_view_if_needed()
    page.wait_for_function(
        "(document.querySelector('.sw-panel .sw-summary')?.innerText || '').length > 20"
    )


def reading_problems(page, root: str = ".sw-panel") -> dict[str, list[str]]:
    """What a reader would trip on (checks.js): text below WCAG AA contrast ("contrast"), cut
    controls or values ("cut"), plot labels that overlap or leave their figure ("labels")."""
    page.wait_for_timeout(1000)  # figures draw their first transitions
    return page.evaluate(CHECKS, root)
