"""The memory verdict in three words, "fits", "tight" or "does not fit" (MODEL.md §E.5): the
predicted peak against the HBM a program may use, with the peak's own uncertainty.

The uncertainty is measured, never chosen: the mean |error| of the predicted peak over the sources
of measured peaks held out from the model's development, each source's mean counted once, and the
larger of its error when the model first met it and today's (docs/VALIDATION.md,
``python benchmarks/bench_memory.py``; a test holds this number to what that command computes).
A peak P is then read as lying in [P·(1 − u), P·(1 + u)]: it fits when the whole interval is
within the limit, does not fit when none of it is, and is tight otherwise.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

# u: the mean over held-out sources of each one's mean |error|, at first look or today, the larger
# (docs/VALIDATION.md, memory)
UNCERTAINTY = 0.140
VERDICTS = ("fits", "tight", "does not fit")


def fits(peak: ArrayLike, limit: ArrayLike, uncertainty: float = UNCERTAINTY) -> np.ndarray:
    """Whether a peak fits with its uncertainty: P·(1 + u) ≤ the limit.

    Parameters
    ----------
    peak : float or array_like
        P, the predicted peak per chip, reserved [bytes].
    limit : float or array_like
        The bytes a chip may use: the share of HBM allowed times the HBM a program may allocate
        [bytes].
    uncertainty : float, default UNCERTAINTY
        u, the peak's relative uncertainty.

    Returns
    -------
    fits : np.ndarray of bool
        True where even the peak's upper bound fits.

    References
    ----------
    .. [1] docs/MODEL.md §E.5 (the verdict) and docs/VALIDATION.md (the uncertainty).
    """
    return np.asarray(peak) * (1 + uncertainty) <= np.asarray(limit)


def verdict(peak: ArrayLike, limit: ArrayLike, uncertainty: float = UNCERTAINTY) -> np.ndarray:
    """ "fits" when P·(1 + u) ≤ the limit, "does not fit" when P·(1 − u) > it, else "tight".

    Parameters
    ----------
    peak : float or array_like
        P, the predicted peak per chip, reserved [bytes].
    limit : float or array_like
        The bytes a chip may use [bytes].
    uncertainty : float, default UNCERTAINTY
        u, the peak's relative uncertainty.

    Returns
    -------
    verdict : np.ndarray of str
        One of ``VERDICTS`` for each layout.

    References
    ----------
    .. [1] docs/MODEL.md §E.5 (the verdict) and docs/VALIDATION.md (the uncertainty).

    Examples
    --------
    >>> verdict([70e9, 90e9, 140e9], 100e9).tolist()
    ['fits', 'tight', 'does not fit']
    """
    over = np.asarray(peak) * (1 - uncertainty) > np.asarray(limit)
    return np.where(fits(peak, limit, uncertainty), "fits", np.where(over, "does not fit", "tight"))
