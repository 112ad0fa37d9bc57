"""Real servers and a real browser: Voila and JupyterLab driven by Playwright on Debian's Chromium.

Each server is started on a free port of 127.0.0.1 and stopped with SIGTERM. Every request that
is not to 127.0.0.1 is aborted (Voila's page links a CDN stylesheet). Screenshots land in
``artifacts/`` for people to look at; they are never compared.
"""

from __future__ import annotations

import os
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import pytest

CHROMIUM = Path("/usr/bin/chromium")
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"
FLAGS = [
    "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run", "--disable-background-networking",
    "--disable-component-update", "--disable-sync",
]  # fmt: skip

if not CHROMIUM.exists():
    if os.environ.get("CI") == "true":
        raise RuntimeError("CI needs Debian's chromium for the browser tests: apt-get install -y chromium")
    pytest.skip("no /usr/bin/chromium: apt-get install -y chromium", allow_module_level=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A server process of ours on 127.0.0.1, ready once ``ready_path`` answers."""

    def __init__(self, argv: list[str], port: int, ready_path: str, cwd: Path = ROOT):
        self.port, self.url = port, f"http://127.0.0.1:{port}"
        self.log = open(ARTIFACTS / f"server-{port}.log", "w")  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(argv, cwd=cwd, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"server exited with {self.process.returncode}; see {self.log.name}")
            try:
                urllib.request.urlopen(self.url + ready_path, timeout=2)
                return
            except OSError:
                time.sleep(0.3)
        self.stop()
        raise RuntimeError(f"server not ready after 90 s; see {self.log.name}")

    def stop(self) -> int:
        self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        self.log.close()
        return code


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
    ARTIFACTS.mkdir(exist_ok=True)
    port = free_port()
    server = Server(
        [sys.executable, "-m", "scaling_widgets", "demo", "--no-browser", "--port", str(port)],
        port,
        "/voila/static/voila.js",
    )
    yield server
    assert server.stop() == 0


@pytest.fixture(scope="session")
def jupyterlab():
    ARTIFACTS.mkdir(exist_ok=True)
    port = free_port()
    argv = [
        sys.executable, "-m", "jupyterlab", "--no-browser", "--ServerApp.ip=127.0.0.1", f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0", "--ServerApp.token=", "--ServerApp.password=", "--ServerApp.allow_root=True",
        "--ServerApp.disable_check_xsrf=True", f"--ServerApp.root_dir={ROOT / 'demo_notebooks'}",
        "--LabApp.news_url=", "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
    ]  # fmt: skip
    server = Server(argv, port, "/api/status")
    yield server
    server.stop()


@pytest.fixture
def page(browser, request):
    """A fresh page that only reaches 127.0.0.1 and records every console error."""
    context = browser.new_context(viewport={"width": 1500, "height": 1300})
    page = context.new_page()
    page.route("**/*", lambda route: route.continue_() if _local(route.request.url) else route.abort())
    page.errors = []
    page.on("pageerror", lambda err: page.errors.append(f"page error: {err}"))
    page.on(
        "console",
        lambda msg: (
            page.errors.append(f"console: {msg.text}")
            if msg.type == "error" and _local(msg.location.get("url", "") or "http://127.0.0.1")
            else None
        ),
    )
    yield page
    page.screenshot(path=str(ARTIFACTS / f"{request.node.name}.png"), full_page=True)
    context.close()


def _local(url: str) -> bool:
    return url.startswith(("http://127.0.0.1", "ws://127.0.0.1", "data:", "blob:", "about:"))
