"""The demo server's memory over many pages: does it give back what each page's kernel took?

Serves the panel with ``scaling-widgets demo`` and, 100 times over plain HTTP, opens the page (its
kernel starts and runs the dashboard) and closes it (the page's shutdown call). Prints the
server's own resident memory every 10 pages, how much it grew a page over the first and the
second half, and a page's kernel at its largest. A leak grows as much in the second half as in
the first; a warm-up (imports, caches) grows in the first only.
Run: ``python benchmarks/bench_demo_server.py [pages]``; it asserts nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path

import psutil

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from tests.ui.servers import Browser, Server, free_port, voila_demo_argv  # noqa: E402

MB = 2**20


def main(pages: int = 100) -> None:
    if pages < 20 or pages % 10:
        raise SystemExit(f"pages: a multiple of 10 from 20 on, got {pages}")
    port = free_port()
    server = Server(voila_demo_argv(port, "--max-kernels", "2"), port, "/voila/static/voila.js")
    process = psutil.Process(server.process.pid)
    client = Browser(server)
    resident, kernel_peak = [], 0
    try:
        for page in range(pages + 1):
            if page % 10 == 0:
                resident.append(process.memory_info().rss / MB)
                print(f"after {page:>3} pages: server {resident[-1]:6.1f} MB", flush=True)
            if page == pages:
                break
            kernel = client.open_page()
            for child in process.children():
                kernel_peak = max(kernel_peak, child.memory_info().rss / MB)
            client.close_page(kernel)
    finally:
        server.stop()
    half = (len(resident) - 1) // 2
    first = (resident[half] - resident[0]) / (10 * half)
    second = (resident[-1] - resident[half]) / (10 * (len(resident) - 1 - half))
    print(f"growth a page: first half {first * 1024:.0f} KB, second half {second * 1024:.0f} KB")
    print(f"a page's kernel, resident with the panel drawn: {kernel_peak:.0f} MB")


if __name__ == "__main__":
    main(*map(int, sys.argv[1:]))
