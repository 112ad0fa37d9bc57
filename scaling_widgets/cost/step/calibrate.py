"""Calibrate a profile from one measured step (MODEL.md §C.3), and read or write a profile as JSON.

The everyday workflow: measure one configuration on your cluster, calibrate, then predict the
others with the same software stack. ``calibrate`` scales how fast the stack runs, one factor k
for all of it: the matmul efficiency e_max and the link efficiencies by k, the memory-bound
bytes κ, κ_s and the per-collective latency by 1/k. Where the work goes (the overlaps, the
GEMM-size curve, the jitter) stays the profile's. k is found so that the measured layout's
predicted step equals the measurement.
"""

from __future__ import annotations

import dataclasses
import json
import math

from ..evaluate import evaluate
from ..refusals import refuse
from ..values import Cluster, Layout, Options, Workload
from .profiles import Profile, profile_of

FASTER = ("e_max", "link_ici", "link_nvlink", "link_nic", "link_dcn")  # scaled by k
SLOWER = ("kappa", "kappa_scores", "latency")  # scaled by 1/k
WORDS = ("selective", "measures")  # the profile's fields that are names: Profile checks them
SWITCHES = ("flash_attention", "pipeline_unsharded")  # and those that are true or false


def scaled(profile: Profile, k: float) -> Profile:
    """The profile running k times as fast in every rate it sets.

    Returns
    -------
    profile : Profile
        ``profile`` with e_max and the link efficiencies x k, κ, κ_s and the latency / k, named
        as calibrated.
    """
    changes = {name: getattr(profile, name) * k for name in FASTER}
    changes.update({name: getattr(profile, name) / k for name in SLOWER})
    return dataclasses.replace(profile, name=f"{profile.name} (calibrated)", **changes)


def calibrate(
    cluster: Cluster, workload: Workload, layout: Layout, options: Options, step_time: float
) -> Profile:
    """The profile (``options.profile``, else the chip's default, with ``options.stack`` and
    ``options.flash_attention``) scaled so that this layout's predicted step is ``step_time``
    seconds. Refuses a step the chips could not run at full matmul efficiency (e_max above 1).

    Returns
    -------
    profile : Profile
        The profile scaled by the one factor k that makes the predicted step ``step_time`` [s]
        (``scaled``).

    Examples
    --------
    >>> from scaling_widgets.presets import HARDWARE, MODELS
    >>> values = (Cluster(HARDWARE["tpu-v5p"], (16, 16, 16)),
    ...           Workload(MODELS["llama-2-13b"], 2**22, 4096), Layout(), Options(mfu=None))
    >>> profile = calibrate(*values, step_time=1.25)
    >>> options = dataclasses.replace(values[3], profile=profile)
    >>> round(float(evaluate(*values[:3], options).step_time), 6)
    1.25
    """
    base = profile_of(cluster.chip, options)  # the stack and the flash switch go into the profile
    predict = dataclasses.replace(
        options, mfu=None, measured_step_time=None, stack=None, flash_attention=None
    )

    def step(k: float) -> float:
        return float(
            evaluate(
                cluster, workload, layout, dataclasses.replace(predict, profile=scaled(base, k))
            ).step_time
        )

    if not (isinstance(step_time, (int, float)) and 0 < step_time < 1e30):
        raise refuse("measured_step_time", "a number of seconds > 0", repr(step_time))
    top = 1 / base.e_max  # the fastest the stack can run: every large GEMM at the chip's peak
    if step(top) > step_time:
        raise refuse(
            "measured_step_time",
            f"at least {step(top):.4g} s: faster would need matmuls above the chip's peak",
            f"{step_time:g}",
        )
    lo, hi = math.log(1e-6), math.log(top)  # the step falls as k grows: bisect on log k
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if step(math.exp(mid)) > step_time else (lo, mid)
    return scaled(base, math.exp((lo + hi) / 2))


def calibrate_memory(
    cluster: Cluster, workload: Workload, layout: Layout, options: Options, peak_bytes: float
) -> Profile:
    """The profile (with ``options.stack``) whose activations, working set and logits are scaled by
    one factor k so that this layout's predicted peak, as its stack reports it, is ``peak_bytes``
    (MODEL.md §E.2). The peak is linear in k; a peak below what the weights, gradients, optimizer
    state and buffers need alone is refused.

    Returns
    -------
    profile : Profile
        The profile with its ``activation_factor`` set to k, named as peak calibrated.

    Examples
    --------
    >>> from scaling_widgets.presets import HARDWARE, MODELS
    >>> values = (Cluster(HARDWARE["h100"], (1, 8)), Workload(MODELS["llama-3-8b"], 8 * 8192, 8192),
    ...           Layout(strategy="fsdp", remat="full"), Options(mfu=None))
    >>> profile = calibrate_memory(*values, peak_bytes=40e9)
    >>> calibrated = dataclasses.replace(values[3], profile=profile)
    >>> round(float(evaluate(*values[:3], calibrated).peak.reported) / 1e9, 3)
    40.0
    """
    base = profile_of(cluster.chip, options)

    def peak(k: float) -> float:
        scaled_options = dataclasses.replace(
            options,
            profile=dataclasses.replace(base, activation_factor=k),
            stack=None,
            flash_attention=None,
        )
        return float(evaluate(cluster, workload, layout, scaled_options).peak.reported)

    if not (isinstance(peak_bytes, (int, float)) and 0 < peak_bytes < 1e30):
        raise refuse("measured_peak", "a number of bytes > 0", repr(peak_bytes))
    fixed, one = peak(0.0), peak(1.0)
    if peak_bytes <= fixed:
        raise refuse(
            "measured_peak",
            f"above {fixed / 1e9:.4g} GB, what the weights, gradients, optimizer state and"
            " buffers alone take",
            f"{peak_bytes / 1e9:.4g} GB",
        )
    k = (peak_bytes - fixed) / (one - fixed)
    return dataclasses.replace(base, name=f"{base.name} (peak calibrated)", activation_factor=k)


def profile_to_json(profile: Profile) -> str:
    """A profile as JSON: every field by name (what ``profile_from_json`` reads back).

    Returns
    -------
    text : str
        A JSON object of the profile's fields, indented by two spaces.
    """
    return json.dumps(
        {f.name: getattr(profile, f.name) for f in dataclasses.fields(profile)}, indent=2
    )


def profile_from_json(text: str) -> Profile:
    """A profile from JSON: its fields by name, the missing ones generic; anything else refused.

    Returns
    -------
    profile : Profile
        The profile the JSON object describes, named "from JSON" unless it names itself.
    """
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as err:
        raise refuse(
            "profile", "a JSON object of profile fields", f"invalid JSON ({err})"
        ) from None
    fields = {f.name: f for f in dataclasses.fields(Profile)}
    if not isinstance(data, dict) or set(data) - set(fields):
        unknown = sorted(set(data) - set(fields)) if isinstance(data, dict) else type(data).__name__
        raise refuse("profile", f"a JSON object with the fields {', '.join(fields)}", f"{unknown}")
    for name, value in data.items():
        if name == "name" and not isinstance(value, str):
            raise refuse("profile name", "a string", repr(value))
        if name in SWITCHES and not isinstance(value, bool):
            raise refuse(f"profile {name}", "true or false", repr(value))
        number = (
            isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1e30
        )
        if name not in ("name", *SWITCHES, *WORDS) and not number:
            raise refuse(f"profile {name}", "a number >= 0 and < 1e30", repr(value))
    return Profile(**{"name": "from JSON", **data})
