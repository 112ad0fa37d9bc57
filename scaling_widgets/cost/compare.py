"""Every strategy's own layout beside the one asked for (MODEL.md §A.10): what the panel's memory
bars and ``estimate --json``'s strategies list."""

from __future__ import annotations

import dataclasses

from .evaluation.evaluate import evaluate
from .evaluation.result import Estimate
from .ground.refusals import InputError
from .strategies import STRATEGIES
from .values import Cluster, Layout, Options, Workload


def compare_strategies(
    cluster: Cluster,
    workload: Workload,
    layout: Layout,
    options: Options,
    known: dict[str, Estimate] | None = None,
) -> dict[str, Estimate | InputError]:
    """Each strategy's own layout (its default split and ZeRO stage, and its own microbatch count
    where ``layout``'s cannot run on its split) with the rest of ``layout`` kept: strategy ->
    ``Estimate``, or the ``InputError`` that says why it cannot run. ``known`` estimates stand
    for their strategies (the panel's current layout), not evaluated again.

    Parameters
    ----------
    cluster : Cluster
        The chips.
    workload : Workload
        What is trained: the model, the batch B [tokens], its sequences.
    layout : Layout
        The layout asked for; each strategy keeps all of it but its split, ZeRO stage and axis
        roles (and the microbatch count, where its split cannot run it).
    options : Options
        How the numbers are read.
    known : dict of str to Estimate, optional
        Estimates already made, by strategy name, used as they are. None: every strategy is
        evaluated.

    Returns
    -------
    estimates : dict of str to Estimate or InputError
        By strategy name, in ``STRATEGIES``' order: its estimate, or why it cannot run.
    """
    out = {}
    for name in STRATEGIES:
        if known and name in known:
            out[name] = known[name]
            continue
        own = dataclasses.replace(layout, strategy=name, x=None, y=None, zero=None, axis_roles=None)
        if STRATEGIES[name].on == "x":  # no TP group to span pods (MODEL.md §B.11)
            own = dataclasses.replace(own, tp_pods=1)
        try:
            out[name] = evaluate(cluster, workload, own, options)
        except InputError as err:
            out[name] = err
            if err.field == "microbatches":  # a count chosen for another split: its own fastest
                out[name] = _own_microbatches(cluster, workload, own, options)
    return out


def _own_microbatches(cluster, workload, layout, options) -> Estimate | InputError:
    """The layout at its own fastest microbatch count, or why it cannot run even so."""
    try:
        return evaluate(cluster, workload, dataclasses.replace(layout, microbatches=None), options)
    except InputError as err:
        return err
