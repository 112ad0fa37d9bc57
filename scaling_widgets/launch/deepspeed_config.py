"""What a Megatron-DeepSpeed script's DeepSpeed config says of the stack's features
(``cost/stacks/deepspeed.py``): its ``zero_optimization.overlap_comm``, in the JSON the script
writes itself (a heredoc) or in the file ``--deepspeed_config`` names beside it."""

from __future__ import annotations

import re
from pathlib import Path

OVERLAP_COMM = re.compile(r'"overlap_comm"\s*:\s*(true|false)')
CONFIG_FLAG = "--deepspeed_config"


def overlap_comm(text: str, words: list, folder: Path | None, notes: list) -> str | None:
    """The features a script's DeepSpeed config turns on: "overlap_comm" or "none"; None where
    no config it holds or names sets the key (DeepSpeed's default: off below ZeRO-3).

    Parameters
    ----------
    text : str
        The script, with what it sources.
    words : list of str
        The program's words, where ``--deepspeed_config`` names its config.
    folder : Path, optional
        The script's folder, where that config is read from by its name.
    notes : list of str
        Where a config that sets the key both ways is said to be read as the default.

    Returns
    -------
    features : str or None
        "overlap_comm", "none", or None for DeepSpeed's default.
    """
    said = set(OVERLAP_COMM.findall(text + _named_config(words, folder)))
    if len(said) > 1:
        notes.append("overlap_comm is set both ways in the script: read as DeepSpeed's default")
    if len(said) != 1:
        return None
    return "overlap_comm" if said == {"true"} else "none"


def _named_config(words: list, folder: Path | None) -> str:
    """The text of the config ``--deepspeed_config`` names, where it is a file beside the
    script; "" otherwise (a config the script writes as it runs)."""
    named = [
        after if word == CONFIG_FLAG else word.split("=", 1)[1]
        for word, after in zip(words, [*words[1:], ""])
        if word == CONFIG_FLAG or word.startswith(CONFIG_FLAG + "=")
    ]
    path = folder / Path(named[-1]).name if named and folder is not None else None
    return path.read_text(encoding="utf-8", errors="replace") if path and path.is_file() else ""
