"""Real servers and a real browser: Voila, JupyterLab and Notebook 7 driven by Playwright on Debian's Chromium.

Each server is started on a free port of 127.0.0.1 and stopped with SIGTERM. Every request that
is not to 127.0.0.1 is aborted (Voila's page links a CDN stylesheet). Screenshots land in
``artifacts/`` for people to look at; they are never compared.
"""

from __future__ import annotations

import os

import pytest

from .servers import ARTIFACTS, CHROMIUM, FLAGS, Server, free_port, jupyter_argv, local, voila_demo_argv

if not CHROMIUM.exists():
    if os.environ.get("CI") == "true":
        raise RuntimeError("CI needs Debian's chromium for the browser tests: apt-get install -y chromium")
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
    log = (ARTIFACTS / f"server-{port}.log").read_text()
    assert log.count("Kernel started:") == log.count("Kernel shutdown:") > 0  # ...that leaves no kernel behind


@pytest.fixture(scope="session")
def jupyterlab():
    server = Server(jupyter_argv("jupyterlab", port := free_port()), port, "/api/status")
    yield server
    server.stop()


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
    page.errors = []
    page.on("pageerror", lambda err: page.errors.append(f"page error: {err}"))
    page.on(
        "console",
        lambda msg: (
            page.errors.append(f"console: {msg.text}")
            if msg.type == "error" and local(msg.location.get("url", "") or "http://127.0.0.1")
            else None
        ),
    )
    yield page
    page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
    context.close()
