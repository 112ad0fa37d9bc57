"""The cost layer stays pure numpy: importing it pulls in no widget library (STYLE)."""

import subprocess
import sys


def test_importing_the_cost_layer_leaves_widget_libraries_out():
    code = (
        "import sys, scaling_widgets.cost, scaling_widgets.presets, scaling_widgets.cli; "
        "print([m for m in ('ipywidgets', 'bqplot', 'traitlets') if m in sys.modules])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
