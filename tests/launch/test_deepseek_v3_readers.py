"""DeepSeek-V3 is 671B parameters, and its multi-token-prediction module is beside them, from
every reader: the Hugging Face config, MaxText's model file, torchtitan's flavor and Megatron-LM's
flags (docs/MODEL.md §D.1). DeepSeek's 685B on the hub ("671B of the main model, 14B of the MTP
module") is the 671B and the module as the checkpoint stores it, with its own copies of the
embeddings and the output layer (13.5B)."""

import json
import re
from pathlib import Path

import pytest

from scaling_widgets.cli import main

DATA = Path(__file__).parent.parent / "data"
MODELS = DATA / "models"


def _params(capsys, *args) -> dict:
    assert main(["estimate", *args, "--hardware", "h800", "--chips", "2048", "--json"]) == 0
    return json.loads(capsys.readouterr().out)


def _megatron_model_flags(tmp_path) -> Path:
    """The model's flags of Megatron-LM's DeepSeek-V3 script, one a line: the script itself reads
    (``test_shell_scripts.py``), but its batch of 2,048 sequences, 4 a GPU, runs on 512 GPUs at
    most, not on these 2,048."""
    text = (MODELS / "sbatch_mfsdp_deepseek_v3.sh").read_text()
    block = text[text.index("--tokenizer-type") : text.index("--eval-iters")]
    flags = tmp_path / "flags.txt"
    flags.write_text("\n".join(line.strip() for line in block.splitlines()) + "\n")
    return flags


@pytest.mark.parametrize(
    "source, mtp_modules",
    [
        ("hf", 1),  # num_nextn_predict_layers: 1
        ("maxtext", 0),  # mtp_num_layers: base.yml's 0
        ("torchtitan", 0),  # the 671B flavor's num_mtp_layers default 0
        ("megatron", 1),  # --mtp-num-layers 1
    ],
)
def test_deepseek_v3_is_671b_with_its_mtp_module_beside(capsys, tmp_path, source, mtp_modules):
    args = {
        "hf": ["--model-file", str(DATA / "hf" / "deepseek-v3.json"), "--batch", "16M"],
        "maxtext": ["--config", str(MODELS / "deepseek3-671b.yml")],
        "torchtitan": ["--config", str(MODELS / "deepseek_v3_671b.toml")],
        "megatron": ["--config", str(_megatron_model_flags(tmp_path)), "--batch", "16M"],
    }[source]
    data = _params(capsys, *args)
    assert data["params"] / 1e9 == pytest.approx(671.0, abs=0.05)
    assert data["params_active"] / 1e9 == pytest.approx(37.55, abs=0.05)
    mtp = data["params_mtp"] / 1e9
    assert mtp == pytest.approx(11.61 * mtp_modules, abs=0.01)
    if mtp_modules:  # with its copies of the embeddings and output layer: the hub's 685B
        stored = mtp + data["params_by_part"]["embeddings"] / 1e9
        assert stored == pytest.approx(13.46, abs=0.01)
        # DeepSeek's "685B: 671B of the main model and 14B of the MTP module", each rounded
        assert data["params"] / 1e9 + stored == pytest.approx(684.5, abs=0.05)


def test_maxtext_reads_mtp_num_layers_over_its_model_file(tmp_path, capsys):
    text = (MODELS / "deepseek3-671b.yml").read_text() + "mtp_num_layers: 1\n"
    (tmp_path / "train.yml").write_text(text)
    data = _params(capsys, "--config", str(tmp_path / "train.yml"))
    assert data["params_mtp"] / 1e9 == pytest.approx(11.61, abs=0.01)


def test_the_report_names_the_mtp_module(capsys):
    args = ["--model", "deepseek-v3", "--hardware", "h800", "--chips", "2048", "--batch", "16M"]
    assert main(["estimate", *args]) == 0
    first = capsys.readouterr().out.splitlines()[1]  # after the line on the plan's layout
    assert re.search(r"\(671B params, 37\.6B active; \+ 11\.6B in 1 MTP module\)", first)
