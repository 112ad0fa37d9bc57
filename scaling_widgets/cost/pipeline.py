"""Pipeline parallelism: the bubble and the stage-to-stage traffic (SPEC A.6)."""

from __future__ import annotations

from . import _checks


def bubble_fraction(*, stages, microbatches):
    """Share of a GPipe/1F1B step that each stage idles: (Z − 1) / (m + Z − 1) (SPEC A.6).

    Examples
    --------
    >>> bubble_fraction(stages=[1, 4, 8], microbatches=16).round(3)
    array([0.   , 0.158, 0.304])
    """
    Z, m = _checks.whole("stages", stages), _checks.whole("microbatches", microbatches)
    return (Z - 1) / (m + Z - 1)


def bubble_overhead(*, stages, microbatches):
    """Idle time relative to the useful work: (Z − 1) / m (SPEC A.6).

    Examples
    --------
    >>> bubble_overhead(stages=[1, 4], microbatches=[8, 16])
    array([0.    , 0.1875])
    """
    Z, m = _checks.whole("stages", stages), _checks.whole("microbatches", microbatches)
    return (Z - 1) / m


def stage_traffic_time(*, batch, d_model, stages, microbatches, bandwidth):
    """Seconds a step spends sending activations between stages: 2·B·D/(W·m) · (m + Z − 2).

    Each microbatch of B/m tokens moves 2·(B/m)·D bytes each way (SPEC A.6); ``bandwidth`` is
    that of the link between neighbouring stages. Zero with one stage.

    Examples
    --------
    >>> stage_traffic_time(batch=1e6, d_model=8192, stages=[1, 4], microbatches=16,
    ...                    bandwidth=1.8e11).round(4)
    array([0.    , 0.1024])
    """
    B, D = _checks.positive("batch", batch), _checks.positive("d_model", d_model)
    Z, m = _checks.whole("stages", stages), _checks.whole("microbatches", microbatches)
    W = _checks.positive("bandwidth", bandwidth)
    return (Z > 1) * 2 * B * D / (W * m) * (m + Z - 2)
