"""1F1B (PipeDream-Flush; Narayanan et al. 2021): after a warm-up of forwards, each stage
alternates one forward and one backward pass (MODEL.md §A.6, §B.4). It idles as GPipe does,
(Z − 1)/m, but stage r holds only min(Z − r, m) microbatches."""

import numpy as np

NAME, LABEL, ORDER = "1f1b", "1F1B", 1
VIRTUAL_STAGES = (1,)


def bubble(*, stages, microbatches, virtual_stages):
    """(Z − 1)/m."""
    return (stages - 1) / microbatches


def in_flight(*, stage, stages, microbatches, virtual_stages):
    """min(Z − r, m): backward passes start after Z − r forwards."""
    return np.minimum(stages - stage, microbatches)


def logits_in_flight(*, stages, microbatches):
    """One: the last stage runs each microbatch's backward pass right after its forward."""
    return 1.0 + 0 * microbatches


def passes(*, device, stages, microbatches, virtual_stages):
    """Z − d − 1 forwards, then one forward and one backward, then the last backwards."""
    forwards = [("F", j, device) for j in range(microbatches)]
    backwards = [("B", j, device) for j in range(microbatches)]
    return alternate(forwards, backwards, warmup=min(stages - device - 1, microbatches))


def alternate(forwards: list, backwards: list, warmup: int) -> list:
    """``warmup`` forwards, then one forward and one backward in turn, then the backwards left."""
    order = forwards[:warmup]
    for f, b in zip(forwards[warmup:], backwards):
        order += [f, b]
    return order + backwards[len(forwards) - warmup :]
