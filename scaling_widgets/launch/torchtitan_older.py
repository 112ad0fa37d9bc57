"""torchtitan's job TOMLs of 2024 and early 2025, in the keys of its last TOML schema.

Before the ``[parallelism]`` table, torchtitan kept its degrees under ``[training]`` and
``[experimental]``, its batch as ``training.batch_size``, compile as ``training.compile``, fp8 as
``[float8] enable_float8_linear``, and a pipeline's microbatches as a count. The keys of those
releases are data (``data/torchtitan_older_keys.json``, read from
``torchtitan/config_manager.py`` at the commits it names); each that changes the cost is renamed
here, the rest change nothing the model prices.

References
----------
.. [1] ``pytorch/torchtitan@3c77e9fa2fb384cabcf0bf71571caaaea6cf90e7,
   torchtitan/config_manager.py`` (2024-07: ``--training.enable_float8_linear``).
.. [2] ``pytorch/torchtitan@b19456a987be99dcf11e1b8edb1ce8f43473971a,
   torchtitan/config_manager.py`` (2024-10: ``--training.batch_size``,
   ``--training.tensor_parallel_degree``, ``--experimental.pipeline_parallel_degree``,
   ``--optimizer.fused`` False by default, ``--training.compile`` the model's blocks).
.. [3] ``pytorch/torchtitan@e4e48349ce895247cb98323feef89dc05283aff7,
   torchtitan/config_manager.py`` (2025-04: ``--parallelism.pipeline_parallel_microbatches``, the
   microbatches a rank's batch splits into, by default the stages).
"""

from __future__ import annotations

import functools

from ..cost.ground.refusals import refuse
from .keys import data_json

# the old key -> the key it became, for each that changes the cost and keeps its meaning
RENAMED = {
    "training.batch_size": "training.local_batch_size",
    "training.data_parallel_replicate_degree": "parallelism.data_parallel_replicate_degree",
    "training.data_parallel_shard_degree": "parallelism.data_parallel_shard_degree",
    "training.data_parallel_degree": "parallelism.data_parallel_shard_degree",
    "training.tensor_parallel_degree": "parallelism.tensor_parallel_degree",
    "experimental.context_parallel_degree": "parallelism.context_parallel_degree",
    "experimental.pipeline_parallel_degree": "parallelism.pipeline_parallel_degree",
    "experimental.pipeline_parallel_schedule": "parallelism.pipeline_parallel_schedule",
    "experimental.enable_async_tensor_parallel": "parallelism.enable_async_tensor_parallel",
    "float8.enable_fsdp_float8_all_gather": "quantize.linear.float8.enable_fsdp_float8_all_gather",
}
FP8 = ("float8.enable_float8_linear", "training.enable_float8_linear")  # 2024-08 on, and before
MICROBATCHES = ("experimental.pipeline_parallel_microbatches",
                "parallelism.pipeline_parallel_microbatches")  # fmt: skip
# old keys that would change the cost in ways the model does not price: refused unless at their
# default (the split points given by hand, DDP as the data-parallel type, the loss unsharded)
UNPRICED = {
    "experimental.pipeline_parallel_split_points": [],
    "parallelism.pipeline_parallel_split_points": [],
    "training.data_parallel_type": "fsdp",
    "training.enable_loss_parallel": True,
}


@functools.cache
def older_keys() -> frozenset:
    """Every key of torchtitan's job TOMLs of 2024 and early 2025 (``config_manager.py``)."""
    return frozenset(data_json("torchtitan_older_keys.json")["keys"])


def as_current(table: dict, known: frozenset) -> tuple[dict, list, list]:
    """A job TOML's flat keys in the last schema's (``known``): an older file's keys renamed,
    its microbatch count as their size, its compile and fp8 switches as that schema says them,
    and its Adam unfused unless told; with the older keys that change nothing, and a note.

    Parameters
    ----------
    table : dict
        The file's keys (``section.key``) -> values.
    known : frozenset
        The keys of the last TOML schema.

    Returns
    -------
    table : dict
        The keys of the last schema -> values; the file as it is where it holds no older key.
    ignored : list of str
        The older keys that change nothing the model prices.
    notes : list of str
        One line saying the file was read in an older schema.

    Raises
    ------
    InputError
        For an older key set where the model cannot price it.
    """
    older = [key for key in table if key not in known and key in older_keys()]
    if not older:
        return table, [], []
    current, ignored = {}, []
    for key, value in table.items():
        if key in UNPRICED and value != UNPRICED[key]:
            raise refuse(key, f"{UNPRICED[key]!r}: another setting is not priced", value)
        if key in RENAMED:
            current[RENAMED[key]] = value
        elif key in known or key not in older_keys():  # a key no release had: refused later
            current[key] = value
        elif key not in (*MICROBATCHES, *FP8, "training.compile", "optimizer.fused"):
            ignored.append(key)
    current |= _switches(table, current)
    note = (
        "a job TOML of torchtitan's older schema ([training] degrees, batch_size): read as today's"
    )
    return current, ignored, [note]


def _switches(table: dict, current: dict) -> dict:
    """The older switches in the last schema's keys: compile (the model's blocks), fp8's
    converter, fused Adam (off by default then), and the microbatches' size."""
    out = {"optimizer.implementation": "fused" if table.get("optimizer.fused") else "foreach"}
    if table.get("training.compile"):
        out |= {"compile.enable": True, "compile.components": ["model"]}
    if any(table.get(key) for key in FP8):
        out["model.converters"] = ["float8"]
    stages = current.get("parallelism.pipeline_parallel_degree", 1)
    count = next((table[key] for key in MICROBATCHES if table.get(key)), stages)  # default: Z
    if stages > 1:
        local = current.get("training.local_batch_size", 8)
        if not isinstance(count, int) or count < 1 or local % count:
            raise refuse("pipeline_parallel_microbatches", f"a count dividing the {local}", count)
        out["parallelism.pipeline_parallel_microbatch_size"] = local // count
    return out
