"""`scaling-widgets demo` over plain HTTP: it answers this machine's names only, and a request
under another site's name, or a websocket from another site's page, is refused and starts no
kernel (DNS rebinding, cross-origin pages)."""

import http.client
import re

import pytest

from .servers import Server, free_port, voila_demo_argv

UPGRADE = {
    "Connection": "Upgrade",
    "Upgrade": "websocket",
    "Sec-WebSocket-Version": "13",
    "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
}


@pytest.fixture(scope="module")
def demo():
    server = Server(voila_demo_argv(port := free_port()), port, "/voila/static/voila.js")
    yield server
    assert server.stop() == 0


def request(server, method: str, path: str, **headers) -> tuple[int, str]:
    connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=60)
    connection.request(method, path, headers=headers)
    response = connection.getresponse()
    return response.status, response.read().decode(errors="replace")


def kernels_started(server) -> int:
    server.log.flush()
    with open(server.log.name) as log:
        return log.read().count("Kernel started:")


def test_another_sites_name_or_origin_is_refused_and_starts_no_kernel(demo):
    port = demo.port
    status, page = request(demo, "GET", "/", Host=f"127.0.0.1:{port}")
    assert status == 200
    kernel = re.search(r'"kernelId": "([0-9a-f-]+)"', page).group(1)
    started = kernels_started(demo)
    rebound = {"Host": f"evil.example:{port}"}
    # the page, the kernel's websocket and the page's shutdown call, under a rebinding name
    assert request(demo, "GET", "/", **rebound)[0] == 403
    channels = f"/api/kernels/{kernel}/channels"
    websocket = {**UPGRADE, **rebound, "Origin": f"http://evil.example:{port}"}
    assert request(demo, "GET", channels, **websocket)[0] == 403
    assert request(demo, "POST", f"/voila/api/shutdown/{kernel}", **rebound)[0] == 403
    # this machine's name, but another site's page opening the websocket
    foreign = {**UPGRADE, "Host": f"127.0.0.1:{port}", "Origin": "http://evil.example"}
    assert request(demo, "GET", channels, **foreign)[0] == 403
    assert kernels_started(demo) == started  # none of them started a kernel
    # this machine's other names are its own
    assert request(demo, "GET", "/", Host=f"localhost:{port}")[0] == 200
    assert kernels_started(demo) == started + 1
