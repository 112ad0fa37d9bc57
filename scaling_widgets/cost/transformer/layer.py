"""One MLP layer's compute and communication per chip, for each strategy (MODEL.md §A.2, §A.3,
§A.10)."""

from __future__ import annotations

from functools import cached_property

import numpy as np
from numpy.typing import ArrayLike

from ..ground.choices import per_choice
from ..ground.records import record
from .exactness import CHAPTER, Exactness, corrected

# The roofline's axes: the MLP's traffic and a MoE layer's all-to-all. CP's keys and values are
# attention's traffic, which the chapter's layer leaves out (MODEL.md §A.2): CP has its own rule
# (``context.ring_hides``), and the predicted step charges what it exposes (MODEL.md §D.3).
AXES = ("x", "y", "dcn", "ep")
# the strategies whose X axis holds whole weights (its role is "dp")
DATA_PARALLEL = ("dp", "dp+tp")


def _dp(B, D, F, X, Y):
    return (0.0, 8 * D * F), (0.0, 0.0)  # AllReduce of the gradients, backward only


def _fsdp(B, D, F, X, Y):
    return (4 * D * F, 8 * D * F), (0.0, 0.0)  # AllGather weights; again + ReduceScatter grads


def _tp(B, D, F, X, Y):
    return (0.0, 0.0), (4 * D * B, 4 * D * B)  # AllGather In, ReduceScatter Out


def _fsdp_tp(B, D, F, X, Y):
    return (4 * D * F / Y, 8 * D * F / Y), (4 * D * B / X, 8 * D * B / X)


def _dp_tp(B, D, F, X, Y):
    # DP's AllReduce of a 1/Y shard; TP as above
    return (0.0, 8 * D * F / Y), (4 * D * B / X, 8 * D * B / X)


# MODEL.md §A.3, the summary table: bytes per chip per layer on the X and Y axes, (forward,
# backward). "dp+tp" (ZeRO 0-2 with TP, as PP wants, MODEL.md §A.6) combines its DP and FSDP + TP
# rows.
TRAFFIC = {"dp": _dp, "fsdp": _fsdp, "tp": _tp, "fsdp+tp": _fsdp_tp, "dp+tp": _dp_tp}


def _both_passes(name: str) -> cached_property:
    """The forward and the backward pass of a (forward, backward) field, summed."""
    return cached_property(lambda self: getattr(self, name)[0] + getattr(self, name)[1])


@record(eq=False)
class LayerTimes:
    """Per-layer, per-chip times [s] of each pass: compute and each axis' communication.

    The axes overlap each other and the compute (MODEL.md §A.3, §A.10): a pass takes
    max(T_math, T_x, T_y, T_dcn). ``x_role`` names the X axis ("dp" or "fsdp"; an array of
    them when the strategy differs per layout).
    """

    math: tuple[np.ndarray, np.ndarray]  # (forward, backward)
    x: tuple[np.ndarray, np.ndarray]
    y: tuple[np.ndarray, np.ndarray]
    dcn: tuple[np.ndarray, np.ndarray]
    x_role: str | np.ndarray = "fsdp"
    ep: tuple = (0.0, 0.0)  # a MoE layer's all-to-alls, dispatch and combine (MODEL.md §D.2)
    # context parallelism's keys and values, beyond what hides (MODEL.md §D.3)
    cp: tuple = (0.0, 0.0)

    def __repr__(self):
        return f"LayerTimes(shape={np.shape(self.t_math)}, x_role={self.x_role!r})"

    # Each pass's time summed: compute, and the traffic on each axis [s].
    t_math = _both_passes("math")
    t_comms_x = _both_passes("x")
    t_comms_y = _both_passes("y")
    t_comms_dcn = _both_passes("dcn")
    t_comms_ep = _both_passes("ep")
    t_comms_cp = _both_passes("cp")

    @cached_property
    def _comms(self):
        """Per pass, the slowest axis [s]."""
        return tuple(
            np.maximum.reduce(np.broadcast_arrays(*(getattr(self, a)[p] for a in AXES)))
            for p in (0, 1)
        )

    @cached_property
    def t_comms(self) -> float | np.ndarray:
        """Communication of both passes, the axes of a pass overlapped [s]."""
        return self._comms[0] + self._comms[1]

    @cached_property
    def lower_bound(self) -> float | np.ndarray:
        """Compute and communication fully overlapped: sum over passes of the max [s]."""
        return np.maximum(self.math[0], self._comms[0]) + np.maximum(self.math[1], self._comms[1])

    @cached_property
    def upper_bound(self) -> float | np.ndarray:
        """Compute and communication not overlapped: T_math + T_comms (the axes still overlap)
        [s]."""
        return self.t_math + self.t_comms

    def comm_ratio(self, axis: str) -> float | np.ndarray:
        """Communication over compute time of one axis, in its worst pass.

        Parameters
        ----------
        axis : str
            The field of that axis's (forward, backward) times: "x", "y", "dcn" or "ep"
            (``AXES``), or "cp".

        Returns
        -------
        ratio : float or np.ndarray
            The larger of the forward and the backward pass's communication over compute.
        """
        times = getattr(self, axis)
        return np.maximum(times[0] / self.math[0], times[1] / self.math[1])

    @cached_property
    def worst_ratio(self) -> float | np.ndarray:
        """The largest communication-to-compute ratio of any axis and pass (> 1: comm-bound)."""
        return np.maximum.reduce(np.broadcast_arrays(*(self.comm_ratio(a) for a in AXES)))

    @cached_property
    def compute_bound(self) -> np.bool_ | np.ndarray:
        """T_math >= every axis' communication in each pass separately (MODEL.md §A.10); at the
        threshold itself (B/X = α/M_X exactly) rounding must not decide, hence the 1e-12."""
        level = 1 - 1e-12
        return (self.math[0] >= self._comms[0] * level) & (self.math[1] >= self._comms[1] * level)

    @cached_property
    def worst_axis(self) -> str | np.ndarray:
        """The axis ('dp'|'fsdp', 'tp', 'dcn', 'ep') with the largest ratio, bound or not."""
        worst = np.stack(np.broadcast_arrays(*(self.comm_ratio(a) for a in AXES))).argmax(axis=0)
        # one: a np.str_
        return np.where(worst == 0, self.x_role, np.array(["", "tp", "dcn", "ep"])[worst])[()]

    @cached_property
    def bottleneck(self) -> np.ndarray:
        """'compute', or the worst axis when its ratio exceeds 1 (MODEL.md §A.10)."""
        return np.where(self.compute_bound, "compute", self.worst_axis)


def layer_times(
    *,
    strategy: str | np.ndarray,
    batch: ArrayLike,
    d_model: ArrayLike,
    d_ff: ArrayLike,
    x: ArrayLike = 1,
    y: ArrayLike = 1,
    pods: ArrayLike = 1,
    fsdp_pods: ArrayLike = 1,
    tp_pods: ArrayLike = 1,
    flops: ArrayLike,
    ici_bw: ArrayLike,
    dcn_bw: ArrayLike,
    mx: ArrayLike = 1,
    my: ArrayLike = 1,
    exact: Exactness = CHAPTER,
    wrap_x: ArrayLike = True,
    wrap_y: ArrayLike = True,
    d_ff_weights: ArrayLike | None = None,
    ep_seconds: ArrayLike = 0.0,
    cp_seconds: ArrayLike = 0.0,
    tp_share: ArrayLike | None = None,
) -> LayerTimes:
    """Per-chip compute and communication times of one layer (MODEL.md §A.3, §B.9).

    T_math = {4, 8}·(B/P)·D·F / (X·Y·C) for the forward and backward pass; the X traffic of
    the summary table rides on mx·W_ici, the Y traffic on my·W_ici, and with P > 1 pods the
    backward AllReduce of each chip's 1/(X·Y) of the gradients, 8·D·F/(X·Y), on W_dcn. FSDP
    across F > 1 pods gathers each chip's 1/(X·Y) of the weights over W_dcn, 4·D·F/(X·Y)
    forward and twice that backward (again, and the gradients' ReduceScatter), and the P/F
    replicas AllReduce a 1/F share of the gradients. TP across T > 1 pods (P then the replicas,
    Y the whole group) moves its Y traffic over the Y/T chips of a pod on ICI and, at once,
    each chip's share over its own link of W_dcn: (Y/T)·W_dcn for the pod (MODEL.md §B.11).

    Parameters
    ----------
    strategy : str or np.ndarray
        One of "dp", "fsdp", "tp", "fsdp+tp", "dp+tp", or an array of them (one per layout).
    batch : float or array_like
        B, the global batch [tokens].
    d_model : float or array_like
        D, the model width [features].
    d_ff : float or array_like
        F, the MLP width a token goes through [features].
    x : int or array_like, default 1
        X, the chips sharding the batch (and, under FSDP, the weights) [chips].
    y : int or array_like, default 1
        Y, the chips sharding the tensor dimension [chips].
    pods : int or array_like, default 1
        P, the pods over DCN.
    fsdp_pods : int or array_like, default 1
        F, the pods each FSDP group spans (MODEL.md §B.9); 1: every pod a data replica.
    tp_pods : int or array_like, default 1
        T, the pods each TP group spans (MODEL.md §B.11): Y/T of its chips in each pod; 1:
        whole TP groups in each pod.
    flops : float or array_like
        C, a chip's peak bf16 matmul rate [FLOP/s].
    ici_bw : float or array_like
        W_ici, a chip's ICI bandwidth along one mesh axis, both ways (on GPUs its NVLink egress)
        [bytes/s].
    dcn_bw : float or array_like
        W_dcn, a chip's share of the data-center network, one direction [bytes/s].
    mx : float or array_like, default 1
        M_X, the physical mesh axes the X group spans (on GPUs its bandwidth in units of
        NVLink's, MODEL.md §B.5).
    my : float or array_like, default 1
        M_Y, the physical mesh axes the Y group spans (on GPUs as for ``mx``).
    exact : Exactness, default CHAPTER
        The MODEL.md §B.7 corrections; ``CHAPTER``: none, the chapter's model.
    wrap_x : bool or array_like, default True
        Whether the X group is a ring (read by the §B.7 corrections only).
    wrap_y : bool or array_like, default True
        Whether the Y group is a ring (read by the §B.7 corrections only).
    d_ff_weights : float or array_like, optional
        F_w, the width the layer holds as weights, when it is not the width a token goes
        through: a MoE layer computes (k + S)·F_e and holds (E + S)·F_e (MODEL.md §D.1). The
        weights' traffic (FSDP, DP, DCN) scales with it, the compute and TP's traffic do not.
        None: F [features].
    ep_seconds : float or array_like, default 0.0
        A MoE layer's all-to-all, seconds per token a chip sends (``experts``): two a pass, over
        the B/(P·X·Y) tokens of each chip (MODEL.md §D.2); 0 without expert parallelism
        [s/token].
    cp_seconds : float or array_like, default 0.0
        Context parallelism's exposed traffic, seconds per token a chip holds, forward
        (``context``), over its B/(P·X) tokens; twice that backward (MODEL.md §D.3) [s/token].
    tp_share : float or array_like, optional
        The share of the layers whose MLP gathers and scatters over TP (None: all; less where
        the EP group folds over TP: ``experts.mlp_tp_share``, MODEL.md §D.2).

    Returns
    -------
    times : LayerTimes
        The compute and each axis' communication of the forward and backward pass, per chip and
        layer [s].

    References
    ----------
    .. [1] docs/MODEL.md §A.2 (the layer), §A.3 (strategies, per layer and per chip), §D.1 (a
       MoE layer's two widths), §D.2 (expert parallelism) and §D.3 (context parallelism).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``: "Data
       Parallelism", "Fully-Sharded Data Parallelism (FSDP)", "Tensor Parallelism", "Mixed FSDP
       and Tensor Parallelism" and "Scaling Between Pods".

    Examples
    --------
    >>> t = layer_times(strategy="dp", batch=[1e6, 1e7], d_model=8192, d_ff=32768, x=4096,
    ...                 flops=4.59e14, ici_bw=1.8e11, dcn_bw=6.25e9, mx=3)
    >>> t.compute_bound.tolist()
    [False, True]
    """
    B, D, F, X, Y, P, C, W, W_dcn, M_X, M_Y = (
        np.asarray(v, dtype=float)
        for v in (batch, d_model, d_ff, x, y, pods, flops, ici_bw, dcn_bw, mx, my)
    )
    F_w = F if d_ff_weights is None else np.asarray(d_ff_weights, dtype=float)
    A2A, KV = np.asarray(ep_seconds, dtype=float), np.asarray(cp_seconds, dtype=float)
    per_pod = B / P
    XY = X * Y
    flops_per_k = per_pod * (D * F / C) / XY  # one B·D·F/(X·Y·C); forward 4, backward 8
    math = (4 * flops_per_k, 8 * flops_per_k)
    # The table's F in a weight's bytes is the width held; TP's bytes hold no F.
    (x_fwd, x_bwd), (y_fwd, y_bwd) = per_choice(
        strategy, lambda s: TRAFFIC[s](per_pod, D, F_w, X, Y)
    )
    # A group of one chip moves nothing (and spans no axis: M = 0); a group spanning M axes gets
    # M·W_ici (MODEL.md §A.2). On GPUs M is a fraction of the NVLink bandwidth (MODEL.md §B.5).
    per_x_byte = (X > 1) / (np.where(M_X > 0, M_X, 1) * W)
    T = np.asarray(tp_pods, dtype=float)
    in_pod = Y / T  # the TP group's chips in a pod: its ICI ring; each sends on over DCN
    per_y_byte = (in_pod > 1) / (np.where(M_Y > 0, M_Y, 1) * W)
    y_over_dcn = (T > 1) / (in_pod * W_dcn)
    pods_fsdp = np.asarray(fsdp_pods, dtype=float)
    weights_over_dcn = (pods_fsdp > 1) * (4 * D * F_w / W_dcn) / XY
    replicas = (P / pods_fsdp > 1) * (8 * D * F_w / W_dcn) / (XY * pods_fsdp)
    x, y, dcn = (
        (x_fwd * per_x_byte, x_bwd * per_x_byte),
        (y_fwd * per_y_byte, y_bwd * per_y_byte),
        (weights_over_dcn, 2 * weights_over_dcn + replicas),
    )
    tp_over_dcn = (y_fwd * y_over_dcn, y_bwd * y_over_dcn)
    if exact != CHAPTER:
        x, y, dcn = corrected(exact, strategy, x, y, dcn, X, in_pod, P, wrap_x, wrap_y)
        ring = (T - 1) / T if exact.ring_factor else 1.0  # across pods, a ring of T (§B.7)
        tp_over_dcn = (tp_over_dcn[0] * ring, tp_over_dcn[1] * ring)
    if tp_share is not None:
        share = np.asarray(tp_share, dtype=float)
        y = (y[0] * share, y[1] * share)
        tp_over_dcn = (tp_over_dcn[0] * share, tp_over_dcn[1] * share)
    if np.any(T > 1):  # TP's share that crosses between pods rides beside the replicas' own
        dcn = (dcn[0] + tp_over_dcn[0], dcn[1] + tp_over_dcn[1])
    # none without EP or CP: one zero, not an array of them (as the DCN's forward pass)
    all_to_all = 2 * A2A * per_pod / XY if np.any(A2A) else np.zeros(())  # dispatch and combine
    context = KV * per_pod / X if np.any(KV) else np.zeros(())  # K/V forward; about twice backward
    return LayerTimes(
        math=math,
        x=x,
        y=y,
        dcn=(np.zeros(()) + dcn[0], dcn[1]),  # without FSDP across pods, a backward AllReduce
        x_role=_x_role(strategy),
        ep=(all_to_all, all_to_all),
        cp=(context, 2 * context),
    )


def _x_role(strategy):
    if isinstance(strategy, str):
        return "dp" if strategy in DATA_PARALLEL else "fsdp"
    return np.where(np.isin(strategy, DATA_PARALLEL), "dp", "fsdp")


def crossover_batch(
    *,
    strategy: str | np.ndarray,
    d_model: ArrayLike,
    d_ff: ArrayLike,
    x: ArrayLike = 1,
    y: ArrayLike = 1,
    pods: ArrayLike = 1,
    fsdp_pods: ArrayLike = 1,
    tp_pods: ArrayLike = 1,
    flops: ArrayLike,
    ici_bw: ArrayLike,
    dcn_bw: ArrayLike,
    mx: ArrayLike = 1,
    my: ArrayLike = 1,
    exact: Exactness = CHAPTER,
    wrap_x: ArrayLike = True,
    wrap_y: ArrayLike = True,
    d_ff_weights: ArrayLike | None = None,
    ep_seconds: ArrayLike = 0.0,
    cp_seconds: ArrayLike = 0.0,
    tp_share: ArrayLike | None = None,
) -> float | np.ndarray:
    """The smallest global batch [tokens] at which this layout is compute-bound (inf: never).

    Compute grows as m·B and every communication time as a + b·B, so each pass and axis is
    compute-bound from B = a / (m − b) on (MODEL.md §A.3); the layout needs the largest of these.

    Parameters
    ----------
    strategy : str or np.ndarray
        One of "dp", "fsdp", "tp", "fsdp+tp", "dp+tp", or an array of them (one per layout).
    d_model : float or array_like
        D, the model width [features].
    d_ff : float or array_like
        F, the MLP width a token goes through [features].
    x : int or array_like, default 1
        X, the chips sharding the batch (and, under FSDP, the weights) [chips].
    y : int or array_like, default 1
        Y, the chips sharding the tensor dimension [chips].
    pods : int or array_like, default 1
        P, the pods over DCN.
    fsdp_pods : int or array_like, default 1
        F, the pods each FSDP group spans (MODEL.md §B.9); 1: every pod a data replica.
    tp_pods : int or array_like, default 1
        T, the pods each TP group spans (MODEL.md §B.11): Y/T of its chips in each pod; 1:
        whole TP groups in each pod.
    flops : float or array_like
        C, a chip's peak bf16 matmul rate [FLOP/s].
    ici_bw : float or array_like
        W_ici, a chip's ICI bandwidth along one mesh axis, both ways (on GPUs its NVLink egress)
        [bytes/s].
    dcn_bw : float or array_like
        W_dcn, a chip's share of the data-center network, one direction [bytes/s].
    mx : float or array_like, default 1
        M_X, the physical mesh axes the X group spans (on GPUs its bandwidth in units of
        NVLink's, MODEL.md §B.5).
    my : float or array_like, default 1
        M_Y, the physical mesh axes the Y group spans (on GPUs as for ``mx``).
    exact : Exactness, default CHAPTER
        The MODEL.md §B.7 corrections; ``CHAPTER``: none, the chapter's model.
    wrap_x : bool or array_like, default True
        Whether the X group is a ring (read by the §B.7 corrections only).
    wrap_y : bool or array_like, default True
        Whether the Y group is a ring (read by the §B.7 corrections only).
    d_ff_weights : float or array_like, optional
        F_w, the width the layer holds as weights, when it is not the width a token goes
        through: a MoE layer computes (k + S)·F_e and holds (E + S)·F_e (MODEL.md §D.1). The
        weights' traffic (FSDP, DP, DCN) scales with it, the compute and TP's traffic do not.
        None: F [features].
    ep_seconds : float or array_like, default 0.0
        A MoE layer's all-to-all, seconds per token a chip sends (``experts``): two a pass, over
        the B/(P·X·Y) tokens of each chip (MODEL.md §D.2); 0 without expert parallelism
        [s/token].
    cp_seconds : float or array_like, default 0.0
        Context parallelism's exposed traffic, seconds per token a chip holds, forward
        (``context``), over its B/(P·X) tokens; twice that backward (MODEL.md §D.3) [s/token].
    tp_share : float or array_like, optional
        The share of the layers whose MLP gathers and scatters over TP (None: all; less where
        the EP group folds over TP: ``experts.mlp_tp_share``, MODEL.md §D.2).

    Returns
    -------
    batch : float or np.ndarray
        The smallest compute-bound global batch; inf where the layout never is [tokens].

    References
    ----------
    .. [1] docs/MODEL.md §A.3 (strategies, per layer and per chip), §A.8 (example 10) and §A.10
       (the crossover batch).
    .. [2] J. Austin et al., "How to Parallelize a Transformer for Training", in *How to Scale
       Your Model* (the Scaling Book), 2025; jax-ml/scaling-book, ``training.md``: "Mixed FSDP
       and Tensor Parallelism".

    Examples
    --------
    >>> crossover_batch(strategy="fsdp+tp", d_model=8192, d_ff=32768, x=[512, 256], y=[8, 16],
    ...                 flops=4.59e14, ici_bw=1.8e11, dcn_bw=6.25e9, mx=[3, 2], my=1).round()
    array([435200.,     inf])
    """
    layout = dict(
        strategy=strategy,
        d_model=d_model,
        d_ff=d_ff,
        x=x,
        y=y,
        pods=pods,
        fsdp_pods=fsdp_pods,
        tp_pods=tp_pods,
        flops=flops,
        ici_bw=ici_bw,
        dcn_bw=dcn_bw,
        mx=mx,
        my=my,
        exact=exact,
        wrap_x=wrap_x,
        wrap_y=wrap_y,
        d_ff_weights=d_ff_weights,
        ep_seconds=ep_seconds,
        cp_seconds=cp_seconds,
        tp_share=tp_share,
    )
    return crossover_of(layer_times(batch=0.0, **layout), layer_times(batch=1.0, **layout), 1.0)


def crossover_of(at_zero: LayerTimes, at_batch: LayerTimes, batch: ArrayLike) -> np.ndarray:
    """``crossover_batch`` from one layout's layer times at no batch and at ``batch`` (every time
    is a + b·B, the compute m·B): an evaluation that has the layer at its batch already needs only
    the times at none.

    Parameters
    ----------
    at_zero : LayerTimes
        The layout's layer times at a batch of 0.
    at_batch : LayerTimes
        The same layout's layer times at ``batch``.
    batch : float or array_like
        The batch of ``at_batch``, more than 0 [tokens].

    Returns
    -------
    batch : np.ndarray
        The smallest compute-bound global batch; inf where the layout never is [tokens].
    """
    B = np.asarray(batch, dtype=float)
    needed = [np.zeros(np.broadcast_shapes(np.shape(at_batch.math[0]), B.shape))]
    for p in (0, 1):
        m = at_batch.math[p] / B
        for axis in AXES:
            a, at_B = getattr(at_zero, axis)[p], getattr(at_batch, axis)[p]
            if not (np.any(a) or np.any(at_B)):
                continue  # an axis that moves nothing binds from no batch on
            b = (at_B - a) / B
            # m > b: from a/(m - b) on; m <= b: never, unless nothing is moved at all.
            never = np.where((m == b) & (a <= 0), 0.0, np.inf)
            from_b = np.where(m > b, a / np.where(m > b, m - b, 1.0), never)
            needed.append(from_b)
    return np.maximum.reduce(np.broadcast_arrays(*needed))
