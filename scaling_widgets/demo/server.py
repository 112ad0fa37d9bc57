"""Voila as the demo runs it: the panel's page refused to other sites' pages, a cap on the
pages open at once, and the kernel of a page left while it loads shut down as soon as the
dashboard has run (rather than at the culler's turn).

``DemoServer`` is Voila with its page handler swapped for ``PanelPage``; every other route
(static files, the kernel's websocket, the page's shutdown call, the token's login) is Voila's.
"""

from __future__ import annotations

import asyncio
import atexit
import os
import shutil
import stat
import tempfile
import threading
import webbrowser
from datetime import UTC, datetime
from html import escape

from jupyter_server.services.kernels.kernelmanager import AsyncMappingKernelManager
from jupyter_server.utils import ensure_async
from tornado import web
from traitlets import Int, TraitError, Unicode
from voila.app import Voila
from voila.tornado.handler import TornadoVoilaHandler

RETRY_SECONDS = 10
NOT_EMBEDDED = "403: the panel opens as a page of its own, not inside another site's page\n"


class DemoKernels(AsyncMappingKernelManager):
    """Jupyter Server's kernel manager less two races.

    The culler goes round a list of the kernels taken before it waits on each, and a kernel its
    page shut down meanwhile was logged as a KeyError with its traceback. And a server stopped
    while a kernel was starting (the warm pool refilling, under load) asked Jupyter Server to
    shut down a kernel it did not know yet, "Kernel does not exist", and exited 1 with that
    kernel left behind.
    """

    async def shutdown_all(self, now: bool = False) -> None:
        """Shut every kernel down, each still starting once it has started.

        Parameters
        ----------
        now : bool, default False
            Kill the kernels at once rather than ask them to stop.
        """
        # jupyter_client lists a starting kernel among those to shut down before it is one of
        # the kernels Jupyter Server's shutdown accepts: let every start end first.
        await asyncio.gather(*self._pending_kernels.values(), return_exceptions=True)
        await super().shutdown_all(now=now)

    async def cull_kernel_if_idle(self, kernel_id: str) -> None:
        """Cull the kernel as Jupyter Server does, if it is still there and has an activity to
        judge: a kernel being shut down by its page as the culler comes round can be left
        without one, and Jupyter Server's culler then logs an error with its traceback.

        Parameters
        ----------
        kernel_id : str
            The kernel's id, from the culler's list.
        """
        if kernel_id not in self:
            return
        try:
            self.get_kernel(kernel_id).last_activity  # noqa: B018 (a trait that may be unset)
        except TraitError:
            return
        await super().cull_kernel_if_idle(kernel_id)


class Pages:
    """The kernels the panel's pages hold, counted against the cap.

    A page is counted from the moment it is admitted, before its kernel starts, so that a burst
    of requests cannot all pass the check at once; and until its kernel is gone, however it went
    (the page's shutdown call, the culler, an interrupted load).

    Parameters
    ----------
    kernels : AsyncMappingKernelManager
        The server's kernel manager.
    most : int
        The most pages open at once.

    Attributes
    ----------
    kernels : AsyncMappingKernelManager
        The server's kernel manager, asked which kernels still run.
    most : int
        The most pages open at once.
    loading : int
        Pages admitted whose load has not ended.
    held : set of str
        The ids of the kernels pages took, as far as known still running.
    """

    def __init__(self, kernels, most: int):
        self.kernels, self.most = kernels, most
        self.loading = 0
        self.held: set[str] = set()

    def open(self) -> int:
        """The pages open now: those loading, and those whose kernel still runs.

        Returns
        -------
        pages : int
            ``loading`` plus the kernels of ``held`` still running.
        """
        self.held &= set(self.kernels.list_kernel_ids())
        return self.loading + len(self.held)

    def admit(self) -> bool:
        """Count one more page as loading, if the cap allows it.

        Returns
        -------
        admitted : bool
            False when ``most`` pages are open already.
        """
        if self.open() >= self.most:
            return False
        self.loading += 1
        return True

    def started(self, kernel_id: str) -> None:
        """Count the kernel a page took until it is gone.

        Parameters
        ----------
        kernel_id : str
            The kernel's id.
        """
        self.held.add(kernel_id)

    def loaded(self) -> None:
        """A page's load has ended, served or not."""
        self.loading -= 1


class _NotingKernels:
    """The kernel manager as one page's request sees it: notes the kernel the page gets, whether
    started for it or taken warm from Voila's pool."""

    def __init__(self, kernels, page: PanelPage):
        self._kernels, self._page = kernels, page

    def __getattr__(self, name):
        return getattr(self._kernels, name)

    async def start_kernel(self, **kwargs) -> str:
        kernel_id = await ensure_async(self._kernels.start_kernel(**kwargs))
        self._page.took(kernel_id)
        return kernel_id

    async def get_rendered_notebook(self, **kwargs):
        task, rendered, kernel_id = await self._kernels.get_rendered_notebook(**kwargs)
        self._page.took(kernel_id)
        return task, rendered, kernel_id


class PanelPage(TornadoVoilaHandler):
    """The panel's page: one kernel per page, within the cap, for this machine's own pages."""

    def initialize(self, pages: Pages, **kwargs):
        """Tornado's set-up of one request: Voila's, and the pages counted.

        Parameters
        ----------
        pages : Pages
            The server's count of pages, shared by every request.
        **kwargs
            Voila's handler's own keywords, passed on.
        """
        super().initialize(**kwargs)
        self.pages, self.kernel_id, self.gone = pages, None, False

    @property
    def kernel_manager(self):
        """The server's kernel manager, as this request sees it: it notes the kernel taken."""
        return _NotingKernels(self.settings["kernel_manager"], self)

    def took(self, kernel_id: str) -> None:
        """Note the kernel this page got, started for it or taken warm, and count it.

        Parameters
        ----------
        kernel_id : str
            The kernel's id.
        """
        self.kernel_id = kernel_id
        self.pages.started(kernel_id)
        # A warm kernel idled in the pool since it ran the dashboard; until the page's websocket
        # connects, the culler would count that wait and shut down the kernel the page is taking.
        self.active_now()

    def active_now(self) -> None:
        """Mark the page's kernel active now, for the culler: it judges idleness from the last
        activity, and a page still loading or connecting has shown none of its own yet."""
        now = datetime.now(UTC)
        self.settings["kernel_manager"].get_kernel(self.kernel_id).last_activity = now

    @web.authenticated
    async def get(self, path=None):
        """Serve the page: 403 to another site's page, 429 over the cap, else Voila's page.

        Parameters
        ----------
        path : str, optional
            The path Voila's handler gets from the route, passed on to its ``get_generator``.
        """
        if embedded_by_another_site(self.request.headers):
            self.set_status(403)
            self.finish(NOT_EMBEDDED)
            return
        if not self.pages.admit():
            self.busy()
            return
        # Voila's page sends this cookie's value with its shutdown call as it closes; its page
        # never asks for it, so without this read no cookie is set and the call gets 403.
        self.xsrf_token  # noqa: B018 - read for its effect: tornado sets the cookie
        try:
            async for html in self.get_generator(path=path):
                if not self.gone:
                    self.write(html)
                    self.flush()
        finally:
            self.pages.loaded()
        if not self.gone and self.kernel_id in self.settings["kernel_manager"]:
            self.active_now()  # the page arrived: its websocket connects next, later when busy
        if self.gone and self.kernel_id is not None:
            self.log.info("A page left while loading: its kernel %s shuts down", self.kernel_id)
            await ensure_async(self.settings["kernel_manager"].shutdown_kernel(self.kernel_id))

    def on_connection_close(self) -> None:
        """The browser left before the page arrived (a reload, a closed tab). Its kernel goes as
        soon as the dashboard has run, rather than idle until the culler's turn: shut down while
        it runs, Voila's renderer would log the kernel's death as an error."""
        self.gone = True
        super().on_connection_close()

    def busy(self) -> None:
        """429 with a page that says why and when to retry; it retries by itself."""
        self.set_status(429)
        self.set_header("Retry-After", str(RETRY_SECONDS))
        self.set_header("Content-Type", "text/html; charset=utf-8")
        self.finish(busy_page(self.pages.most))


def embedded_by_another_site(headers) -> bool:
    """True for a request another site's page makes of ours, as an image, a frame or a fetch
    (the browser's Sec-Fetch-* headers say so). A user's own navigation, from a link or the
    address bar, passes, as does a client that sends no such header.

    Parameters
    ----------
    headers : tornado.httputil.HTTPHeaders
        The request's headers (any mapping with ``get``).

    Returns
    -------
    embedded : bool
        True when Sec-Fetch-Site is given and is neither "same-origin" nor "none", and the
        request is not a navigation to a document.
    """
    site = headers.get("Sec-Fetch-Site")
    if site in (None, "same-origin", "none"):
        return False
    return not (
        headers.get("Sec-Fetch-Mode") == "navigate" and headers.get("Sec-Fetch-Dest") == "document"
    )


def busy_page(most: int) -> str:
    """The page a request over the cap gets: why, and that it retries by itself.

    Parameters
    ----------
    most : int
        The most pages open at once.

    Returns
    -------
    page : str
        The HTML, which reloads itself after ``RETRY_SECONDS``.
    """
    return f"""<!doctype html>
<html><head><meta charset="utf-8"><meta http-equiv="refresh" content="{RETRY_SECONDS}">
<title>scaling-widgets: busy</title></head>
<body style="font-family: sans-serif; max-width: 40em; margin: 3em auto">
<h1>All {most} panels are open</h1>
<p>This server runs at most {most} panels at once (<code>scaling-widgets demo --max-kernels
{most}</code>), one kernel each, so that they fit in this machine's memory.</p>
<p>Close a panel's tab, and this page loads within {RETRY_SECONDS} seconds: it tries again by
itself. A tab that closed without a word frees its panel once its kernel has been idle for the
server's <code>--cull-after</code> seconds.</p>
</body></html>"""


class DemoServer(Voila):
    """Voila serving the panel through ``PanelPage``, and opening the URL that carries the
    token.

    Attributes
    ----------
    max_kernels : int
        The most pages with a kernel at once; default 8.
    open_url : str
        The URL the browser opens: the token is in it.
    """

    max_kernels = Int(8, config=True, help="the most pages with a kernel at once")
    open_url = Unicode("", config=True, help="the URL the browser opens: the token is in it")

    def init_handlers(self) -> list:
        """Voila's handlers, ``PanelPage`` in the place of its page's.

        Returns
        -------
        handlers : list
            Voila's routes, the page's handled by ``PanelPage`` with a shared ``Pages``.
        """
        handlers = super().init_handlers()
        pages = Pages(self.kernel_manager, self.max_kernels)
        for i, (route, handler, *kwargs) in enumerate(handlers):
            if handler is TornadoVoilaHandler:
                handlers[i] = (route, PanelPage, {**kwargs[0], "pages": pages})
        return handlers

    def stop(self) -> None:
        """Voila's stop, its kernels shut down on the server's own loop. Voila runs the shutdown
        on a new loop, and a kernel the culler or its page was shutting down as the signal came
        left a task of the server's loop that the new one cannot wait on: it exited 1. The
        kernels' folder goes after them: a kernel the warm pool was starting still writes its
        connection file there."""
        self.ioloop.run_sync(self.kernel_manager.shutdown_all)
        shutil.rmtree(self.connection_dir, ignore_errors=True)

    def launch_browser(self) -> None:
        """Open a file of our own that forwards to ``open_url``, as Jupyter does: the token then
        never appears in the browser's command line, which any user of the machine can read."""
        fd, path = tempfile.mkstemp(suffix=".html")
        os.fchmod(fd, stat.S_IRUSR | stat.S_IWUSR)
        with os.fdopen(fd, "w", encoding="utf-8") as file:
            url = escape(self.open_url)
            file.write(f'<meta http-equiv="refresh" content="0;url={url}"><a href="{url}">open</a>')
        atexit.register(os.remove, path)
        threading.Thread(target=webbrowser.open, args=("file://" + path,), daemon=True).start()
