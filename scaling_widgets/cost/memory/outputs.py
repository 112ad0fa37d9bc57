"""The model outputs a training loop holds (MODEL.md §E.1): a Hugging Face model returns its
logits cast to fp32 and, with ``use_cache``, every layer's K and V; a loop that keeps its outputs
holds the step's through the backward and the optimizer step, and one that rebinds ``outputs =
model(**batch)`` also the last step's, until this step's forward returns."""

from __future__ import annotations

import numpy as np


def held_outputs(workload, Y, tokens, device, steps: int, not_kept) -> tuple:
    """The outputs of ``steps`` steps a loop holds on a device.

    An output is every layer's K and V, 2·K·H/TP at the activations' bytes a token of the
    device's layers, and on the output layer's device the logits cast to fp32
    (``logits.float()``). The step's own cache counts where the layers do not keep it already
    (``not_kept``); the last step's is held whole, at the loss only.

    Parameters
    ----------
    workload : Workload
        The model and the precision.
    Y : int or array_like
        TP, which splits the heads and the vocabulary.
    tokens : float or array_like
        A chip's tokens of one microbatch.
    device : tuple
        The device's layers, and its logits' bytes (none off the output layer's device).
    steps : int
        The steps' outputs held: 0, 1 or 2 (``Options.kv_caches_held``).
    not_kept : float or array_like
        The share of a returned cache the layers do not keep (``not_kept``).

    Returns
    -------
    in_backward : float or np.ndarray
        What is held in the backward and at the optimizer step [bytes].
    at_the_loss : np.ndarray or None
        What is held at this step's loss [bytes]; None where that cannot be the higher (one
        step's outputs or none: the backward holds all the loss does and more).
    """
    if steps == 0:
        return 0.0, None
    layers, logits = device
    model = workload.model
    cache = 2 * model.kv_heads * model.head_dim / Y * workload.precision.activation_bytes
    cache = cache * tokens * layers
    fp32_logits = np.where(np.asarray(logits) > 0, 4.0 * tokens * model.vocab / Y, 0.0)
    own = not_kept * cache
    return own + fp32_logits, (own + cache + fp32_logits if steps == 2 else None)


def not_kept(rule, chunk_layers) -> float | np.ndarray:
    """The share of a layer's K and V a recompute policy does not keep for the backward, over
    the layers it applies to: a cache the model returns holds them again.

    Parameters
    ----------
    rule : Policy
        The recompute policy (``recompute.policy``).
    chunk_layers : float or array_like
        A pipeline chunk's layers.

    Returns
    -------
    share : float or np.ndarray
        From 0 (K and V kept on every layer) to 1.
    """
    missing = len({"key", "value"} - rule.keeps) / 2
    return missing * rule.share(chunk_layers)


def at_the_loss(parts: dict, state: dict, transient: dict, held, keeps_grads: bool) -> dict:
    """The peak at this step's loss, where higher than ``parts``: the loop still holds the last
    step's outputs with this step's cache, before any layer's backward working set and, where
    the optimizer freed them (``zero_grad``, set to None), before any gradient.

    Parameters
    ----------
    parts : dict
        The device's peak parts so far: the backward's or the optimizer step's [bytes].
    state : dict
        Its weights, gradients, optimizer state and buffers [bytes].
    transient : dict
        Its backward's activations, working set, logits and outputs held [bytes].
    held : float or np.ndarray
        The outputs held at the loss (``held_outputs``) [bytes].
    keeps_grads : bool
        Whether the stack keeps its gradients between steps (Megatron-LM's, nanotron's buffers).

    Returns
    -------
    parts : dict
        The parts of the higher of the two [bytes].
    """
    grads = state["grads"] * float(keeps_grads)
    loss = dict(transient, working_set=0.0, outputs_held=held)
    total = sum(state.values()) - state["grads"] + grads + sum(loss.values())
    higher = total > sum(parts.values())
    out = {k: np.where(higher, loss.get(k, state.get(k, 0.0)), v) for k, v in parts.items()}
    out["grads"] = np.where(higher, grads, parts["grads"])
    return out
