"""Colab still ships ipywidgets 7.7.1, bqplot 0.12 and traitlets 5.7: the package must import, the
panel must build and the widget tests must pass there too. A venv with exactly those pins is built
from the package registry (pip's cache makes later runs quick), and the package goes in the way the
README and the Colab notebook say: the wheel their command builds, by the notebook's install
line."""

import json
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
COLAB_PINS = [
    "ipywidgets==7.7.1",
    "bqplot==0.12.45",
    "traitlets==5.7.1",
    "numpy",
    "pytest",
    "hypothesis",
]
CHECK = """
import bqplot, ipywidgets, traitlets
import scaling_widgets as sw
assert (ipywidgets.__version__, traitlets.__version__) == ("7.7.1", "5.7.1")
assert bqplot.__version__.startswith("0.12")
panel = sw.explore(model="llama-2-13b", hardware="tpu-v5p", slice_shape=(16, 16, 16), batch=3e6)
for figure in (panel.roofline, panel.memory_bar):
    # bqplot 0.12 draws by orientation
    assert [a.orientation for a in figure.axes if a.side == "left"] == ["vertical"]
panel.scenario.update(hardware="tpu-v5e", slice_shape=(16, 16))
assert panel.mesh_picker.value["x"] * panel.mesh_picker.value["y"] == 256
print("colab versions: ok")
"""


def run(argv, **kwargs):
    done = subprocess.run(argv, capture_output=True, text=True, **kwargs)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def colab_install_line() -> str:
    """What the Colab notebook's first cell gives to %pip."""
    cells = json.loads((ROOT / "demo_notebooks" / "colab.ipynb").read_text())["cells"]
    source = next("".join(c["source"]) for c in cells if c["cell_type"] == "code")
    return re.search(r'run_line_magic\("pip", "([^"]+)"\)', source)[1]


def test_colab_versions(tmp_path):
    venv = tmp_path / "colab"
    run([sys.executable, "-m", "venv", str(venv)])
    python = str(venv / "bin" / "python")
    run([python, "-m", "pip", "install", "-q", *COLAB_PINS])
    # The README's command builds the wheel; the notebook's line installs it, keeping Colab's pins.
    run([python, "-m", "pip", "wheel", "-q", "--no-deps", "-w", str(tmp_path), str(ROOT)])
    run([python, "-m", "pip", *colab_install_line().split()], cwd=tmp_path)
    assert "colab versions: ok" in run([python, "-c", CHECK])
    out = run(
        [
            python,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "-o",
            "addopts=",
            "tests/widgets",
            "tests/cost",
        ],
        cwd=ROOT,
    )
    assert " passed" in out and " failed" not in out
