"""The ``scaling-widgets estimate`` command that evaluates the same values as a scenario.

``command(cluster, workload, layout, options)`` writes the flags; a value the flags cannot say
(your own model or chip, axis roles, a calibrated profile) makes it ``None``: then ``--scenario FILE.json`` is the way.
"""

from __future__ import annotations

import shlex

from ..cost import Cluster, Layout, Options, Workload
from ..presets import HARDWARE, MODELS, PRECISIONS
from . import units


def _name(value, table: dict) -> str | None:
    return next((name for name, preset in table.items() if preset == value), None)


def command(cluster: Cluster, workload: Workload, layout: Layout, options: Options) -> str | None:
    """The CLI flags for these values, or None when some value has no flag."""
    model, chip = _name(workload.model, MODELS), _name(cluster.chip, HARDWARE)
    precision = _name(workload.precision, PRECISIONS)
    if None in (model, chip, precision) or layout.axis_roles is not None or options.profile is not None:
        return None
    exact = options.exact
    flags = [
        ("--model", model), ("--hardware", chip), ("--mesh", units.mesh(cluster.slice_shape)),
        ("--pods", cluster.pods), ("--batch", repr(float(workload.batch))), ("--seq-len", workload.seq_len),
        ("--precision", precision), ("--strategy", layout.strategy), ("--zero", layout.zero), ("--fsdp", layout.x),
        ("--tp", layout.y), ("--pp", layout.z), ("--microbatches", layout.microbatches),
        ("--schedule", layout.schedule), ("--virtual-stages", layout.virtual_stages), ("--remat", layout.remat),
        ("--sequence-parallel", layout.sequence_parallel), ("--attention-flops", options.attention_flops),
        ("--mfu", None if options.measured_step_time is not None or options.mfu is None else repr(float(options.mfu))),
        ("--measured-step-time", options.measured_step_time),
        ("--tokens", None if workload.tokens is None else repr(float(workload.tokens))),
        ("--ring-factor", exact.ring_factor), ("--halve-without-wraparound", exact.halve_without_wrap),
        ("--latency", exact.latency or None), ("--overhead-gb", (options.overhead_bytes / 1e9) or None),
        ("--fits-below", None if options.fits_below == 1 else options.fits_below),
        ("--ep", None if layout.ep == 1 else layout.ep), ("--cp", None if layout.cp == 1 else layout.cp),
        ("--cp-kind", None if layout.cp == 1 else layout.cp_kind), ("--stack", options.stack),
        ("--flash-attention", None if options.flash_attention is None else "on" if options.flash_attention else "off"),
    ]  # fmt: skip
    words = ["scaling-widgets", "estimate"]
    for flag, value in flags:
        if value is True:
            words.append(flag)
        elif value is not None and value is not False:
            words += [flag, value if isinstance(value, str) else repr(value)]
    return shlex.join(words)
