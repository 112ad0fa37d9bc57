"""FSDP and tensor parallelism together: a stage's chips split into X x Y, the weights sharded
over both (MODEL.md §A.3). Below ZeRO-3 the weights are whole on X: data parallelism with TP."""

from __future__ import annotations

import numpy as np

NAME, LABEL, ORDER = "fsdp+tp", "FSDP+TP", 3
ZERO = 3
ON = "x+y"
TRAFFIC = ("dp+tp", "fsdp+tp")


def critical_tokens_per_chip(
    *,
    alpha: float | np.ndarray,
    weights_per_compute: float | np.ndarray,
    mx: float | np.ndarray,
    my: float | np.ndarray,
    d_ff: float | np.ndarray,
) -> float | np.ndarray:
    """α²·r/(M_X·M_Y·F), at the split X_opt that balances the two axes."""
    return alpha**2 * weights_per_compute / (mx * my * d_ff)
