"""`scaling-widgets demo` in a real browser: the panel renders, responds, and rejects bad input
inline."""

import math
import re
import time

import psutil
import pytest

from .helpers import (
    CHANGE,
    PANEL,
    bar_heights,
    budget,
    budgeted,
    curve_paths,
    poll,
    reading_problems,
    summary,
    wait_for_change,
    wait_for_element,
    wait_for_js,
    wait_for_panel,
    wait_for_quiet,
    wait_for_text,
    wait_until,
)
from .servers import ARTIFACTS, VOILA_READY, kernel_of, local, serve, voila_demo_argv

# The plan table's rows as text: its cells in order, eleven to a row, the header row left out.
ROWS = """() => {
  const cells = [...document.querySelectorAll('.sw-plan-table > *')].map(c => c.innerText.trim());
  const rows = [];
  for (let i = 11; i < cells.length; i += 11) rows.push(cells.slice(i, i + 11));
  return rows;
}"""


def round_trip(page) -> None:
    """Hide the roofline's DP curve and show it again, each time until the plot follows. The
    kernel answers a page's messages in the order they come: once it has answered these, it has
    answered all the page sent before them, and the page holds those answers. A sign that nothing
    more is on its way, where a fixed wait only hopes so."""
    dp = page.locator(".sw-roofline-controls button:text-is('DP')")
    drawn = curve_paths(page)
    dp.click()
    wait_for_change(page, curve_paths, drawn, "the roofline to hide its DP curve")
    dp.click()
    # The curves and the scale they share arrive as separate messages: wait for all of them,
    # the plot as it was, not the first path that moves.
    wait_until(page, curve_paths, lambda now: now == drawn, "the roofline to draw as before")


def picker_text(page) -> str:
    """The mesh picker's text, its chip names on one line as the page keeps them."""
    return page.inner_text(".sw-mesh-picker").replace("\xa0", " ")


def memory_column(page) -> list[float]:
    return [in_bytes(row[4]) for row in page.evaluate(ROWS)]


def in_bytes(text: str) -> float:
    """ "1.95 GB" -> 1.95e9, as the panel writes sizes."""
    number, unit = text.split()
    return float(number) * {"B": 1, "kB": 1e3, "KB": 1e3, "MB": 1e6, "GB": 1e9, "TB": 1e12}[unit]


CONTROLS = (
    ".sw-model-picker",
    ".sw-training-controls",
    ".sw-mesh-picker",
    ".sw-strategy-selector",
    ".sw-roofline-controls",
    ".sw-summary",
    ".sw-roofline",
    ".sw-memory-bar",
    ".sw-mesh-picture",
    ".sw-step-breakdown",
    ".sw-pipeline-picture",
)


def test_the_panel_renders_every_part_without_errors(page, voila_demo):
    page.goto(voila_demo.home)
    wait_for_panel(page)
    for selector in CONTROLS:
        assert page.locator(selector).first.is_visible(), selector
    assert len(curve_paths(page)) >= 5 and all(d.startswith("M") for d in curve_paths(page)[:3])
    assert len(bar_heights(page)) == 28  # 4 strategies x 7 parts of the peak (MODEL.md §E)
    # the predicted step's fastest split (the chapter's X=1024, Y=4 is the one at 40 % MFU given)
    assert "roofline): compute-bound" in summary(page) and "in use: X=2048, Y=2" in summary(page)
    assert (
        page.locator(
            ".jp-OutputArea-output[data-mime-type*='stderr'], "
            ".jp-RenderedText[data-mime-type*='error']"
        ).count()
        == 0
    )
    assert page.errors == []
    assert page.external == []  # no request leaves the machine (our Voila template drops the CDN's)
    # all of it in view,
    page.set_viewport_size({"width": page.viewport_size["width"], "height": 1800})
    wait_for_quiet(page)  # as figures draw only in view
    page.locator(".sw-panel").screenshot(path=str(ARTIFACTS / "panel.png"))  # the README's picture


@pytest.mark.parametrize(
    ("theme", "width"),
    [("light", 900), ("light", 1400), ("light", 1920), ("dark", 900), ("dark", 1920)],
)
def test_the_panel_reads_at_every_width_and_in_both_themes(page, request, theme, width):
    """One column at 900 px, two at 1400, plots grown at 1920: nothing cut, no plot label over
    another or off its figure, every text at WCAG AA, no warning of ours in the console."""
    server = request.getfixturevalue("voila_demo" if theme == "light" else "voila_dark")
    # the whole panel in view: figures draw
    page.set_viewport_size({"width": width, "height": 2600})
    page.goto(server.home)
    wait_for_panel(page)
    assert reading_problems(page) == {"contrast": [], "cut": [], "labels": []}
    roofline = page.locator(".sw-panel .sw-roofline").bounding_box()
    memory = page.locator(".sw-panel .sw-memory-bar").bounding_box()
    side_by_side = abs(roofline["y"] - memory["y"]) < 5
    assert side_by_side == (width >= 1400)  # one column on a narrow window
    # the plots grow
    assert roofline["width"] >= (0.5 * width if width >= 1400 else 0.9 * (width - 60))
    page.screenshot(path=str(ARTIFACTS / f"voila-{theme}-{width}.png"))
    text = summary(page)  # and a GPU cluster: nodes, GPUs per node, its own labels
    page.select_option(".sw-mesh-picker select >> nth=0", label="H100")
    wait_for_change(page, summary, text, "the summary to show the H100 cluster")
    assert reading_problems(page) == {"contrast": [], "cut": [], "labels": []}
    assert page.errors == [] and page.warnings == [] and page.external == []


def test_changing_the_hardware_mesh_strategy_and_batch_changes_what_is_shown(page, voila_demo):
    page.goto(voila_demo.home)
    wait_for_panel(page)
    paths, bars, text = curve_paths(page), bar_heights(page), summary(page)

    page.select_option(".sw-mesh-picker select >> nth=0", label="TPU v5e")  # hardware
    paths = wait_for_change(page, curve_paths, paths)
    bars = wait_for_change(page, bar_heights, bars)
    wait_for_text(page, ".sw-mesh-picker", "256 chips")  # v5e's pod

    axis = page.locator(".sw-mesh-picker input[type=number]").first  # the slice's first axis
    axis.fill("8")
    axis.press("Enter")
    paths = wait_for_change(page, curve_paths, paths)
    wait_for_text(page, ".sw-mesh-picker", "128 chips")

    text = summary(page)
    page.click(".sw-strategy-selector button:has-text('FSDP') >> nth=0")
    text = wait_for_change(page, summary, text)

    batch = page.locator(".sw-training-controls input[type=text]").first
    batch.fill("50M")
    batch.press("Enter")
    wait_for_change(page, curve_paths, paths)
    wait_for_change(page, summary, text)
    assert page.errors == []


def test_a_change_of_chip_lands_on_a_slice_that_runs_each_time(page, voila_demo):
    # v5e -> v5p -> H100 -> v5e at the default batch: each switch is taken (the page shows the
    # chip), nothing is refused, and the panel says what it changed besides the chip.
    page.goto(voila_demo.home)
    wait_for_panel(page)
    text, chip = summary(page), ".sw-mesh-picker select >> nth=0"
    for label in ("TPU v5e", "TPU v5p", "H100", "TPU v5e"):
        page.select_option(chip, label=label)
        text = wait_for_change(page, summary, text, f"the summary to follow the {label}")
        shown = page.eval_on_selector(chip, "s => s.options[s.selectedIndex].text")
        shown = shown.replace("\xa0", " ")  # the option keeps its name on one line
        assert shown == label  # taken, not refused back to the last chip
        assert not page.locator(".sw-mesh-picker .sw-error").is_visible()
        # what else it changed, said: the note is a message of its own, after the summary's
        noted = lambda t, said=f"to {label}:": "From " in t and said in t  # noqa: E731
        wait_until(page, picker_text, noted, f"the mesh picker's note on the {label}")
    assert page.errors == []


def test_a_bad_value_shows_the_message_and_keeps_the_last_valid_state(page, voila_demo):
    page.goto(voila_demo.home)
    wait_for_panel(page)
    wait_for_quiet(page)  # every figure drawn: what is read next is the last valid state
    paths, bars, text = curve_paths(page), bar_heights(page), summary(page)
    axis = page.locator(".sw-mesh-picker input[type=number]").first
    axis.fill("99")
    axis.press("Enter")
    message = page.locator(".sw-mesh-picker .sw-error")
    wait_for_element(message, "the mesh picker's message", base=CHANGE)
    assert "a slice that fits in the chip's pod" in message.inner_text()
    round_trip(page)  # a wrong redraw, had the kernel sent one, would have arrived
    assert curve_paths(page) == paths and bar_heights(page) == bars and summary(page) == text
    assert axis.input_value() == "16"  # the field shows the scenario again

    batch = page.locator(".sw-training-controls input[type=text]").first
    batch.fill("lots")
    batch.press("Enter")
    error = page.locator(".sw-training-controls .sw-error")
    wait_for_element(error, "the training controls' message", base=CHANGE)
    assert "batch must be a number" in page.inner_text(".sw-training-controls .sw-error")
    assert curve_paths(page) == paths


def test_planning_sorting_and_using_a_recommendation_redraws_the_panel(page, voila_demo):
    page.goto(voila_demo.home)
    wait_for_panel(page)
    text = summary(page)
    # open the collapsed section
    page.click("text=Recommendations: the best layouts of this cluster")
    page.click(".sw-recommendations button:has-text('Plan every layout')")
    wait_for_js(
        page,
        "the plan to list 10 layouts",
        "document.querySelectorAll('.sw-plan-table .sw-plan-use').length == 10",
    )
    wait_for_text(page, ".sw-recommendations", "layouts evaluated")  # a message of its own
    rows = lambda: page.evaluate(ROWS)  # noqa: E731 - the table as the reader sees it, row by row
    page.click(".sw-plan-header:has-text('memory/chip')")
    wait_for_text(page, ".sw-plan-table", "memory/chip ▲")
    # sorted by the peak per chip, smallest first (the rows may arrive after the header)
    rows_sorted = "the plan's rows to sort by memory per chip"
    wait_until(page, memory_column, lambda memory: memory == sorted(memory), rows_sorted)
    # the table reads too
    assert reading_problems(page) == {"contrast": [], "cut": [], "labels": []}
    # not the layout shown (its row is marked "●")
    other = next(i for i, row in enumerate(rows()) if "●" not in row[0])
    step, used = rows()[other][2], rows()[other][4]
    page.locator(".sw-plan-table .sw-plan-use").nth(other).click()
    shown = wait_for_change(page, summary, text, "the summary to show the row's layout")
    # The row's own numbers, read back from the summary: one path for both.
    assert step in shown and f"= {used} reserved" in shown, (rows()[other], shown)
    # the row is marked as the scenario's own (the mark moves from the row shown before)
    marked = "the used row to be marked ●"
    wait_until(page, lambda p: p.evaluate(ROWS)[other][0], lambda mark: "●" in mark, marked)
    assert page.errors == []


def test_a_fresh_page_opens_on_the_predicted_step_and_stays_there(page, voila_demo):
    """The README's promise, after the browser's first sync of every widget: a slider the page
    renders sends its value back, and a greyed-out MFU slider's echo must not give the MFU."""
    page.goto(voila_demo.home)
    wait_for_panel(page)
    ticked = ".sw-training-controls input[type=checkbox]"
    round_trip(page)  # the widgets' first echoes from the page reached the kernel, and its answers
    shown = summary(page)
    assert "Predicted step" in shown and "MFU given" not in page.inner_text(".sw-panel")
    assert page.locator(ticked).first.is_checked()
    assert page.errors == []


def test_giving_the_mfu_and_predicting_again_redraw_the_step(page, voila_demo):
    page.goto(voila_demo.home)
    wait_for_panel(page)
    widths = lambda p: p.eval_on_selector_all(  # noqa: E731 - the step bar's pieces
        ".sw-step-breakdown rect.bar", "els => els.map(e => +e.getAttribute('width'))"
    )
    predicted, text = widths(page), summary(page)
    assert "Predicted step" in text
    page.click(".sw-training-controls label:has-text('predict the step')")
    given = wait_for_change(page, summary, text, "the summary to take the MFU given")
    assert "Predicted step" not in given
    page.click(".sw-training-controls label:has-text('predict the step')")
    shown = wait_for_change(page, summary, given, "the summary to predict the step again")
    assert "Predicted step" in shown and "HFU" in shown
    redrawn = "the step's bar to return to its predicted widths"
    assert wait_until(page, widths, lambda now: now == predicted, redrawn)
    assert page.errors == []


def cull_after() -> int:
    """``--cull-after`` for the culler's tests: 3 s on a calm machine, longer on a busy one. The
    culler counts a page's kernel idle from the dashboard's end (or from a warm kernel's taking),
    before the page connects; a page slower to connect than this loses its kernel."""
    return math.ceil(budget(3))


def test_each_open_page_keeps_one_kernel_and_a_closed_or_reloaded_page_none(browser):
    """Eight pages at once. Two reload, three close as a browser closes a tab (the page's shutdown
    call runs), one vanishes without a word (the server culls its kernel once idle), and a ninth
    is left while it loads. What stays is the open pages' kernels. No warm page: a warm page
    arrives whole at once, so the ninth would leave a loaded page rather than a load."""
    idle = cull_after()
    options = ("--cull-after", str(idle), "--warm", "0")
    server = serve(lambda port: voila_demo_argv(port, *options), VOILA_READY)
    log = ARTIFACTS / f"server-{server.port}.log"
    kernel_of_page = lambda page: kernel_of(page.content())  # noqa: E731

    def new_page():
        page = budgeted(browser.new_context()).new_page()
        page.route(
            "**/*",
            lambda route, request: route.continue_() if local(request.url) else route.abort(),
        )
        return page

    try:
        pages = []
        for _ in range(8):
            pages.append(page := new_page())
            page.goto(server.home)
            wait_for_panel(page)
        gone = {kernel_of_page(page) for page in pages[:6]}
        for page in pages[:2]:
            page.reload()
            wait_for_panel(page)
        for page in pages[2:5]:
            page.close(run_before_unload=True)
        pages[5].context.close()
        left = new_page()
        left.goto(server.home, wait_until="commit")
        left.goto("about:blank")
        left.context.close()
        # the six pages' kernels and the cut load's; the vanished page's, once the culler acts
        shut = f"seven kernels shut down, the vanished page's culled after {idle} s idle"
        poll(shut, lambda: len(server.kernels("shutdown")), lambda n: n >= 7, base=60, step=0.5)
        text = log.read_text()
        cut_short = re.findall(r"A page left while loading: its kernel (\S+)", text)
        assert len(cut_short) == 1, text[-3000:]
        assert server.kernels("shutdown") == gone | set(cut_short), text[-3000:]
        open_pages = {kernel_of_page(page) for page in pages[:2] + pages[6:]}
        assert server.kernels("started") - server.kernels("shutdown") == open_pages, text[-3000:]
        # no 4xx/5xx, no error
        assert not re.search(r"(^|\s)[45]\d\d (GET|POST|PUT|DELETE|PATCH) /", text, re.M), text[
            -3000:
        ]
        assert "ERROR" not in text and "Traceback" not in text, text[-3000:]
        for page in pages[:2] + pages[6:]:
            page.context.close()
    finally:
        assert server.stop() == 0


def test_a_page_opened_after_the_warm_kernel_idled_past_the_culler_still_runs(page):
    """The warm page's kernel waits in the pool, idle, for its page. Once a page takes it, the
    culler must count its idling from then: counted from the pool, it shut the kernel down as
    the page loaded, and the page waited forever for widgets on a kernel that was gone."""
    idle = cull_after()
    server = serve(lambda port: voila_demo_argv(port, "--cull-after", str(idle)), VOILA_READY)
    try:
        poll("the warm pool to fill", lambda: server.said("is filled with"), base=PANEL)
        (warm,) = kernel_processes(server)
        # A real interval: the warm kernel has run the dashboard and idled three times
        # --cull-after (the culler looking every second), by its own CPU clock.
        idled = f"the warm kernel to idle {3 * idle} s, three times --cull-after"
        poll(idled, idle_seconds(warm), lambda seconds: seconds >= 3 * idle, base=PANEL, step=0.2)
        page.goto(server.home)
        wait_for_panel(page)
        assert server.said("Kernel does not exist") == 0
        assert page.errors == []
    finally:
        assert server.stop() == 0


def kernel_processes(server) -> list[psutil.Process]:
    children = psutil.Process(server.process.pid).children(recursive=True)
    return [child for child in children if "ipykernel_launcher" in child.cmdline()]


def idle_seconds(process: psutil.Process):
    """A reading for ``poll``: how long ``process`` has used no CPU, as far as seen."""
    seen = {"cpu": None, "since": time.monotonic()}

    def idle() -> float:
        cpu = sum(process.cpu_times()[:2])
        if cpu != seen["cpu"]:
            seen.update(cpu=cpu, since=time.monotonic())
        return time.monotonic() - seen["since"]

    return idle


def test_a_mixture_of_experts_with_expert_parallelism_in_the_panel(page, voila_demo):
    """DeepSeek-V3 on H100s: the model picker gives total and active parameters, and EP 8 (one
    node) is taken from the data axis and named in the layout, the mesh and the summary."""
    page.goto(voila_demo.home)
    wait_for_panel(page)
    text = summary(page)
    page.select_option(".sw-mesh-picker select >> nth=0", label="H100")
    text = wait_for_change(page, summary, text, "the summary to show the H100s")  # as GPUs
    nodes = page.locator(".sw-mesh-picker .sw-axis-length input").nth(0)
    nodes.fill("128")  # 1,024 GPUs
    nodes.press("Enter")
    text = wait_for_change(page, summary, text, "the summary to show 128 nodes")
    page.select_option(".sw-model-picker select >> nth=0", label="DeepSeek-V3")
    text = wait_for_change(page, summary, text, "the summary to show DeepSeek-V3")
    wait_for_text(page, ".sw-model-picker", "37.6B active")
    assert "MoE: a chip holds" in text
    # pure FSDP (TP 1), so that the data axis's first 8 GPUs, one node, are the EP group: the page
    # opens on the planner's layout, whose TP would spread EP 8 over two nodes
    page.click(".sw-strategy-selector button:has-text('FSDP') >> nth=0")
    text = wait_for_change(page, summary, text, "the summary to show pure FSDP")
    # Z, microbatches, virtual, EP
    ep = page.locator(".sw-strategy-selector input[type=number]").nth(3)
    ep.fill("8")
    ep.press("Enter")
    text = wait_for_change(page, summary, text, "the summary to show EP 8")
    assert "EP 8: its all-to-alls take" in text and "inside an NVLink node" in text
    wait_for_text(page, ".sw-strategy-selector", "with EP 8")
    wait_for_text(page, ".sw-mesh-picker", "EP 8 of them split the experts")  # another widget
    wait_for_js(  # drawn
        page,
        "the mesh picture to draw 'EP 8, CP'",  # CP as the planner's layout has it
        "document.querySelector('.sw-mesh-picture').textContent.includes('EP 8, CP')",
    )
    assert reading_problems(page) == {"contrast": [], "cut": [], "labels": []}
    assert page.errors == [] and page.external == []


def test_the_export_downloads_a_launch_file_that_reads_back(page, voila_demo, tmp_path):
    """The Export section shows the layout as each framework's file; its download link gives the
    file, and that file read back is the layout on screen."""
    from scaling_widgets.cli import main

    page.goto(voila_demo.home)
    wait_for_panel(page)
    text = summary(page)
    batch = page.locator(".sw-training-controls input[type=text]").first
    batch.fill("16777216")  # 4,096 sequences of 4,096: whole on every data rank of the pod
    batch.press("Enter")
    wait_for_change(page, summary, text, "the summary to show the batch of 16777216")
    page.get_by_text("Export: this scenario as JSON, as a command and as launch files").click()
    page.get_by_text("MaxText", exact=True).click()
    shown = page.locator(".sw-export-maxtext textarea").input_value()
    assert "ici_fsdp_parallelism" in shown and "# Written by scaling-widgets" in shown
    with page.expect_download() as download:
        page.get_by_text("Download train.yml").click()
    path = tmp_path / "train.yml"
    download.value.save_as(path)
    assert path.read_text() == shown
    # the demo: LLaMA-2 13B on a v5p slice of 4,096 chips
    argv = ["estimate", "--config", str(path), "--hardware", "tpu-v5p", "--mesh", "16x16x16"]
    assert main(argv) == 0
    assert page.errors == [] and page.external == []


def test_pinning_two_scenarios_sets_them_side_by_side(page, voila_demo):
    page.goto(voila_demo.home)
    wait_for_panel(page)
    page.get_by_text("Compare: pinned scenarios side by side").click()
    page.get_by_text("Pin this scenario").click()
    wait_for_text(page, ".sw-compare-table", "step")
    text = summary(page)
    batch = page.locator(".sw-training-controls input[type=text]").first
    batch.fill("8M")
    batch.press("Enter")
    wait_for_change(page, summary, text, "the summary to show the batch of 8M")
    page.get_by_text("Pin this scenario").click()
    wait_for_js(  # a header row of three: the labels' column, A and B
        page,
        "the comparison to set A and B side by side",
        "document.querySelectorAll('.sw-compare-table tr:first-child th').length === 3",
    )
    table = page.inner_text(".sw-compare-table")
    assert "A\tB" in table and "\t8M" in table  # the batch that differs
    assert page.locator(".sw-compare-table tr.sw-differs").count() > 0
    assert page.errors == [] and page.external == []


def test_the_strategy_map_names_its_cells_and_loads_one(page, voila_demo):
    page.goto(voila_demo.home)
    wait_for_panel(page)
    text = summary(page)
    page.get_by_text("Strategy map: which layout wins").click()
    page.click(".sw-map-view button:has-text('Draw the map')")
    wait_for_js(
        page,
        "the strategy map to draw 100 cells",
        "document.querySelectorAll('.sw-strategy-map rect.heatmapcell').length >= 100",
    )
    cells = page.locator(".sw-strategy-map rect.heatmapcell")
    fills = set(cells.evaluate_all("els => els.map(e => getComputedStyle(e).fill)"))
    assert len(fills) > 5  # families and shades, not one colour
    wait_for_text(page, ".sw-map-view", "layouts evaluated")  # a message of its own
    assert reading_problems(page, ".sw-map-view") == {"contrast": [], "cut": [], "labels": []}
    # a square over each cell, drawn last (before them, the dot of the scenario's own cell)
    squares = page.locator(".sw-strategy-map .dot")
    assert squares.count() == cells.count() + 1
    assert squares.nth(-1).evaluate("e => getComputedStyle(e).opacity") == "0"  # unseen
    # hovering names the layout; clicking loads it, and the panel shows its step
    square = squares.nth(1 + cells.count() // 2)
    square.hover()
    wait_for_js(
        page,
        "the hovered cell's tooltip to name its layout",
        "[...document.querySelectorAll('.bqplot_mark_tooltip')]"
        ".some(t => t.style.opacity > 0 && t.innerText.includes(' chips ('))",
    )
    square.click()
    map_view = lambda p: p.inner_text(".sw-map-view")  # noqa: E731
    loaded = wait_until(page, map_view, lambda t: "Loaded:" in t, "the map to say 'Loaded:'")
    step = re.search(r"step ([0-9.]+ \w+)", loaded).group(1)
    shown = wait_for_change(page, summary, text, "the summary to show the cell's layout")
    assert step in shown, (loaded, shown)
    assert page.errors == [] and page.external == []


def test_another_local_sites_page_cannot_start_panels_with_images_or_a_frame(page, voila_demo):
    """A page of another site on this machine (another port), open in the same browser as the
    panel: its images and frame of the panel carry the browser's cookies, token and all, yet
    start no kernel. A link from it still opens the panel, as the user asked."""
    page.goto(voila_demo.home)
    wait_for_panel(page)  # the browser now holds the token's cookies
    # A page served takes the warm kernel, or starts one once the pool is empty, as it answers;
    # the pool refilled, no kernel starts but for the pages below.
    poll("the warm pool to refill", lambda: refilled(voila_demo), base=PANEL)
    served = lambda: (len(voila_demo.kernels("started")), voila_demo.said(TAKEN))  # noqa: E731
    before = served()
    panel = voila_demo.url + "/"
    elsewhere = page.context.new_page()
    elsewhere.route(
        "http://127.0.0.1:9/",
        lambda route: route.fulfill(
            content_type="text/html",
            body="".join(f'<img src="{panel}?{i}">' for i in range(4))
            + f'<iframe src="{panel}"></iframe><a id="link" href="{panel}">the panel</a>',
        ),
    )
    # Its load waits for its images and frame: each answered, and none was served a page.
    elsewhere.goto("http://127.0.0.1:9/")
    assert served() == before
    elsewhere.click("#link")
    wait_for_panel(elsewhere)
    poll("the warm pool to refill after the link's page", lambda: refilled(voila_demo), base=PANEL)
    assert served() == (before[0] + 1, before[1] + 1)  # the link's page took the warm kernel
    elsewhere.close(run_before_unload=True)


TAKEN = "Using pre-heated kernel"  # what Voila logs as a page takes the warm kernel


def refilled(server) -> bool:
    """Whether the warm pool has been refilled after each page that took from it."""
    return server.said("is filled with") == server.said(TAKEN) + 1
