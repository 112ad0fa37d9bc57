"""Pipeline parallelism: the bubble, the stage-to-stage traffic and the busiest stage (MODEL.md
§A.6).

Each schedule's own bubble and microbatches in flight are in ``schedules/``; the formulas here
are the chapter's, for GPipe and 1F1B, and interleaved 1F1B's (MODEL.md §B.6).
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..schedules import ends_together, weight_copies


def bubble_fraction(*, stages: ArrayLike, microbatches: ArrayLike) -> float | np.ndarray:
    """Share of a GPipe/1F1B step that each stage idles: (Z − 1) / (m + Z − 1) (MODEL.md §A.6).

    Parameters
    ----------
    stages : int or array_like
        Z, the pipeline stages.
    microbatches : int or array_like
        m, the microbatches a step.

    Returns
    -------
    fraction : float or np.ndarray
        The share of the step each stage idles, from 0 (one stage) towards 1.

    References
    ----------
    .. [1] docs/MODEL.md §A.6 (pipeline).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``: Pipelining.
    .. [3] J. Austin et al., "How to Think About GPUs", in *How to Scale Your Model*, 2025;
       jax-ml/scaling-book, ``gpus.md``.
    .. [4] Y. Huang et al., "GPipe: Efficient Training of Giant Neural Networks using Pipeline
       Parallelism", NeurIPS 2019.
    .. [5] D. Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
       Using Megatron-LM", SC 2021.

    Examples
    --------
    >>> bubble_fraction(stages=[1, 4, 8], microbatches=16).round(3)
    array([0.   , 0.158, 0.304])
    """
    Z, m = np.asarray(stages, dtype=float), np.asarray(microbatches, dtype=float)
    return (Z - 1) / (m + Z - 1)


def bubble_overhead(
    *, stages: ArrayLike, microbatches: ArrayLike, virtual_stages: ArrayLike = 1
) -> float | np.ndarray:
    """Idle time relative to the useful work: (Z − 1) / m for GPipe and 1F1B (MODEL.md §A.6), and
    (Z − 1) / (v·m) for interleaved 1F1B with v virtual stages per device (MODEL.md §B.6).

    Parameters
    ----------
    stages : int or array_like
        Z, the pipeline stages.
    microbatches : int or array_like
        m, the microbatches a step.
    virtual_stages : int or array_like, default 1
        v, the virtual stages a device holds (interleaved 1F1B); 1 for GPipe and 1F1B.

    Returns
    -------
    overhead : float or np.ndarray
        The idle time over the useful work of a step.

    References
    ----------
    .. [1] docs/MODEL.md §A.6 (pipeline) and §B.6 (pipeline schedules).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``: Pipelining.
    .. [3] J. Austin et al., "How to Think About GPUs", in *How to Scale Your Model*, 2025;
       jax-ml/scaling-book, ``gpus.md``.
    .. [4] Y. Huang et al., "GPipe: Efficient Training of Giant Neural Networks using Pipeline
       Parallelism", NeurIPS 2019.
    .. [5] D. Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
       Using Megatron-LM", SC 2021.

    Examples
    --------
    >>> bubble_overhead(stages=[1, 4, 4], microbatches=16, virtual_stages=[1, 1, 4])
    array([0.      , 0.1875  , 0.046875])
    """
    Z, m, v = (np.asarray(a, dtype=float) for a in (stages, microbatches, virtual_stages))
    return (Z - 1) / (v * m)


def stage_traffic_time(
    *,
    batch: ArrayLike,
    d_model: ArrayLike,
    stages: ArrayLike,
    microbatches: ArrayLike,
    bandwidth: ArrayLike,
    virtual_stages: ArrayLike = 1,
) -> float | np.ndarray:
    """Seconds a step spends sending activations between stages: 2·B·D/(W·m) · (m + Z − 2),
    v times that with v virtual stages (each microbatch crosses every device v times, MODEL.md
    §B.6).

    Each microbatch of B/m tokens moves 2·(B/m)·D bytes each way (MODEL.md §A.6); ``bandwidth`` is
    that of the link between neighbouring stages. Zero with one stage.

    Parameters
    ----------
    batch : float or array_like
        B, the tokens whose activations cross the stages: the global batch, or a chip's share
        b_c = B/(X·Y·P) for the time one chip sends (MODEL.md §A.6) [tokens].
    d_model : float or array_like
        D, the model width [features].
    stages : int or array_like
        Z, the pipeline stages.
    microbatches : int or array_like
        m, the microbatches a step.
    bandwidth : float or array_like
        W, the bandwidth of the link between neighbouring stages [bytes/s].
    virtual_stages : int or array_like, default 1
        v, the virtual stages a device holds (interleaved 1F1B); 1 for GPipe and 1F1B.

    Returns
    -------
    time : float or np.ndarray
        The seconds a step spends sending activations between stages [s].

    References
    ----------
    .. [1] docs/MODEL.md §A.6 (stage-to-stage traffic) and §B.6 (v times the traffic
       interleaved).
    .. [2] D. Narayanan et al., "Efficient Large-Scale Language Model Training on GPU Clusters
       Using Megatron-LM", SC 2021.

    Examples
    --------
    >>> stage_traffic_time(batch=1e6, d_model=8192, stages=[1, 4], microbatches=16,
    ...                    bandwidth=1.8e11).round(4)
    array([0.    , 0.1024])
    """
    B, D, Z, m, W, v = (
        np.asarray(a, dtype=float)
        for a in (batch, d_model, stages, microbatches, bandwidth, virtual_stages)
    )
    return (Z > 1) * v * 2 * B * D / (W * m) * (m + Z - 2)


# Which ends of the model take a layer's place in the pipeline split: Megatron-LM's
# --account-for-embedding-in-pipeline-split and --account-for-loss-in-pipeline-split
# (megatron/core/transformer/transformer_block.py, get_num_layers_to_build): (embedding, loss).
ENDS_AS_LAYERS = {"none": (0, 0), "embedding": (1, 0), "loss": (0, 1), "both": (1, 1)}
# and back: the name of each (embedding, loss) pair, as a launch file's flags give it
ENDS_NAMED_BY_SLOTS = {slots: name for name, slots in ENDS_AS_LAYERS.items()}


def layout_split(layout) -> dict:
    """A layout's pipeline split as ``stage_layers`` takes it: its virtual stages, the ends it
    counts as layers, the first and the last stage's layers where given, and how its schedule
    places the stages (both ends on the first device; DualPipe's two copies).

    Parameters
    ----------
    layout : Layout
        The layout.

    Returns
    -------
    split : dict
        ``virtual_stages``, ``ends_as_layers``, ``ends_together``, ``copies``, ``first_layers``
        and ``last_layers``.
    """
    return dict(
        virtual_stages=layout.virtual_stages,
        ends_as_layers=layout.ends_as_layers,
        ends_together=ends_together(layout.schedule),
        copies=weight_copies(layout.schedule),
        first_layers=layout.first_stage_layers,
        last_layers=layout.last_stage_layers,
    )


def stage_layers(
    *,
    layers: ArrayLike,
    stages: ArrayLike,
    virtual_stages: ArrayLike = 1,
    ends_as_layers: str = "none",
    ends_together: ArrayLike = False,
    copies: ArrayLike = 1,
    first_layers: int | None = None,
    last_layers: int | None = None,
) -> tuple:
    """Transformer layers on the first device, a middle one and the one with the output layer.

    The split hands each device v·ceil(S/(Z·v)) of the S = L + e + l slots, where the
    embedding (e) and the loss (l) may each take a layer's place (``ends_as_layers``): the
    first device then holds one layer fewer, the last one fewer (both on the first device when
    the schedule's ends sit together, a V). DualPipe's devices hold a stage of each of its two
    copies, the first device one copy's first and the other's last: a copy's share there is
    S − (e + l)/2. Where Z·v does not divide S, the busiest device is charged, as for Llama 3
    405B's 126 layers over 16 stages. One stage holds all L.

    The first or the last device may instead be given its layers (Megatron-LM's
    --decoder-first-pipeline-num-layers and --decoder-last-pipeline-num-layers): the devices
    between them split the rest, v·ceil(rest/((Z − k)·v)) each for the k devices given.

    Parameters
    ----------
    layers : int or array_like
        L, the model's layers [layers].
    stages : int or array_like
        Z, the pipeline stages.
    virtual_stages : int or array_like, default 1
        v, the virtual stages a device holds (interleaved 1F1B); 1 for GPipe and 1F1B.
    ends_as_layers : str, default "none"
        Which ends take a layer's place: "none", "embedding", "loss" or "both".
    ends_together : bool or array_like, default False
        The output layer sits on the first device (V schedules).
    copies : int or array_like, default 1
        The copies of the model the stages split (2 for DualPipe, whose first device holds the
        first stage of one and the last of the other).
    first_layers : int, optional
        The layers of the first device, given (not with ``ends_as_layers``). None: its share of
        the split.
    last_layers : int, optional
        The layers of the last device, given. None: its share of the split.

    Returns
    -------
    first, middle, last : np.ndarray
        The layers of the first device, of a device in the middle (the first one's count where
        there is none) and of the device holding the output layer, a copy's share under DualPipe
        [layers].

    References
    ----------
    .. [1] docs/MODEL.md §A.6 (uneven stages) and §E.1 (the stage).

    Examples
    --------
    Llama 3 405B's 126 layers on 8 devices of 16 virtual stages, its ends counted as layers:

    >>> [int(n) for n in stage_layers(layers=126, stages=8, virtual_stages=16,
    ...                               ends_as_layers="both")]
    [15, 16, 15]
    """
    L, Z, v, V = (np.asarray(a) for a in (layers, stages, virtual_stages, ends_together))
    staged = Z > 1
    # the slots the embedding and the loss take; one stage holds them beside all its layers
    embedding, loss = (end * staged for end in ENDS_AS_LAYERS[ends_as_layers])
    S = v * -(-(L + embedding + loss) // (Z * v))
    first = np.where(staged, S - (embedding + loss * V) / np.asarray(copies), L)
    last = np.where(V, first, np.where(staged, S - loss, L))
    middle = np.where((Z > 2) | (staged & V), S, first)
    if first_layers is None and last_layers is None:
        return first, middle, last
    return _given_ends(L, Z, v, first_layers, last_layers)


def _given_ends(L, Z, v, first_layers, last_layers) -> tuple:
    """The first and the last device's layers as given, the devices between them splitting the
    rest evenly (the busiest charged); one stage holds all L."""
    given = (first_layers is not None) + (last_layers is not None)
    rest = L - (first_layers or 0) - (last_layers or 0)
    between = np.maximum(Z - given, 1)
    middle = v * -(-np.maximum(rest, 0) // (between * v))
    staged = Z > 1
    first = np.where(staged, middle if first_layers is None else first_layers, L)
    last = np.where(staged, middle if last_layers is None else last_layers, L)
    return first, np.where(staged & (Z > given), middle, first), last


def busiest_stage_layers(*, layers: ArrayLike, stages: ArrayLike, **split) -> np.ndarray:
    """Layers on the busiest pipeline stage: v·ceil(L/(Z·v)) when Z·v does not divide L (Llama 3
    405B's 126 layers over 16 stages, DeepSeek-V3's 61): that stage sets the pace and the memory.
    Ends that take a layer's place (``stage_layers``) leave the most on a middle stage.

    Parameters
    ----------
    layers : int or array_like
        L, the model's layers [layers].
    stages : int or array_like
        Z, the pipeline stages.
    **split
        How the stages split the layers: ``stage_layers``' other keywords (a layout's, as
        ``layout_split`` gives them).

    Returns
    -------
    layers : np.ndarray
        The layers the busiest stage holds (a whole number for whole inputs, but a copy's
        share under DualPipe) [layers].

    References
    ----------
    .. [1] docs/MODEL.md §A.6 (uneven stages) and §E.1 (the stage).

    Examples
    --------
    >>> [int(n) for n in busiest_stage_layers(layers=126, stages=[16, 14], virtual_stages=1)]
    [8, 9]
    """
    first, middle, last = stage_layers(layers=layers, stages=stages, **split)
    return np.maximum(np.maximum(first, middle), last)


def stage_share(*, layers: ArrayLike, stages: ArrayLike, **split) -> float | np.ndarray:
    """The stages' count as the busiest stage sees it, L / its layers: Z when they split evenly.

    Parameters
    ----------
    layers : int or array_like
        L, the model's layers [layers].
    stages : int or array_like
        Z, the pipeline stages.
    **split
        How the stages split the layers: ``stage_layers``' other keywords.

    Returns
    -------
    stages : float or np.ndarray
        L / ``busiest_stage_layers``: the stages the model would split into at the busiest
        stage's share.
    """
    return layers / busiest_stage_layers(layers=layers, stages=stages, **split)
