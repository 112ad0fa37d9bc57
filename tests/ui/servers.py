"""Our servers on 127.0.0.1 and the browser's settings, shared by the browser tests and
benchmarks."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

CHROMIUM = Path("/usr/bin/chromium")
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"
FLAGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class Server:
    """A server process of ours on 127.0.0.1, ready once ``ready_path`` answers."""

    def __init__(self, argv: list[str], port: int, ready_path: str, cwd: Path = ROOT):
        self.port, self.url = port, f"http://127.0.0.1:{port}"
        ARTIFACTS.mkdir(exist_ok=True)
        self.log = open(ARTIFACTS / f"server-{port}.log", "w")  # noqa: SIM115 (closed in stop)
        self.process = subprocess.Popen(argv, cwd=cwd, stdout=self.log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(
                    f"server exited with {self.process.returncode}; see {self.log.name}"
                )
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


def voila_demo_argv(port: int, *options: str) -> list[str]:
    """``scaling-widgets demo`` itself, as a user runs it."""
    return [
        sys.executable,
        "-m",
        "scaling_widgets",
        "demo",
        "--no-browser",
        "--port",
        str(port),
        *options,
    ]


def jupyter_argv(app: str, port: int, *options: str) -> list[str]:
    """JupyterLab ("jupyterlab") or Notebook 7 ("notebook") on the demo notebooks, no token, no
    news."""
    return [
        sys.executable,
        "-m",
        app,
        "--no-browser",
        "--ServerApp.ip=127.0.0.1",
        f"--ServerApp.port={port}",
        "--ServerApp.port_retries=0",
        "--ServerApp.token=",
        "--ServerApp.password=",
        "--ServerApp.allow_root=True",
        "--ServerApp.disable_check_xsrf=True",
        f"--ServerApp.root_dir={ROOT / 'demo_notebooks'}",
        "--LabApp.news_url=",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        *options,
    ]


def local(url: str) -> bool:
    """Requests the page may make: ours, on 127.0.0.1."""
    return url.startswith(("http://127.0.0.1", "ws://127.0.0.1", "data:", "blob:", "about:"))
