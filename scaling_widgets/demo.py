"""``scaling-widgets demo``: the panel served by Voila on 127.0.0.1.

The dashboard notebook ships inside the package, so this works from an installed wheel.
Voila runs in this process: Ctrl-C or SIGTERM stop the server and shut its kernels down.
"""

from __future__ import annotations

import os
import socket
from pathlib import Path

DASHBOARD = Path(__file__).with_name("dashboard.ipynb")
# Our Voila template (share/voila/templates/offline): the lab template without its CDN links.
TEMPLATES = Path(__file__).with_name("share")
DEFAULT_PORT = 8866
# Front-end extensions Voila should not load: Notebook 7's, installed alongside by many, fails
# outside its own page ("The getter for the shared module is not a function") and logs an error.
NOT_FOR_VOILA = ("@jupyter-notebook/lab-extension",)


def free_port(start: int = DEFAULT_PORT, tries: int = 50) -> int:
    """The first port from ``start`` on that nothing listens on at 127.0.0.1."""
    for port in range(start, start + tries):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) != 0:
                return port
    raise ValueError(f"no free port in {start}..{start + tries - 1}; pass --port")


def _issue_xsrf_cookie(handler, notebook, cwd) -> None:
    """Voila's prelaunch hook: give the page its ``_xsrf`` cookie.

    The page sends the cookie's value with its shutdown call when it closes. Voila's page never
    asks for the token, so no cookie is set, and the call fails with 403 "'_xsrf' argument missing".
    Reading ``xsrf_token`` sets the cookie.
    """
    handler.xsrf_token  # noqa: B018 - read for its effect: tornado sets the cookie


def serve(
    port: int | None = None, open_browser: bool = True, cull_after: int = 60, theme: str = "light"
) -> int:
    """Serve the dashboard until stopped; returns the exit status.

    A page's kernel lives while the page is open. Once it has closed (its websocket gone) and the
    kernel has idled ``cull_after`` seconds, the server shuts the kernel down: a closed page leaves
    no kernel behind, whatever the browser managed to send as it closed.
    """
    try:
        from traitlets.config import Config
        from voila.app import Voila
    except ImportError:
        raise ValueError('the demo needs Voila: pip install "scaling-widgets[demo]"') from None
    port = free_port() if port is None else port
    # Voila finds templates in the Jupyter data directories; ours joins them for this process.
    os.environ["JUPYTER_PATH"] = os.pathsep.join(
        filter(None, [str(TEMPLATES), os.environ.get("JUPYTER_PATH")])
    )
    print(f"scaling-widgets: the panel is at http://127.0.0.1:{port}/ (Ctrl-C to stop)", flush=True)
    argv = [
        str(DASHBOARD),
        f"--port={port}",
        "--Voila.ip=127.0.0.1",
        "--Voila.port_retries=0",
        "--no-browser" if not open_browser else "--Voila.open_browser=True",
        *(f"--VoilaConfiguration.extension_denylist={name}" for name in NOT_FOR_VOILA),
        "--VoilaConfiguration.template=offline",
        f"--VoilaConfiguration.theme={theme}",
        f"--MappingKernelManager.cull_idle_timeout={cull_after}",
        "--MappingKernelManager.cull_connected=False",
        f"--MappingKernelManager.cull_interval={max(1, cull_after // 4)}",
    ]
    config = Config()
    config.VoilaConfiguration.prelaunch_hook = _issue_xsrf_cookie
    # Only this machine's names: a page on another site whose name rebinds to 127.0.0.1 sends its
    # own Host header and is refused (Voila allows any Host; Jupyter Server, by default, not).
    config.Voila.tornado_settings = {"allow_remote_access": False}
    Voila.launch_instance(argv=argv, config=config)
    return 0
