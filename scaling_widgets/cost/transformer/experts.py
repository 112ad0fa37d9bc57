"""Expert parallelism (MODEL.md §D.2): each chip of an EP group holds E/EP of a MoE layer's experts,
and two all-to-alls a pass bring every token to its k experts and back.

The EP group is taken from the data axis X: EP of its chips split the experts, and the rest
(X/EP of them) hold copies that data parallelism keeps in step.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
from numpy.typing import ArrayLike

from ..cluster.chip import Chip
from ..cluster.mesh import subgroup_span
from .shapes import Model


def held_width(model: Model, ep: ArrayLike = 1) -> float | np.ndarray:
    """The MLP width one chip holds of a (MoE) layer before FSDP or TP: (E/EP + S)·F_e (F if
    dense).

    Returns
    -------
    width : float or np.ndarray
        The MLP width one chip holds of each (MoE) layer, of the shape of ``ep``.
    """
    if model.moe is None:
        return float(model.d_ff) * np.ones_like(np.asarray(ep, dtype=float))
    moe = model.moe
    return (moe.experts / np.asarray(ep, dtype=float) + moe.shared) * moe.d_ff


def routed_params(model: Model) -> float:
    """The routed experts' parameters, all layers: what EP divides (c·D·F_e each, MODEL.md §D.1).

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
    model : the model, for its MoE layers
    activation_bytes : A, bytes per activation element

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


def all_to_all(
    chip: Chip, model: Model, ep: ArrayLike
) -> Callable[[ArrayLike, ArrayLike, ArrayLike], float | np.ndarray]:
    """``all_to_all_seconds`` for a placement: seconds per token from the data axis X, the TP
    degree Y and the axes M_X that X spans.

    Returns
    -------
    seconds : callable
        ``seconds(x, y, mx)``: one all-to-all's seconds per token a chip sends, for an EP group
        taken from a data axis of X chips spanning M_X axes, with TP degree Y [s/token].
    """

    def seconds(x, y, mx):
        return all_to_all_seconds(
            chip=chip, model=model, ep=ep, y=y, mx=subgroup_span(size=ep, x=x, mx=mx)
        )

    return seconds


def all_to_all_seconds(
    *,
    chip: Chip,
    model: Model,
    ep: ArrayLike,
    y: ArrayLike = 1,
    mx: ArrayLike = 1,
    bytes_per_element: float = 2.0,
) -> float | np.ndarray:
    """Seconds one all-to-all takes per token a chip sends (MODEL.md §D.2): multiply by its tokens.

    Each token goes to k experts (k·CF with padding to a capacity factor): k·D·bytes leave the
    chip for the (1 − 1/EP) of them that live elsewhere.

    - TPU torus: an all-to-all over a ring of EP chips costs about a quarter of an all-gather
      of the same array, k·D·bytes·(EP − 1)/(4·W_ici·M), with M the axes the group spans.
    - GPU cluster: of the group, n = min(EP, node/Y) chips share a node. (n − 1)/EP of the copies
      cross NVLink; the rest cross the NIC, where a token goes once to each node that holds one of
      its experts, min(k·(EP − n)/EP, (EP − n)/n) copies, and at most the nodes node-limited
      routing allows (``MoE.routed_nodes``). The two links run at once. Across nodes,
      with Y = 1 and n = 8, this is the GPU chapter's T = 2·B·D·(Z − 8)/Z·min(8k/Z, 1)/W_node.

    Parameters
    ----------
    chip, model : the chip (its links, its node) and the model (k, CF, D, node-limited routing)
    ep : EP, the chips that split each MoE layer's experts
    y : Y, the tensor-parallel degree (GPUs: how many EP chips share a node)
    mx : M, the torus axes the EP group spans (TPU only)
    bytes_per_element : bytes of one activation element

    Returns
    -------
    seconds : float or np.ndarray
        One all-to-all's time per token a chip sends; 0 for a dense model [s/token].
    """
    EP = np.asarray(ep, dtype=float)
    if model.moe is None:
        return np.zeros_like(EP)
    k = model.moe.top_k * model.padding
    copy = model.d_model * bytes_per_element  # one token's activations [bytes]
    if not chip.is_gpu:
        spans = np.maximum(np.asarray(mx, dtype=float), 1.0)
        return k * copy * (EP - 1) / (4 * chip.ici_bw * spans)
    in_node = np.minimum(EP, np.maximum(chip.node_size // np.asarray(y), 1))
    nvlink = k * copy * (in_node - 1) / EP / chip.ici_bw
    remote = EP - in_node
    copies = np.minimum(k * remote / EP, remote / in_node)
    if model.moe.routed_nodes is not None:
        copies = np.minimum(copies, model.moe.routed_nodes)
    nic = copy * copies / chip.scaleout_bw
    return np.maximum(nvlink, nic)
