"""`scaling-widgets demo` over plain HTTP, as another program or another site's page would reach
it: it answers this machine's names only, the page asks for the token it printed, another site's
page cannot pull the panel in, a request over the kernel cap is asked to retry, and a load cut
short gives its kernel back. None of the refused requests starts a kernel."""

import re
import socket
import time

import pytest

from .helpers import budget, described, poll
from .servers import VOILA_READY, Browser, kernel_of, serve, voila_demo_argv

UPGRADE = {
    "Connection": "Upgrade",
    "Upgrade": "websocket",
    "Sec-WebSocket-Version": "13",
    "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
}
MOST = 2


@pytest.fixture(scope="module")
def demo():
    # no warm page: a kernel started to refill it would blur the counts of kernels started
    options = ("--max-kernels", str(MOST), "--cull-after", "600", "--warm", "0")
    server = serve(lambda port: voila_demo_argv(port, *options), VOILA_READY)
    yield server
    assert server.stop() == 0
    log = open(server.log.name).read()
    assert not re.search(r"(^|\s)5\d\d (GET|POST) /", log, re.M), log[-3000:]
    # the kernels' sockets are files in the server's private folder, no port another user reaches
    assert "Kernel is running over TCP" not in log


@pytest.fixture
def client(demo):
    return Browser(demo)


def count(server, event: str) -> int:
    return len(server.kernels(event))


def test_another_sites_name_or_origin_is_refused_and_starts_no_kernel(demo, client):
    port = demo.port
    kernel = client.open_page()
    started = count(demo, "started")
    rebound = {"Host": f"evil.example:{port}"}
    # the page, the kernel's websocket and the page's shutdown call, under a rebinding name
    assert client.request("GET", "/", **rebound)[0] == 403
    channels = f"/api/kernels/{kernel}/channels"
    websocket = {**UPGRADE, **rebound, "Origin": f"http://evil.example:{port}"}
    assert client.request("GET", channels, **websocket)[0] == 403
    assert client.request("POST", f"/voila/api/shutdown/{kernel}", **rebound)[0] == 403
    # this machine's name, but another site's page opening the websocket
    foreign = {**UPGRADE, "Origin": "http://evil.example"}
    assert client.request("GET", channels, **foreign)[0] == 403
    assert count(demo, "started") == started  # none of them started a kernel
    client.close_page(kernel)
    # this machine's other names are its own
    at_localhost = {"Host": f"localhost:{port}"}
    status, _, page = client.request("GET", f"/?token={client.token}", False, **at_localhost)
    assert status == 200 and count(demo, "started") == started + 1
    client.close_page(kernel_of(page))


def test_without_the_token_the_page_asks_for_it_and_starts_no_kernel(demo, client):
    started = count(demo, "started")
    status, headers, _ = client.request("GET", "/", logged_in=False)
    assert status == 302 and headers["Location"].startswith("/login")
    assert client.request("GET", "/?token=wrong", logged_in=False)[0] == 302
    kernel = client.open_page()
    channels = f"/api/kernels/{kernel}/channels"
    assert client.request("GET", channels, logged_in=False, **UPGRADE)[0] == 403
    assert client.request("GET", "/api/kernels", logged_in=False)[0] == 302  # to the login
    assert count(demo, "started") == started + 1  # the one page that had the token
    client.close_page(kernel)


def test_another_sites_page_cannot_pull_the_panel_in_as_an_image_or_a_frame(demo, client):
    """Another site's page (another port of this machine is another site's origin) asks with
    the browser's cookies, token and all, but the browser says what it asks for."""
    client.close_page(client.open_page())  # the browser has the token's cookies
    started = count(demo, "started")
    for dest, mode in (("image", "no-cors"), ("iframe", "navigate"), ("empty", "cors")):
        fetch = {"Sec-Fetch-Site": "same-site", "Sec-Fetch-Dest": dest, "Sec-Fetch-Mode": mode}
        status, _, body = client.request("GET", "/", **fetch)
        assert status == 403 and "page of its own" in body, (dest, status)
    assert count(demo, "started") == started
    # the user following a link to the panel, from any page, opens it
    link = {"Sec-Fetch-Site": "cross-site", "Sec-Fetch-Dest": "document"}
    status, _, page = client.request("GET", "/", **link, **{"Sec-Fetch-Mode": "navigate"})
    assert status == 200
    client.close_page(kernel_of(page))


def test_a_page_over_the_cap_is_asked_to_retry_and_starts_no_kernel(demo, client):
    kernels = [client.open_page() for _ in range(MOST)]
    started = count(demo, "started")
    status, headers, body = client.request("GET", "/")
    assert status == 429 and headers["Retry-After"] == "10"
    assert f"All {MOST} panels are open" in body and f"--max-kernels\n{MOST}" in body
    assert 'http-equiv="refresh"' in body  # the page retries by itself
    assert count(demo, "started") == started
    client.close_page(kernels.pop())  # a tab closes: a page opens again
    kernels.append(client.open_page())
    for kernel in kernels:
        client.close_page(kernel)


def test_a_load_cut_short_shuts_its_kernel_down_at_once_and_frees_its_place(demo, client):
    shut = count(demo, "shutdown")
    for _ in range(MOST + 1):  # more cut loads than the cap: each gave its place back
        asking = f"GET /?token={client.token} HTTP/1.1\r\nHost: 127.0.0.1:{demo.port}\r\n\r\n"
        with socket.create_connection(("127.0.0.1", demo.port)) as tab:
            tab.sendall(asking.encode())
            assert tab.recv(64).startswith(b"HTTP/1.1 200")
        shut += 1
        poll(
            f"the cut load's kernel to shut down ({shut} shut down in all)",
            lambda: count(demo, "shutdown"),
            lambda now, shut=shut: now >= shut,
            base=30,
            step=0.2,
        )
        assert count(demo, "shutdown") == shut
    client.close_page(client.open_page())


def test_a_warm_page_opens_on_a_kernel_started_before_it_and_is_replaced():
    server = serve(lambda port: voila_demo_argv(port, "--max-kernels", "1"), VOILA_READY)
    try:
        client = Browser(server)
        poll("the warm page", lambda: server.said("is filled with 1 kernel"), base=60, step=0.2)
        warm = re.search(r"Kernel started: (\S+)", open(server.log.name).read()).group(1)
        assert client.open_page() == warm
        assert client.request("GET", "/")[0] == 429  # the warm page is not a page over the cap
        client.close_page(warm)
        replaced = "the warm page's replacement to start"
        poll(replaced, lambda: count(server, "started"), lambda n: n >= 2, base=60, step=0.2)
        assert client.open_page() != warm
    finally:
        assert server.stop() == 0
    assert count(server, "started") == count(server, "shutdown")


def test_the_browser_opens_a_file_of_ours_that_forwards_to_the_url_with_the_token(monkeypatch):
    """The token stays out of the browser's command line, which every user of the machine can
    read: the browser is handed a file only this user can read, which forwards to the URL."""
    import os
    import stat
    import threading
    import webbrowser

    from scaling_widgets.demo.server import DemoServer

    opened = []
    monkeypatch.setattr(webbrowser, "open", opened.append)
    monkeypatch.setattr(threading.Thread, "start", lambda thread: thread.run())
    DemoServer(open_url="http://127.0.0.1:8866/?token=abc").launch_browser()
    path = opened[0].removeprefix("file://")
    assert "abc" not in opened[0] and 'url=http://127.0.0.1:8866/?token=abc"' in open(path).read()
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600


def test_without_a_token_the_page_opens_for_anyone_with_a_warning():
    server = serve(lambda port: voila_demo_argv(port, "--no-token", "--warm", "0"), VOILA_READY)
    try:
        assert server.home == f"http://127.0.0.1:{server.port}/"
        client = Browser(server)
        client.close_page(client.open_page())
    finally:
        assert server.stop() == 0
    assert (
        "warning: --no-token: every user and every program on this machine"
        in open(server.log.name).read()
    )


def test_the_kernels_sockets_are_files_where_their_path_fits_and_ports_elsewhere(monkeypatch):
    import tempfile

    from scaling_widgets.demo import kernel_transport

    monkeypatch.setattr(tempfile, "gettempdir", lambda: "/tmp")
    assert kernel_transport() == "ipc"
    # macOS's per-user folder: a socket's path there would pass the system's limit
    monkeypatch.setattr(tempfile, "gettempdir", lambda: "/var/folders/7k/" + "x" * 32 + "/T")
    assert kernel_transport() == "tcp"


def test_a_server_stopped_while_a_kernel_starts_shuts_that_kernel_down_too():
    """The warm pool refills as a page takes its kernel; a stop in that window (a slow start,
    under load) shut the known kernels down, refused the starting one as unknown, exited 1 and
    left it running. Now every start ends first, then every kernel is shut down."""
    import asyncio

    from scaling_widgets.demo.server import DemoKernels

    async def stop_while_starting():
        kernels = DemoKernels()
        start = asyncio.create_task(kernels.start_kernel(kernel_name="python3"))
        deadline = time.monotonic() + budget(30)
        while not kernels._pending_kernels and time.monotonic() < deadline:  # starting
            await asyncio.sleep(0.005)
        assert kernels._pending_kernels, f"waited {described(30)} for the kernel to be starting"
        assert not kernels.list_kernel_ids()
        await kernels.shutdown_all()
        return await start, kernels.list_kernel_ids()

    started, left = asyncio.run(stop_while_starting())
    assert started and left == []


def test_the_culler_passes_over_a_kernel_without_an_activity_to_judge():
    """A kernel its page is shutting down as the culler comes round can be left without its
    last activity: Jupyter Server's culler read it and logged an error with a traceback (seen in
    the eight-page browser test). The culler now passes over it; the page's shutdown ends it."""
    import asyncio

    from jupyter_server.services.kernels.kernelmanager import ServerKernelManager

    from scaling_widgets.demo.server import DemoKernels

    kernels = DemoKernels()
    kernels.cull_idle_timeout = 2
    kernels._kernels["unjudged"] = ServerKernelManager()  # its last_activity never set
    asyncio.run(kernels.cull_kernel_if_idle("unjudged"))  # raised TraitError before
    assert "unjudged" in kernels


def test_a_server_stopped_while_a_page_shuts_its_kernel_down_exits_0_and_leaves_none():
    """A page's kernel shutting down (its page closed, or the culler) as the signal comes: the
    server waits for that shutdown on its own loop, rather than failing to on another ("attached
    to a different loop", exit 1)."""
    import threading

    server = serve(lambda port: voila_demo_argv(port, "--warm", "0"), VOILA_READY)
    try:
        client = Browser(server)
        kernel = client.open_page()
        closing = threading.Thread(target=client.close_page, args=(kernel,), daemon=True)
        closing.start()
        # the signal as close as can be to the shutdown's start: the log read every 2 ms
        shutting = lambda: kernel in server.kernels("shutdown")  # noqa: E731
        poll("the page's kernel to start shutting down", shutting, base=60, step=0.002)
    finally:
        code = server.stop()
    log = open(server.log.name).read()
    assert kernel in server.kernels("shutdown") and code == 0, log[-3000:]
    assert server.kernels("started") == server.kernels("shutdown"), log[-3000:]
