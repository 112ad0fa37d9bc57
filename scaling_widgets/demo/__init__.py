"""``scaling-widgets demo``: the panel served by Voila on 127.0.0.1, for this machine's user.

The dashboard notebook ships inside the package, so this works from an installed wheel.
Voila runs in this process: Ctrl-C or SIGTERM stop the server and shut its kernels down.
What it guards against, and why, is in ``server.py`` and the README's demo section.

Tier 10 of the package (``tests/test_tiers.py`` declares the order), above app.py, which its
dashboard shows: it may import anything but cli/.
"""

from __future__ import annotations

import os
import secrets
import socket
import sys
import tempfile
from pathlib import Path

DASHBOARD = Path(__file__).with_name("dashboard.ipynb")
# Our Voila template (share/voila/templates/offline): the lab template without its CDN links.
TEMPLATES = Path(__file__).with_name("share")
DEFAULT_PORT = 8866
# Front-end extensions Voila should not load: Notebook 7's, installed alongside by many, fails
# outside its own page ("The getter for the shared module is not a function") and logs an error.
NOT_FOR_VOILA = ("@jupyter-notebook/lab-extension",)
# A page's kernel with the panel drawn, resident (measured: benchmarks/bench_demo_server.py),
# with room for the panel's own growth as it is used.
KERNEL_BYTES = 200 * 2**20
# nbclient waits this long after a cell's reply for the kernel's last outputs. Its default, 4 s,
# is shorter than a busy server takes to read them when many pages start at once, and a page
# whose display message came late was served without its panel. A kernel always sends them; the
# wait ends as soon as they are read.
OUTPUTS_WAIT = 300


def free_port(start: int = DEFAULT_PORT, tries: int = 50) -> int:
    """The first port from ``start`` on that nothing listens on at 127.0.0.1.

    Parameters
    ----------
    start : int, default 8866
        The first port tried (``DEFAULT_PORT``).
    tries : int, default 50
        How many ports to try: ``start`` to ``start + tries - 1``.

    Returns
    -------
    port : int
        The first of them that refuses a connection.

    Raises
    ------
    ValueError
        None of them is free.
    """
    for port in range(start, start + tries):
        with socket.socket() as s:
            if s.connect_ex(("127.0.0.1", port)) != 0:
                return port
    raise ValueError(f"no free port in {start}..{start + tries - 1}; pass --port")


def kernel_transport() -> str:
    """ "ipc" where it fits, else "tcp": the kernels' sockets as files beside their connection
    files, in Voila's own temporary folder (mode 0700), which other users of the machine cannot
    reach, as they can a port of 127.0.0.1. A socket's path must fit in about 100 bytes
    (the folder, then "voila_xxxxxxxx/kernel-<36-character id>-ipc-5"), and Windows has none.

    Returns
    -------
    transport : str
        "ipc" on POSIX with a temporary folder's path of at most 30 characters, else "tcp".
    """
    fits = len(tempfile.gettempdir()) <= 100 - 70
    return "ipc" if os.name == "posix" and fits else "tcp"


def kernels_that_fit() -> int:
    """Pages at once that half of the memory available now holds, at one kernel each.

    Returns
    -------
    pages : int
        Half the available memory over ``KERNEL_BYTES`` (200 MiB) a kernel; at least 1.
    """
    import psutil

    return max(1, psutil.virtual_memory().available // 2 // KERNEL_BYTES)


def serve(
    port: int | None = None,
    open_browser: bool = True,
    cull_after: int = 60,
    theme: str = "light",
    max_kernels: int | None = None,
    token: bool = True,
    warm: int = 1,
) -> int:
    """Serve the dashboard until stopped; returns the exit status.

    The URL carries a token made now, unless ``token`` is False. At most ``max_kernels`` pages
    are open at once (default: what half of the free memory holds), and ``warm`` more have their
    kernel started and the dashboard run before anyone asks.

    A page's kernel lives while the page is open. Once it has closed (its websocket gone) and the
    kernel has idled ``cull_after`` seconds, the server shuts the kernel down: a closed page leaves
    no kernel behind, whatever the browser managed to send as it closed.

    Parameters
    ----------
    port : int, optional
        The port on 127.0.0.1; None: the first free one from 8866 (``free_port``).
    open_browser : bool, default True
        Open the panel in the browser once the server runs.
    cull_after : int, default 60
        How long a closed page's kernel may idle before it is shut down [s].
    theme : str, default "light"
        The page's theme: "light" or "dark".
    max_kernels : int, optional
        The most pages open at once, one kernel each; None: what half of the free memory holds
        (``kernels_that_fit``).
    token : bool, default True
        Put a token made now in the URL; False: any user or program on this machine can open
        the panel.
    warm : int, default 1
        Pages kept ready, their kernels started and the dashboard run; 0: none.

    Returns
    -------
    status : int
        0, once the server has stopped.

    Raises
    ------
    ValueError
        Voila is not installed, ``max_kernels`` is below 1 or ``warm`` below 0.
    """
    try:
        from traitlets.config import Config

        from .server import DemoServer
    except ImportError:
        raise ValueError('the demo needs Voila: pip install "scaling-widgets[demo]"') from None
    if max_kernels is not None and max_kernels < 1:
        raise ValueError(f"--max-kernels must be at least 1, got {max_kernels}")
    if warm < 0:
        raise ValueError(f"--warm must be 0 or more, got {warm}")
    port = free_port() if port is None else port
    max_kernels = kernels_that_fit() if max_kernels is None else max_kernels
    # Voila finds templates in the Jupyter data directories; ours joins them for this process.
    os.environ["JUPYTER_PATH"] = os.pathsep.join(
        filter(None, [str(TEMPLATES), os.environ.get("JUPYTER_PATH")])
    )
    secret = secrets.token_hex(24) if token else ""
    url = f"http://127.0.0.1:{port}/" + (f"?token={secret}" if token else "")
    announce(url, max_kernels, token)
    argv = voila_argv(port, open_browser, cull_after, theme, warm)
    config = Config()
    config.Voila.token = secret
    config.DemoServer.open_url = url
    config.DemoServer.max_kernels = max_kernels
    # Only this machine's names: a page on another site whose name rebinds to 127.0.0.1 sends its
    # own Host header and is refused (Voila allows any Host; Jupyter Server, by default, not).
    config.Voila.tornado_settings = {"allow_remote_access": False}
    DemoServer.launch_instance(argv=argv, config=config)
    return 0


def announce(url: str, max_kernels: int, token: bool) -> None:
    """What the user reads at the start: where the panel is, how many pages, and any warning.

    Parameters
    ----------
    url : str
        The panel's URL, with its token.
    max_kernels : int
        The most pages open at once.
    token : bool
        Whether the URL carries a token; False: a warning on stderr that every user and program
        on this machine can open the panel.
    """
    if not token:
        print(
            "scaling-widgets: warning: --no-token: every user and every program on this machine"
            " can open the panel and start its kernels",
            file=sys.stderr,
            flush=True,
        )
    print(f"scaling-widgets: the panel is at {url} (Ctrl-C to stop)", flush=True)
    print(f"scaling-widgets: at most {max_kernels} pages at once", flush=True)


def voila_argv(port: int, open_browser: bool, cull_after: int, theme: str, warm: int) -> list:
    """Voila's command line for the dashboard: this machine only, our template, the warm pages,
    the culler, and the kernels' transport.

    Parameters
    ----------
    port : int
        The port on 127.0.0.1.
    open_browser : bool
        Whether Voila opens the browser.
    cull_after : int
        How long a closed page's kernel may idle before it is shut down [s]; the culler looks
        every quarter of it, at least every second.
    theme : str
        The page's theme: "light" or "dark".
    warm : int
        Pages kept ready (Voila's pool of preheated kernels); 0: none.

    Returns
    -------
    argv : list of str
        The dashboard's path, then Voila's options.
    """
    return [
        str(DASHBOARD),
        f"--port={port}",
        "--Voila.ip=127.0.0.1",
        "--Voila.port_retries=0",
        f"--Voila.open_browser={open_browser}",
        *(f"--VoilaConfiguration.extension_denylist={name}" for name in NOT_FOR_VOILA),
        "--VoilaConfiguration.template=offline",
        f"--VoilaConfiguration.theme={theme}",
        f"--VoilaExecutor.iopub_timeout={OUTPUTS_WAIT}",
        f"--VoilaConfiguration.preheat_kernel={warm > 0}",
        f"--VoilaConfiguration.default_pool_size={warm}",
        "--VoilaConfiguration.multi_kernel_manager_class=scaling_widgets.demo.server.DemoKernels",
        f"--KernelManager.transport={kernel_transport()}",
        f"--MappingKernelManager.cull_idle_timeout={cull_after}",
        "--MappingKernelManager.cull_connected=False",
        f"--MappingKernelManager.cull_interval={max(1, cull_after // 4)}",
    ]
