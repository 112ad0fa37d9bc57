"""Launch formats are a registry (``launch/formats/``): the command line's choices, the panel's
tabs, the schemas and the README's list all come from it, so a new framework is one new module."""

import json
from pathlib import Path

from scaling_widgets import Scenario
from scaling_widgets.cli.parser import build_parser
from scaling_widgets.launch import FORMATS, detect, readable
from scaling_widgets.launch.keys import KEYS, schema
from scaling_widgets.widgets import Export

CONFIGS = Path(__file__).parent.parent / "data" / "configs"
README = Path(__file__).parent.parent.parent / "README.md"


def test_every_format_has_its_schema_and_every_schema_a_format():
    assert sorted(path.stem for path in KEYS.glob("*.json")) == sorted(FORMATS)
    for name in FORMATS:
        data = json.loads((KEYS / f"{name}.json").read_text())
        assert data["source"].startswith("https://github.com/") and "/blob/" in data["source"]
        assert len(schema(name)) > 100


def test_the_command_line_offers_every_format():
    parser = build_parser()
    commands = parser._subparsers._group_actions[0].choices
    to = next(a for a in commands["export"]._actions if a.dest == "to")
    export_to = next(a for a in commands["plan"]._actions if a.dest == "export_to")
    assert tuple(to.choices) == tuple(export_to.choices) == tuple(FORMATS)
    config = next(a for a in commands["estimate"]._actions if a.dest == "config")
    assert readable() in " ".join(config.help.split())


def test_the_panel_has_a_tab_and_a_download_for_every_format():
    scenario = Scenario(model="llama-3-70b", hardware="h100", slice_shape=(32, 8),
                        batch=4194304, seq_len=8192)  # fmt: skip
    export = Export(scenario)
    titles = [export._launch.get_title(i) for i in range(len(FORMATS))]
    assert titles == [f.label for f in FORMATS.values()]
    for name, found in FORMATS.items():
        assert f'download="{found.file_name}"' in export._links[name].value


def test_each_published_config_is_detected_as_its_own_format():
    for path in sorted(CONFIGS.iterdir()):
        if path.suffix in (".toml", ".sh", ".yml"):
            assert detect(path.read_text(), path.name) == path.name.split("_")[0], path.name


def test_the_readme_lists_every_format():
    text = " ".join(README.read_text().split())
    assert f"--to {'|'.join(FORMATS)}" in text
    assert readable() in text
