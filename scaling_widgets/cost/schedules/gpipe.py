"""GPipe (Huang et al. 2019): every microbatch's forward pass, then every backward pass
(MODEL.md §A.6). Each stage idles (Z − 1)/m of the useful work and holds all m microbatches."""

NAME, LABEL, ORDER = "gpipe", "GPipe", 0
VIRTUAL_STAGES = (1,)


def bubble(*, stages, microbatches, virtual_stages):
    """(Z − 1)/m."""
    return (stages - 1) / microbatches


def in_flight(*, stage, stages, microbatches, virtual_stages):
    """All m: no backward pass starts before the last forward."""
    return microbatches + 0 * stage


def logits_in_flight(*, stages, microbatches):
    """All m, as the activations."""
    return microbatches


def passes(*, device, stages, microbatches, virtual_stages):
    """All forwards, then all backwards."""
    return [("F", j, device) for j in range(microbatches)] + [
        ("B", j, device) for j in range(microbatches)
    ]
