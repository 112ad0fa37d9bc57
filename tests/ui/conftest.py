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

from .servers import (
    ARTIFACTS,
    CHROMIUM,
    FLAGS,
    Server,
    free_port,
    jupyter_argv,
    local,
    voila_demo_argv,
)

if not CHROMIUM.exists():
    if os.environ.get("CI") == "true":
        raise RuntimeError(
            "CI needs Debian's chromium for the browser tests: apt-get install -y chromium"
        )
    pytest.skip("no /usr/bin/chromium: apt-get install -y chromium", allow_module_level=True)


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
    port = free_port()
    server = Server(voila_demo_argv(port), port, "/voila/static/voila.js")
    yield server
    assert server.stop() == 0  # SIGTERM: a clean exit...
    # ...that leaves no kernel behind
    started, shut = server.kernels("started"), server.kernels("shutdown")
    assert started == shut and started


@pytest.fixture(scope="session")
def voila_dark():
    """``scaling-widgets demo --theme dark``."""
    server = Server(
        voila_demo_argv(port := free_port(), "--theme", "dark"), port, "/voila/static/voila.js"
    )
    yield server
    assert server.stop() == 0


@pytest.fixture(scope="session")
def jupyterlab():
    server = Server(jupyter_argv("jupyterlab", port := free_port()), port, "/api/status")
    yield server
    server.stop()


@pytest.fixture(scope="session")
def jupyterlab_dark(tmp_path_factory):
    """JupyterLab with its Dark theme chosen in the user's settings, as a user would."""
    settings = tmp_path_factory.mktemp("lab-settings")
    themes = settings / "@jupyterlab" / "apputils-extension" / "themes.jupyterlab-settings"
    themes.parent.mkdir(parents=True)
    themes.write_text(json.dumps({"theme": "JupyterLab Dark"}))
    argv = jupyter_argv("jupyterlab", port := free_port(), f"--LabApp.user_settings_dir={settings}")
    server = Server(argv, port, "/api/status")
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
def notebook7():
    server = Server(jupyter_argv("notebook", port := free_port()), port, "/api/status")
    yield server
    server.stop()


@pytest.fixture
def page(browser, request):
    """A fresh page that only reaches 127.0.0.1 and records every console error."""
    context = browser.new_context(viewport={"width": 1500, "height": 1300})
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
