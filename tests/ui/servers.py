"""Our servers on 127.0.0.1 and the browser's settings, shared by the browser tests and
benchmarks."""

from __future__ import annotations

import http.client
import re
import signal
import socket
import subprocess
import sys
import urllib.request
from pathlib import Path
from urllib.parse import parse_qs, urlsplit

import psutil

from .helpers import budget, calibration, poll

CHROMIUM = Path("/usr/bin/chromium")
ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "artifacts"
STARTS = 90  # s: a server's start on a calm machine, at most
VOILA_READY = "/voila/static/voila.js"
JUPYTER_READY = "/api/status"
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


class PortTaken(RuntimeError):
    """Another program bound the port between our pick and the server's start."""


class Server:
    """A server process of ours on 127.0.0.1, ready once ``ready_path`` answers."""

    def __init__(self, argv: list[str], port: int, ready_path: str, cwd: Path = ROOT):
        self.port, self.url = port, f"http://127.0.0.1:{port}"
        ARTIFACTS.mkdir(exist_ok=True)
        self.log = open(ARTIFACTS / f"server-{port}.log", "w")  # noqa: SIM115 (closed in stop)
        what = f"the server on port {port} to answer {ready_path} (its log: {self.log.name})"
        calibration()  # measured before this server's start takes the CPU, if not yet
        self.process = subprocess.Popen(argv, cwd=cwd, stdout=self.log, stderr=subprocess.STDOUT)
        try:
            poll(what, lambda: self.answers(ready_path), base=STARTS, step=0.3)
        except BaseException:
            self.stop()
            raise

    def answers(self, path: str) -> bool:
        """Whether the server answers ``path`` on its port; an error if it has exited. Its own
        process must listen there: until then, another run's server on that port would answer."""
        if self.process.poll() is not None:
            said = Path(self.log.name).read_text()
            exited = PortTaken if "already in use" in said else RuntimeError
            raise exited(f"server exited with {self.process.returncode}; see {self.log.name}")
        if not self.listens():
            return False
        try:
            urllib.request.urlopen(self.url + path, timeout=budget(2))
            return True
        except OSError:
            return False

    def listens(self) -> bool:
        """Whether the server's own process listens on its port."""
        try:
            sockets = psutil.Process(self.process.pid).net_connections(kind="tcp4")
        except psutil.NoSuchProcess:
            return False
        return any(s.status == psutil.CONN_LISTEN and s.laddr.port == self.port for s in sockets)

    @property
    def home(self) -> str:
        """The page a user opens: the URL the demo prints, its token in it; else the root."""
        self.log.flush()
        printed = re.search(r"the panel is at (\S+)", Path(self.log.name).read_text())
        return printed.group(1) if printed else self.url + "/"

    def kernels(self, event: str) -> set[str]:
        """The ids of the kernels the log says were ``event`` ("started", "shutdown"); a kernel
        shut down twice (by its page, then at the end) counts once."""
        return set(re.findall(rf"Kernel {event}: (\S+)", Path(self.log.name).read_text()))

    def said(self, text: str) -> int:
        """How many times the log says ``text``."""
        return Path(self.log.name).read_text().count(text)

    def stop(self) -> int:
        """SIGTERM, and its exit code; killed if it has not exited within its budget."""
        if self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
        try:
            code = self.process.wait(timeout=budget(30))
        except subprocess.TimeoutExpired:
            self.process.kill()
            code = self.process.wait()
        self.log.close()
        return code


def serve(argv_for, ready_path: str, tries: int = 3) -> Server:
    """A server of ours on a free port, ``argv_for(port)`` its command. Another program (another
    test run on the machine) can bind the port between our pick and the server's start: the
    server then exits, and starts again on another."""
    for _ in range(tries - 1):
        try:
            return Server(argv_for(port := free_port()), port, ready_path)
        except PortTaken:
            continue
    return Server(argv_for(port := free_port()), port, ready_path)


class Browser:
    """A browser of the demo over plain HTTP: it opens the URL the demo printed, keeps the
    cookies that gave it, and makes the page's own calls."""

    def __init__(self, server: Server):
        self.server, self.cookies = server, {}
        self.token = parse_qs(urlsplit(server.home).query).get("token", [""])[0]

    def request(self, method: str, path: str, logged_in: bool = True, **headers):
        """``(status, headers, body)``; ``logged_in``: with the cookies the token gave."""
        connection = http.client.HTTPConnection("127.0.0.1", self.server.port, timeout=budget(120))
        headers.setdefault("Host", f"127.0.0.1:{self.server.port}")
        if logged_in:
            headers["Cookie"] = "; ".join(f"{k}={v}" for k, v in self.cookies.items())
        connection.request(method, path, headers=headers)
        response = connection.getresponse()
        return response.status, response.headers, response.read().decode(errors="replace")

    def open_page(self) -> str:
        """The page loaded to its end, from the URL with the token; its kernel's id."""
        path = f"/?token={self.token}" if self.token else "/"
        status, headers, page = self.request("GET", path, logged_in=False)
        assert status == 200, status
        for cookie in headers.get_all("Set-Cookie"):
            name, value = cookie.split(";")[0].split("=", 1)
            self.cookies[name] = value
        return kernel_of(page)

    def close_page(self, kernel: str) -> None:
        """The call the page makes as its tab closes."""
        xsrf = {"X-XSRFToken": self.cookies["_xsrf"]}
        status = self.request("POST", f"/voila/api/shutdown/{kernel}", **xsrf)[0]
        assert status == 204, status


def kernel_of(page: str) -> str:
    """The id of the kernel a served page runs on."""
    return re.search(r'"kernelId": "([0-9a-f-]+)"', page).group(1)


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
    news. Its kernels' sockets are files, not ports: a port is picked free, then bound by the
    kernel later, and another test run's kernel on the machine can take it in between."""
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
        "--KernelManager.transport=ipc",
        *options,
    ]


def local(url: str) -> bool:
    """Requests the page may make: ours, on 127.0.0.1."""
    return url.startswith(("http://127.0.0.1", "ws://127.0.0.1", "data:", "blob:", "about:"))
