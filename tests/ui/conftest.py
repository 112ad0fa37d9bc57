"""Real servers and a real browser: Voila, JupyterLab and Notebook 7 driven by Playwright on
Debian's Chromium.

Each server is started on a free port of 127.0.0.1 and stopped with SIGTERM. Every request that
is not to 127.0.0.1 is aborted (Voila's page links a CDN stylesheet). Screenshots land in
``artifacts/`` for people to look at; they are never compared.
"""

from __future__ import annotations

import json
import os
import re

import pytest
from playwright.sync_api import TimeoutError as PlaywrightTimeout

from .helpers import CALIBRATION, CALM_SECONDS, PLAYWRIGHT, budgeted, calibration, described
from .servers import (
    ARTIFACTS,
    CHROMIUM,
    FLAGS,
    JUPYTER_READY,
    VOILA_READY,
    jupyter_argv,
    local,
    serve,
    voila_demo_argv,
)

if not CHROMIUM.exists():
    if os.environ.get("CI") == "true":
        raise RuntimeError(
            "CI needs Debian's chromium for the browser tests: apt-get install -y chromium"
        )
    pytest.skip("no /usr/bin/chromium: apt-get install -y chromium", allow_module_level=True)


@pytest.fixture(scope="session", autouse=True)
def calibrated() -> None:
    """How busy the machine is, measured as the browser tests start, before their servers do:
    every budget of theirs is its base times the calibration."""
    CALIBRATION.measure()


@pytest.fixture(autouse=True)
def recalibrated(calibrated) -> None:
    """Measured again as each test starts: the calibration keeps the slowest."""
    CALIBRATION.measure()


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item):
    """A Playwright action past its budget (a click, a page's load) says the budget too."""
    try:
        return (yield)
    except PlaywrightTimeout as timeout:
        timeout.add_note(f"Playwright's own waits had {described(PLAYWRIGHT)}")
        raise


def pytest_terminal_summary(terminalreporter):
    if CALIBRATION.slowest is not None:  # measured: browser tests ran
        terminalreporter.write_line(
            f"browser tests' budgets: × {calibration():.2f} calibration (its loop took "
            f"{CALIBRATION.first * 1000:.0f} ms at the start, {CALIBRATION.slowest * 1000:.0f} ms "
            f"at the slowest, {CALM_SECONDS * 1000:.0f} ms at rest)"
        )


@pytest.fixture(scope="session")
def browser():
    from playwright.sync_api import sync_playwright

    ARTIFACTS.mkdir(exist_ok=True)
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS, headless=True)
        yield browser
        browser.close()


@pytest.fixture(scope="session")
def voila_demo():
    """``scaling-widgets demo`` itself, as a user runs it."""
    server = serve(voila_demo_argv, VOILA_READY)
    yield server
    assert server.stop() == 0  # SIGTERM: a clean exit...
    # ...that leaves no kernel behind
    started, shut = server.kernels("started"), server.kernels("shutdown")
    assert started == shut and started


@pytest.fixture(scope="session")
def voila_dark():
    """``scaling-widgets demo --theme dark``."""
    server = serve(lambda port: voila_demo_argv(port, "--theme", "dark"), VOILA_READY)
    yield server
    assert server.stop() == 0


def jupyter(tmp_path_factory, app: str, *options: str):
    """JupyterLab or Notebook 7 with a workspace of its own: the user's is shared by every
    JupyterLab on the machine, another run of these tests among them."""
    workspaces = f"--LabServerApp.workspaces_dir={tmp_path_factory.mktemp('workspaces')}"
    return serve(lambda port: jupyter_argv(app, port, workspaces, *options), JUPYTER_READY)


@pytest.fixture(scope="session")
def jupyterlab(tmp_path_factory):
    server = jupyter(tmp_path_factory, "jupyterlab")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def jupyterlab_dark(tmp_path_factory):
    """JupyterLab with its Dark theme chosen in the user's settings, as a user would."""
    settings = tmp_path_factory.mktemp("lab-settings")
    themes = settings / "@jupyterlab" / "apputils-extension" / "themes.jupyterlab-settings"
    themes.parent.mkdir(parents=True)
    themes.write_text(json.dumps({"theme": "JupyterLab Dark"}))
    server = jupyter(tmp_path_factory, "jupyterlab", f"--LabApp.user_settings_dir={settings}")
    yield server
    server.stop()


# Voila 0.5's page carries JupyterLab 4.2.5's core, while its own widget manager and
# jupyterlab_widgets 3.0.17 (which ipywidgets 8.1.9 requires) were built against 4.5 and 4.6:
# webpack warns that the versions do not match, and shares 4.2.5, which works. Not ours to fix.
UPSTREAM_WARNINGS = re.compile(
    r"^(Unsatisfied version \S+ from \S+ of shared singleton module @jupyterlab/|"
    r"No satisfying version \(\S+\) of shared module @jupyterlab/)"
)


@pytest.fixture(scope="session")
def notebook7(tmp_path_factory):
    server = jupyter(tmp_path_factory, "notebook")
    yield server
    server.stop()


@pytest.fixture
def page(browser, request):
    """A fresh page that only reaches 127.0.0.1 and records every console error."""
    context = budgeted(browser.new_context(viewport={"width": 1500, "height": 1300}))
    page = context.new_page()
    page.external = []  # what the page asked of anywhere but this machine (refused)

    def only_local(route, request):
        if local(request.url):
            route.continue_()
        else:
            page.external.append(request.url)
            route.abort()

    page.route("**/*", only_local)
    page.errors, page.warnings = [], []
    page.on("pageerror", lambda err: page.errors.append(f"page error: {err}"))
    page.on(
        "console",
        lambda msg: (
            page.errors.append(f"console: {msg.text}")
            if msg.type == "error" and local(msg.location.get("url", "") or "http://127.0.0.1")
            else None
        ),
    )
    page.on(
        "console",
        lambda msg: (
            page.warnings.append(msg.text)
            if msg.type == "warning" and not UPSTREAM_WARNINGS.match(msg.text)
            else None
        ),
    )
    yield page
    page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
    context.close()
