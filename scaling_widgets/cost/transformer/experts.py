"""Expert parallelism (MODEL.md §D.2): each chip of an EP group holds E/EP of a MoE layer's experts,
and two all-to-alls a pass bring every token to its k experts and back.

The EP group is taken from the data axis X: EP of its chips split the experts, and the rest
(X/EP of them) hold copies that data parallelism keeps in step; the experts are TP-sharded like
the rest of the layer. Or, with expert tensor parallelism 1 (``etp``, as Megatron-Core folds
its groups), the EP group is taken from TP x X, TP's chips first: each chip holds whole
experts, E/EP of them, and the routed experts need no TP collective.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

from ..hardware.chip import Chip
from ..hardware.mesh import subgroup_span
from .shapes import Model


def folds_over_tp(etp: ArrayLike | None, y: ArrayLike) -> bool | np.ndarray:
    """Whether the EP group folds over TP (MODEL.md §D.2): expert tensor parallelism 1 while TP
    is more than one chip. ``etp`` None (or equal to Y) is the experts TP-sharded as the rest.

    Parameters
    ----------
    etp : int, array_like or None
        The experts' tensor-parallel degree (Megatron-Core's expert tensor parallelism): 1 folds
        the group over TP; None or any other value leaves the experts TP-sharded as the rest of
        the layer.
    y : int or array_like
        Y, the tensor-parallel degree [chips].

    Returns
    -------
    folded : bool or np.ndarray
        Whether each layout takes its EP group from TP x X.

    References
    ----------
    .. [1] docs/MODEL.md §D.2 (expert parallelism: folded over TP).
    .. [2] ``NVIDIA/Megatron-LM@ddc55cd3731378ade5585748d96c35f873c0bb73,
       megatron/core/parallel_state.py`` (``initialize_model_parallel``: the expert groups;
       ``expert_tensor_parallel_size`` is TP's unless given, and in the order "tp-cp-ep-dp-pp"
       EP takes the ranks next to it).
    """
    if etp is None:
        return False
    return (np.asarray(etp) == 1) & (np.asarray(y) > 1)


def ep_of_data(ep: ArrayLike, y: ArrayLike, etp: ArrayLike | None = None) -> np.ndarray:
    """e, the EP group's extent over the data axis: EP; or EP/Y when it folds over TP (below one
    when the group lies inside TP). Each chip holds (E/e)/Y of the routed experts either way, and
    X/e chips hold the same ones (their data-parallel group).

    Parameters
    ----------
    ep : int or array_like
        EP, the chips that split each MoE layer's routed experts [chips].
    y : int or array_like
        Y, the tensor-parallel degree [chips].
    etp : int or array_like, optional
        The experts' tensor-parallel degree: 1 folds the group over TP (``folds_over_tp``);
        None or any other value leaves the experts TP-sharded as the rest of the layer.

    Returns
    -------
    e : np.ndarray
        EP over its share of TP [chips of X].

    References
    ----------
    .. [1] docs/MODEL.md §D.2 (expert parallelism: folded over TP).
    .. [2] ``NVIDIA/Megatron-LM@ddc55cd3731378ade5585748d96c35f873c0bb73,
       megatron/core/parallel_state.py`` (``initialize_model_parallel``: the expert groups;
       ``expert_tensor_parallel_size`` is TP's unless given, and in the order "tp-cp-ep-dp-pp"
       EP takes the ranks next to it).
    """
    EP = np.asarray(ep, dtype=float)
    return np.where(folds_over_tp(etp, y), EP / np.asarray(y), EP)


def mlp_tp_share(model: Model, folded: ArrayLike) -> float | np.ndarray:
    """The share of the layers whose MLP still has TP collectives: all of them, but where the EP
    group folds over TP the routed experts are whole on each chip, and a MoE layer without shared
    experts has none (its shared experts, TP-sharded, still gather and scatter the tokens).

    Parameters
    ----------
    model : Model
        The model: its layers, and its MoE layers' shared experts and dense layers.
    folded : bool or array_like
        Whether the EP group folds over TP (``folds_over_tp``).

    Returns
    -------
    share : float or np.ndarray
        Of the layers, the share whose MLP gathers and scatters over TP.
    """
    if model.moe is None or model.moe.shared:
        return 1.0
    moe_layers = (model.layers - model.moe.dense_layers) / model.layers
    return np.where(folded, 1 - moe_layers, 1.0)


def in_node(chip: Chip, ep: ArrayLike, y: ArrayLike, folded: ArrayLike = False) -> np.ndarray:
    """Of an EP group on a GPU cluster, the chips that share a node: min(EP, node/Y) when it is
    taken from the data axis (TP fills the rest of the node), min(EP, node) when it folds over
    TP.

    Parameters
    ----------
    chip : Chip
        The GPU, for its node size.
    ep : int or array_like
        EP, the chips that split each MoE layer's routed experts [chips].
    y : int or array_like
        Y, the tensor-parallel degree [chips].
    folded : bool or array_like, default False
        Whether the EP group folds over TP (``folds_over_tp``).

    Returns
    -------
    n : np.ndarray
        Chips of the EP group per node [chips].
    """
    per_node = np.where(folded, chip.node_size, chip.node_size // np.asarray(y))
    return np.minimum(np.asarray(ep), np.maximum(per_node, 1))


def held_width(model: Model, ep: ArrayLike = 1) -> float | np.ndarray:
    """The MLP width one chip holds of a (MoE) layer before FSDP or TP: (E/EP + S)·F_e (F if
    dense).

    Parameters
    ----------
    model : Model
        The model: F, or its MoE layers' E, S and F_e.
    ep : float or array_like, default 1
        EP, the chips that split the routed experts; its callers pass e, the group's extent over
        the data axis (``ep_of_data``) [chips].

    Returns
    -------
    width : float or np.ndarray
        The MLP width one chip holds of each (MoE) layer, of the shape of ``ep`` [features].
    """
    if model.moe is None:
        return float(model.d_ff) * np.ones_like(np.asarray(ep, dtype=float))
    moe = model.moe
    return (moe.experts / np.asarray(ep, dtype=float) + moe.shared) * moe.d_ff


def routed_params(model: Model) -> float:
    """The routed experts' parameters, all layers: what EP divides (c·D·F_e each, MODEL.md §D.1).

    Parameters
    ----------
    model : Model
        The model: its MoE layers (E, F_e, L_dense), its gate, D and L.

    Returns
    -------
    params : float
        The routed experts' parameters of all MoE layers; 0 for a dense model [parameters].
    """
    if model.moe is None:
        return 0.0
    moe, c = model.moe, 3 if model.gated else 2
    return float(moe.experts * c * model.d_model * moe.d_ff * (model.layers - moe.dense_layers))


def dispatch_bytes(model: Model, activation_bytes: float) -> float:
    """A MoE layer's dispatch buffer, its tokens' k·CF copies sorted by expert (MODEL.md §D.2), per
    token and layer on average over all L layers: A·k·CF·D·(L − L_dense)/L; 0 if dense.

    Parameters
    ----------
    model : Model
        The model, for its MoE layers (k, CF, L_dense), D and L.
    activation_bytes : float
        A, the bytes of an activation's element [bytes].

    Returns
    -------
    buffer : float
        The dispatch buffer per token and layer, averaged over all layers [bytes].
    """
    if model.moe is None:
        return 0.0
    moe = model.moe
    return (
        activation_bytes
        * moe.top_k
        * model.padding
        * model.d_model
        * (model.layers - moe.dense_layers)
        / model.layers
    )


def layer_keywords(
    *,
    chip: Chip,
    model: Model,
    ep: ArrayLike,
    etp: ArrayLike | None,
    x: ArrayLike,
    y: ArrayLike,
    mx: ArrayLike,
    my: ArrayLike,
    ep_pods: ArrayLike = 1,
) -> dict:
    """A MoE layer's keywords of ``layer_times`` for an EP group on a placement (MODEL.md §D.2):
    the width a chip holds as weights, the all-to-all's seconds per token a chip sends, and the
    share of TP's traffic left; nothing for a dense model.

    The group is taken from the data axis X of M_X axes, or folded over TP (``etp`` 1), Y's M_Y
    axes first; across ``ep_pods`` E > 1 pods, EP chips in each of them (MODEL.md §B.12).

    Parameters
    ----------
    chip : Chip
        The chip: its links, and on a GPU its node.
    model : Model
        The model; a dense one gives no keywords.
    ep : int or array_like
        EP, the chips that split each MoE layer's routed experts [chips].
    etp : int, array_like or None
        The experts' tensor-parallel degree: 1 folds the group over TP (``folds_over_tp``);
        None or any other value leaves the experts TP-sharded as the rest of the layer.
    x : int or array_like
        X, the data axis [chips].
    y : int or array_like
        Y, the tensor-parallel degree [chips].
    mx : float or array_like
        M_X, the axes the X group spans.
    my : float or array_like
        M_Y, the axes the Y group spans.
    ep_pods : int or array_like, default 1
        E, the pods the EP group spans, EP chips in each.

    Returns
    -------
    keywords : dict
        "d_ff_weights", "ep_seconds" [s/token] and "tp_share"; empty for a dense model.
    """
    if model.moe is None:
        return {}
    folded = folds_over_tp(etp, y)
    e = np.where(folded, np.asarray(ep, dtype=float) / np.asarray(y), ep)  # ``ep_of_data``
    inside_tp = subgroup_span(size=np.where(folded, np.minimum(ep, y), 1), x=y, mx=my)
    span = inside_tp + subgroup_span(size=np.maximum(e, 1), x=x, mx=mx)
    pods = np.asarray(ep_pods)
    group = np.asarray(ep) * pods  # the experts split over the group in all its pods
    return dict(
        d_ff_weights=held_width(model, e * pods),
        ep_seconds=all_to_all_seconds(
            chip=chip, model=model, ep=group, y=y, mx=span, folded=folded, pods=pods
        ),
        tp_share=mlp_tp_share(model, folded),
    )


def all_to_all_seconds(
    *,
    chip: Chip,
    model: Model,
    ep: ArrayLike,
    y: ArrayLike = 1,
    mx: ArrayLike = 1,
    bytes_per_element: float = 2.0,
    folded: ArrayLike = False,
    pods: ArrayLike = 1,
) -> float | np.ndarray:
    """Seconds one all-to-all takes per token a chip sends (MODEL.md §D.2): multiply by its tokens.

    Each token goes to k experts (k·CF with padding to a capacity factor): k·D·bytes leave the
    chip for the (1 − 1/EP) of them that live elsewhere.

    - TPU torus: an all-to-all over a ring of EP chips costs about a quarter of an all-gather
      of the same array, k·D·bytes·(EP − 1)/(4·W_ici·M), with M the axes the group spans.
    - GPU cluster: of the group, n chips share a node (``in_node``). (n − 1)/EP of the copies
      cross NVLink; the rest cross the NIC, where a token goes once to each node that holds one of
      its experts, min(k·(EP − n)/EP, (EP − n)/n) copies, and at most the nodes node-limited
      routing allows (``MoE.routed_nodes``). The two links run at once. Across nodes,
      with Y = 1 and n = 8, this is the GPU chapter's T = 2·B·D·(Z − 8)/Z·min(8k/Z, 1)/W_node.
    - Across E > 1 pods (MODEL.md §B.12), EP/E of the group in each: the share n/EP of a token's
      copies bound for its own pod goes as above over the pod's n chips; the k·(EP − n)/EP
      bound for other pods leave over the chip's own link of the data-center network, W_dcn.
      The two run at once.

    Parameters
    ----------
    chip : Chip
        The chip: its links (W_ici, on a GPU NVLink's and the NIC's) and its node.
    model : Model
        The model: k, CF, D and node-limited routing.
    ep : int or array_like
        EP, the chips that split each MoE layer's experts [chips].
    y : int or array_like, default 1
        Y, the tensor-parallel degree (GPUs: how many EP chips share a node) [chips].
    mx : float or array_like, default 1
        M, the torus axes the EP group spans (TPU only).
    bytes_per_element : float, default 2.0
        Bytes of one activation element [bytes].
    folded : bool or array_like, default False
        Whether the group folds over TP (``folds_over_tp``).
    pods : int or array_like, default 1
        E, the pods the group spans, EP/E of its chips in each.

    Returns
    -------
    seconds : float or np.ndarray
        One all-to-all's time per token a chip sends; 0 for a dense model [s/token].

    References
    ----------
    .. [1] docs/MODEL.md §D.2 (expert parallelism).
    .. [2] J. Austin et al., "How to Think About GPUs", in *How to Scale Your Model*, 2025;
       jax-ml/scaling-book, ``gpus.md``.
    .. [3] DeepSeek-AI, "DeepSeek-V3 Technical Report", arXiv:2412.19437, 2024.
    """
    EP = np.asarray(ep, dtype=float)
    if model.moe is None:
        return np.zeros_like(EP)
    k = model.moe.top_k * model.padding
    copy = model.d_model * bytes_per_element  # one token's activations [bytes]
    E = np.asarray(pods, dtype=float)
    if np.any(E > 1):
        n = EP / E  # the group's chips in a pod
        inside = all_to_all_seconds(chip=chip, model=model, ep=n, y=y, mx=mx,
                                    bytes_per_element=bytes_per_element, folded=folded)  # fmt: skip
        across = k * copy * (EP - n) / EP / chip.dcn_bw
        return np.where(E > 1, np.maximum(inside * n / EP, across), inside)
    if not chip.is_gpu:
        spans = np.maximum(np.asarray(mx, dtype=float), 1.0)
        return k * copy * (EP - 1) / (4 * chip.ici_bw * spans)
    n = in_node(chip, EP, y, folded)
    nvlink = k * copy * (n - 1) / EP / chip.ici_bw
    remote = EP - n
    copies = np.minimum(k * remote / EP, remote / n)
    if model.moe.routed_nodes is not None:
        copies = np.minimum(copies, model.moe.routed_nodes)
    nic = copy * copies / chip.scaleout_bw
    return np.maximum(nvlink, nic)
