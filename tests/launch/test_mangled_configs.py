"""A config mangled as files get mangled (cut short, a quote lost or added, a number turned into
a word, a key no framework has, a stray bracket) is read, or refused in one line that names the
field: no parser's own exception (shlex's, PyYAML's, int()'s) reaches the user."""

from __future__ import annotations

import re
import tempfile
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from scaling_widgets.cli import main
from scaling_widgets.cost import InputError
from scaling_widgets.launch import FORMATS, read_config
from scaling_widgets.presets import HARDWARE

from .test_shipped_configs import MANIFEST, SHIPPED

# the files of a format we read: torchtitan, Megatron-LM, MaxText and llm-foundry
READ = [e for e in MANIFEST if e["framework"] in FORMATS]
TEXTS = {e["file"]: (SHIPPED / e["file"]).read_text(encoding="utf-8") for e in READ}


def mangled(text: str, kind: str, at: float) -> str:
    """``text`` with one thing gone wrong, ``at`` (0 to 1) saying where."""
    where = int(at * len(text))
    if kind == "cut short":
        return text[: max(where, 1)]
    if kind in ("'", '"', "[", "{"):
        return text[:where] + kind + text[where:]
    if kind == "a number as a word":
        numbers = list(re.finditer(r"\b\d+\b", text)) or [re.match(r"", text)]
        m = numbers[min(int(at * len(numbers)), len(numbers) - 1)]
        return text[: m.start()] + "abc" + text[m.end() :]
    return text + "\nnot_a_key_of_any_framework = 3\n--not-a-flag 3\nnot_a_key=3\n"


@settings(max_examples=300, deadline=None)
@given(
    file=st.sampled_from(sorted(TEXTS)),
    kind=st.sampled_from(["cut short", "'", '"', "[", "{", "a number as a word", "unknown keys"]),
    at=st.floats(0, 1),
)
def test_a_mangled_config_is_read_or_refused_in_one_line(file, kind, at):
    entry = next(e for e in READ if e["file"] == file)
    try:
        read_config(mangled(TEXTS[file], kind, at), chip=HARDWARE["h100"], chips=64,
                    framework=entry["framework"])  # fmt: skip
    except InputError as refusal:
        assert "\n" not in str(refusal).strip() and " must " in str(refusal)


@pytest.mark.parametrize(
    "text, says",
    [
        ("ARGS=(--num-layers 32\n", "config line 1 must be an array closed by ')'"),
        ('torchrun pretrain_gpt.py --num-layers "32\n', "config line 1 must be shell words whose"),
    ],
)
def test_a_broken_script_is_refused_naming_its_line(tmp_path, capsys, text, says):
    script = tmp_path / "train.sh"
    script.write_text(text)
    with pytest.raises(SystemExit) as exit_:
        main(["estimate", "--config", str(script), "--hardware", "h100", "--chips", "8"])
    code, err = exit_.value.code, capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and says in err


REGISTRIES = [e for e in READ if e.get("function")]


@settings(max_examples=200, deadline=None)
@given(
    index=st.integers(0, len(REGISTRIES) - 1),
    kind=st.sampled_from(["cut short", "'", '"', "[", "{", "a number as a word", "unknown keys"]),
    at=st.floats(0, 1),
)
def test_a_mangled_registry_config_is_read_or_refused_in_one_line(index, kind, at):
    entry = REGISTRIES[index]
    with tempfile.TemporaryDirectory() as folder:
        file = Path(folder) / "config_registry.py"
        file.write_text(mangled(TEXTS[entry["file"]], kind, at))
        try:
            read_config(f"{file}:{entry['function']}", chip=HARDWARE["h100"], chips=64)
        except InputError as refusal:
            assert "\n" not in str(refusal).strip() and " must " in str(refusal)


def test_a_branch_outside_an_if_is_refused_naming_its_line():
    with pytest.raises(InputError) as refused:
        read_config("X=1\nfi\ntorchrun pretrain_gpt.py --num-layers 2\n", chip=HARDWARE["h100"],
                    chips=8, framework="megatron")  # fmt: skip
    assert refused.value.field == "config line 2" and "if chain" in str(refused.value)


@pytest.mark.parametrize("flag", ["--tensor-model-parallel-size", "--context-parallel-size"])
def test_a_megatron_degree_of_zero_is_refused_by_its_flag(flag):
    # a stray bracket once cut a script so that a degree read 0: a division by zero reached the
    # user (found by the fuzz above)
    text = f"torchrun --nproc_per_node 8 pretrain_gpt.py {flag} 0 --num-layers 2 --hidden-size 64"
    with pytest.raises(InputError, match=f"^{flag} must be a whole number of at least 1; got 0"):
        read_config(text + " --num-attention-heads 4 --seq-length 128 --micro-batch-size 1\n",
                    chip=HARDWARE["h100"], framework="megatron")  # fmt: skip
