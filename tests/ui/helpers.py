"""What a user sees, read off the page (curve paths, bar heights, summary text, messages), and
the waits for it: every wait is on a condition, within a budget scaled by how busy the machine
is, and a wait that runs out says what it waited for."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from pathlib import Path
from statistics import median

from playwright.sync_api import TimeoutError as PlaywrightTimeout

# Budgets for a calm machine [s]; each wait gets base × calibration().
PANEL = 90  # the kernel starts and runs the notebook first
CHANGE = 20  # the kernel answers a change and the page draws it
PLAYWRIGHT = 30  # Playwright's own waits: a click, a page's load
QUIET = 0.5  # nothing under a root changes for this long: its figures have drawn
CALM_SECONDS = 0.021  # the calibration's loop on this repo's 2-core machine at rest
MOST_SLOWDOWN = 6.0  # a machine slower than this is broken, not busy: fail rather than wait
CHECKS = (Path(__file__).with_name("checks.js")).read_text()

# A fixed piece of pure-Python work; prints the median of five runs' seconds.
LOOP = """
import time
from statistics import median

def once():
    start = time.perf_counter()
    total = 0
    for i in range(300_000):
        total += i * i % 7
    return time.perf_counter() - start

print(median(once() for _ in range(5)))
"""


def calibration_run() -> float:
    """Seconds ``LOOP`` takes now, run at once in a process on each core (their median): longer
    as other processes hold the cores that the browser, the server and the kernel share. One
    process alone would have a core of its own on a machine that another test run half fills."""
    runs = [
        subprocess.Popen([sys.executable, "-c", LOOP], stdout=subprocess.PIPE, text=True)
        for _ in range(os.cpu_count() or 1)
    ]
    return median(float(run.communicate()[0]) for run in runs)


class Calibration:
    """How many times slower than at rest the machine runs, from 1 to ``MOST_SLOWDOWN``: the
    slowest of this session's measurements, one as the browser tests start and one as each test
    starts. The slowest, as another run's busy spells come and go within a test."""

    def __init__(self):
        self.first = self.slowest = None  # seconds of calibration_run

    def measure(self) -> None:
        seconds = calibration_run()
        self.first = self.first or seconds
        self.slowest = max(self.slowest or 0.0, seconds)

    @property
    def factor(self) -> float:
        if self.slowest is None:
            self.measure()
        return min(MOST_SLOWDOWN, max(1.0, self.slowest / CALM_SECONDS))


CALIBRATION = Calibration()


def calibration() -> float:
    return CALIBRATION.factor


def budget(base: float) -> float:
    """Seconds to wait for what takes ``base`` seconds at most on a calm machine."""
    return base * calibration()


def described(base: float) -> str:
    """A budget as a failure names it: "90 s (30 s × 3.0 calibration)"."""
    return f"{budget(base):.3g} s ({base:g} s × {calibration():.2g} calibration)"


def budgeted(context):
    """A browser context whose Playwright waits (a click, a page's load) get their budget."""
    context.set_default_timeout(budget(PLAYWRIGHT) * 1000)
    return context


class WaitedTooLong(AssertionError):
    """A wait of ours that ran out."""


def wait_for(what: str, wait, base: float = CHANGE):
    """``wait(timeout_ms)`` (a Playwright wait or ours) given ``base`` s × the calibration; its
    value. Running out fails the test with what it waited for, the budget and the factor."""
    try:
        return wait(budget(base) * 1000)
    except (PlaywrightTimeout, WaitedTooLong) as timeout:
        seen = f"; {timeout}" if isinstance(timeout, WaitedTooLong) else ""
        raise WaitedTooLong(f"waited {described(base)} for {what}{seen}") from timeout


def poll(what: str, read, accept=bool, base: float = CHANGE, step: float = 0.1):
    """``read()`` every ``step`` s until ``accept`` takes its value; that value. For what the
    page cannot tell (a server's log, a process) or a reading that is Python's."""

    def until(timeout_ms: float):
        deadline = time.monotonic() + timeout_ms / 1000
        while not accept(now := read()):
            if time.monotonic() > deadline:
                raise WaitedTooLong(f"the last reading was {now!r}"[:2000])
            time.sleep(step)
        return now

    return wait_for(what, until, base)


def wait_for_js(page, what: str, predicate: str, base: float = PLAYWRIGHT, arg=None):
    """Until the page's JavaScript ``predicate`` holds."""
    return wait_for(what, lambda ms: page.wait_for_function(predicate, arg=arg, timeout=ms), base)


def wait_for_text(page, selector: str, text: str, base: float = PLAYWRIGHT) -> None:
    """Until the first ``selector`` of the page shows ``text``."""
    wait_for_js(
        page,
        f"{selector} to show {text!r}",
        "([s, t]) => (document.querySelector(s)?.innerText || '').includes(t)",
        base,
        arg=[selector, text],
    )


def wait_for_element(locator, what: str, state: str = "visible", base: float = PLAYWRIGHT) -> None:
    wait_for(what, lambda ms: locator.wait_for(state=state, timeout=ms), base)


# Until nothing under the root has changed for ``quiet`` ms: an observer notes each change's time.
QUIET_SINCE = """([root, quiet]) => {
  const element = document.querySelector(root);
  if (!element) return false;
  const watched = (window.__swQuiet ??= new WeakMap());
  if (!watched.has(element)) {
    const seen = { last: performance.now() };
    new MutationObserver(() => { seen.last = performance.now(); }).observe(
      element, { subtree: true, childList: true, attributes: true, characterData: true });
    watched.set(element, seen);
  }
  return performance.now() - watched.get(element).last >= quiet;
}"""


def wait_for_quiet(page, root: str = ".sw-panel", what: str = "") -> None:
    """Until nothing under ``root`` has changed for ``QUIET`` s × the calibration: its figures,
    drawn only once in view, have drawn. A quiet window scaled as the budgets are, as a busy
    machine spaces a figure's drawing out."""
    quiet_ms = budget(QUIET) * 1000
    what = what or f"{root} to stay unchanged for {quiet_ms:.0f} ms"
    wait_for_js(page, what, QUIET_SINCE, base=CHANGE, arg=[root, quiet_ms])


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


def wait_for_change(page, read, before, what: str = "", base: float = CHANGE):
    """Poll ``read(page)`` until it differs from ``before``; return the new value."""
    what = what or f"{read.__name__} to change"
    return wait_until(page, read, lambda now: now != before, what, base)


def wait_until(page, read, accept, what: str = "", base: float = CHANGE):
    """Poll ``read(page)`` until ``accept`` takes its value; return that value. A widget's
    parts arrive as separate messages, so a page can show one part's new state before another's."""
    what = what or f"{getattr(read, '__name__', 'the page')} to read as expected"
    return poll(what, lambda: read(page), accept, base)


PANEL_PARTS = (
    ("the roofline's curves to draw", ".sw-panel .sw-roofline .curve path"),
    ("the memory bar's bars to draw", ".sw-panel .sw-memory-bar rect.bar"),
    ("the step breakdown's bars to draw", ".sw-panel .sw-step-breakdown rect.bar"),
)


def wait_for_panel(page) -> None:
    for what, selector in PANEL_PARTS:
        wait_for_element(page.locator(selector).first, what, "attached", PANEL)
    # JupyterLab renders only the cells in view: the summary has its text once scrolled to
    page.locator(".sw-panel .sw-summary").first.scroll_into_view_if_needed()
    wait_for_js(
        page,
        "the summary to say more than 20 characters",
        "(document.querySelector('.sw-panel .sw-summary')?.innerText || '').length > 20",
    )


def reading_problems(page, root: str = ".sw-panel") -> dict[str, list[str]]:
    """What a reader would trip on (checks.js): text below WCAG AA contrast ("contrast"), cut
    controls or values ("cut"), plot labels that overlap or leave their figure ("labels")."""
    wait_for_quiet(page, root)  # its figures have drawn: positions and colours are final
    return page.evaluate(CHECKS, root)
