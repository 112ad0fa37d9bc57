"""An exercise's answer stays folded: what a block prints and displays is one <details> block."""

from IPython.core.interactiveshell import InteractiveShell
from IPython.display import Markdown, display
from IPython.utils.capture import capture_output

from scaling_widgets.widgets import RooflinePlot, folded


def test_what_a_block_prints_and_displays_is_shown_folded_under_its_title():
    InteractiveShell.instance()  # a kernel's display machinery, as in a notebook
    with capture_output() as shown:
        with folded("Exercise 1, computed: open after you answer"):
            display(Markdown("- **tokens per chip** — chapter: **2,550** · ours: **2,550**"))
            print("fewest microbatches under 10 % idle: 64")
    assert shown.stdout == "" and len(shown.outputs) == 1  # nothing shows before it is opened
    text = shown.outputs[0].data["text/markdown"]
    title = "Exercise 1, computed: open after you answer"
    assert text.startswith(f"<details><summary>{title}</summary>")
    assert "**2,550**" in text and "fewest microbatches under 10 % idle: 64" in text
    assert text.rstrip().endswith("</details>")


def test_a_widget_displayed_inside_is_shown_after_the_folded_numbers():
    InteractiveShell.instance()
    with capture_output() as shown:
        with folded("The figure's numbers"):
            print("compute-bound from 850 tokens a chip")
            display(RooflinePlot())
    kinds = [sorted(o.data) for o in shown.outputs]
    assert "text/markdown" in kinds[0] and "application/vnd.jupyter.widget-view+json" in kinds[1]
