"""Calibrate a profile from one measured step (MODEL.md §C.3), and read or write a profile
as JSON.

The everyday workflow: measure one configuration on your cluster, calibrate, then predict the
others with the same software stack. A measured step moves the profile along one path, as far as
it must, so that the measured layout's predicted step equals the measurement:

- faster than predicted, first every rate by one factor k > 1 until the stack's kernels run at
  the microbenchmarks' rates (no share past 1); then what the stack controls, within its bounds
  (MODEL.md §F.2): its overlaps towards 1, its fixed costs and memory-bound bytes towards their
  least; then, past them, the chip's curves towards its peak: GEMMs and attention at the peak,
  memory-bound work and communication at no cost. Only a step faster than that, the layout's
  hardware FLOPs at the chip's peak plus its pipeline's idle, is refused;
- slower than predicted, every rate the profile sets by one factor k < 1 (its kernels, HBM and
  links slower, its latencies and fixed costs longer): the cluster runs slower than the stack's
  measured runs did.

The profile it returns says in ``calibration`` which numbers moved, from what to what.
"""

from __future__ import annotations

import dataclasses
import json
import math

from .evaluation.evaluate import evaluate
from .evaluation.step import profile_of
from .ground.refusals import refuse
from .stacks import BOUNDS
from .step.profiles import TAKEN_IN, Profile
from .values import Cluster, Layout, Options, Workload

OVERLAPS = ("o_tp", "o_dp", "o_dcn")  # towards 1
FIXED = ("layer_overhead", "step_overhead")  # towards 0
RATES = ("kernel_share", "hbm_efficiency", "link_ici", "link_nvlink", "link_nvls", "link_nic",
         "link_dcn")  # fmt: skip
COSTS = ("latency", "latency_nic", "layer_overhead", "step_overhead")  # slower: x 1/k
CURVES_UP = ("e_max", "attention_max", "attention_backward")  # past the stack: towards 1
CURVES_DOWN = (
    "g_half",
    "attention_half",
    "attention_head_half",
    "latency",
    "latency_nic",
    "kappa",
    "kappa_scores",
    "speed_spread",
)
# towards inf
FREE_LINKS = ("hbm_efficiency", "link_ici", "link_nvlink", "link_nvls", "link_nic", "link_dcn")
WORDS = (  # names
    "selective", "gradients", "gathered", "measures", "chip", "calibration", "overlaps", "hidden",
)  # fmt: skip
# the profile's booleans, read from its fields so that a new one is never left out
SWITCHES = tuple(f.name for f in dataclasses.fields(Profile) if f.type == "bool")
LEGACY = ("jitter",)  # fields of older profiles, read and ignored
FASTEST = 3.0  # the end of the path: matmuls at the peak, nothing else costs


def along(profile: Profile, u: float) -> Profile:
    """The profile at u on the calibration path (u = 0: itself). Below 0, every rate slower by
    k = e^u; from 0 to 1, every rate faster by k up to the stack's kernels at the microbenchmarks'
    rates (no rate past its physical share of 1); from 1 to 2, the stack's overlaps towards 1 and
    its fixed costs and memory-bound bytes towards their least; from 2 to 3, the chip's curves
    towards its peak and its other costs towards nothing.

    Parameters
    ----------
    profile : Profile
        The profile at the start of the path.
    u : float
        The position on the path, below 3 (``FASTEST``, the path's end); 0 is ``profile``.

    Returns
    -------
    profile : Profile
        ``profile`` moved to u.

    References
    ----------
    .. [1] docs/MODEL.md §C.3 (calibration) and §F.2 (the stack's levers and their bounds).
    """
    k = math.exp(u) if u < 0 else (1 / min(profile.kernel_share, 1.0)) ** min(u, 1.0)
    changes = {name: _capped(getattr(profile, name), k) for name in RATES}
    changes.update({name: getattr(profile, name) / k for name in COSTS})
    stage = dataclasses.replace(profile, **changes)
    if u <= 1:
        return stage
    w = min(u - 1, 1.0)
    best = {name: 1.0 for name in OVERLAPS}  # the stack's best, never worse than it is
    best.update({name: 0.0 for name in FIXED})
    best["kappa"] = min(BOUNDS["kappa"][0], stage.kappa)
    stage = dataclasses.replace(
        stage, **{name: _towards(getattr(stage, name), best[name], w) for name in best}
    )
    if u <= 2:
        return stage
    w, left = u - 2, FASTEST - u  # the chip's part, and what is left of its costs
    changes = {name: _towards(getattr(stage, name), 1.0, w) for name in CURVES_UP}
    changes.update({name: getattr(stage, name) * left for name in CURVES_DOWN})
    changes.update({name: getattr(stage, name) / left for name in FREE_LINKS})
    return dataclasses.replace(stage, **changes)


def _capped(rate: float, k: float) -> float:
    """A rate k times faster, never past a share of 1 (nor below what it was)."""
    return rate * k if k <= 1 else min(rate * k, max(rate, 1.0))


def _towards(value: float, target: float, w: float) -> float:
    """The way from ``value`` to ``target``, a share w of it."""
    return value + w * (target - value)


def calibrate(
    cluster: Cluster, workload: Workload, layout: Layout, options: Options, step_time: float
) -> Profile:
    """The profile (``options.profile``, else the chip's with ``options.stack``, and
    ``options.flash_attention``) moved along ``along``'s path until this layout's predicted step
    is ``step_time`` seconds. Refuses only a step faster than the path's end: the layout's
    hardware FLOPs at the chip's peak, with its pipeline's idle.

    Parameters
    ----------
    cluster : Cluster
        The chips of the measured layout.
    workload : Workload
        What the measured layout trains: the model, the batch B [tokens], its sequences.
    layout : Layout
        The measured layout.
    options : Options
        How the numbers are read: ``profile``, ``stack``, ``flash_attention`` and
        ``torch_compile`` set the profile to move (``profile_of``).
    step_time : float
        The measured step of the layout [s].

    Returns
    -------
    profile : Profile
        The calibrated profile, made for this chip, its ``calibration`` naming what moved.

    Raises
    ------
    InputError
        For a step that is not a number of seconds above 0, or faster than the path's end.

    References
    ----------
    .. [1] docs/MODEL.md §C.3 (profiles and calibration).

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
    predict = dataclasses.replace(options, mfu=None, measured_step_time=None, **TAKEN_IN)

    def step(u: float) -> float:
        moved = dataclasses.replace(predict, profile=along(base, u))
        return float(evaluate(cluster, workload, layout, moved).step_time)

    if not (isinstance(step_time, (int, float)) and 0 < step_time < 1e30):
        raise refuse("measured_step_time", "a number of seconds > 0", repr(step_time))
    end = FASTEST - 1e-9
    if step(end) > step_time:
        raise refuse(
            "measured_step_time",
            f"at least {step(end):.4g} s: faster would need matmuls above the chip's peak",
            f"{step_time:g}",
        )
    lo, hi = -50.0, end  # the step falls as u grows: bisect
    for _ in range(80):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if step(mid) > step_time else (lo, mid)
    calibrated = along(base, (lo + hi) / 2)
    return dataclasses.replace(
        calibrated,
        name=f"{base.name} (calibrated)",
        chip=cluster.chip.id or cluster.chip.name,
        calibration=_changes(base, calibrated, step_time),
    )


def _changes(before: Profile, after: Profile, step_time: float) -> str:
    """What calibration moved, "name=before->after" for fields that changed by more than 0.1 %,
    after the measured step it was calibrated on."""
    moved = [
        f"{f.name}={getattr(before, f.name):.4g}->{getattr(after, f.name):.4g}"
        for f in dataclasses.fields(Profile)
        if isinstance(getattr(before, f.name), float)
        and not math.isclose(getattr(before, f.name), getattr(after, f.name), rel_tol=1e-3)
    ]
    return "; ".join([f"measured_step_time={step_time:.4g}", *moved])


def calibrate_memory(
    cluster: Cluster, workload: Workload, layout: Layout, options: Options, peak_bytes: float
) -> Profile:
    """The profile (with ``options.stack``) whose activations, working set and logits are scaled by
    one factor k so that this layout's predicted peak, as its stack reports it, is ``peak_bytes``
    (MODEL.md §E.2). The peak is linear in k; a peak below what the weights, gradients, optimizer
    state and buffers need alone is refused.

    Parameters
    ----------
    cluster : Cluster
        The chips of the measured layout.
    workload : Workload
        What the measured layout trains: the model, the batch B [tokens], its sequences.
    layout : Layout
        The measured layout.
    options : Options
        How the numbers are read: ``profile``, ``stack``, ``flash_attention`` and
        ``torch_compile`` set the profile to scale (``profile_of``).
    peak_bytes : float
        The measured layout's peak memory per chip, as its stack reports it [bytes].

    Returns
    -------
    profile : Profile
        The profile with its ``activation_factor`` set to k, named as peak calibrated.

    Raises
    ------
    InputError
        For a peak that is not a number of bytes above 0, or not above what the weights,
        gradients, optimizer state and buffers take alone.

    References
    ----------
    .. [1] docs/MODEL.md §E.2 (calibration of the peak) and §E.1 (what the peak holds).

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
            **TAKEN_IN,
        )
        return float(evaluate(cluster, workload, layout, scaled_options).peak.reported)

    if not (isinstance(peak_bytes, (int, float)) and 0 < peak_bytes < 1e30):
        raise refuse("measured_peak", "a number of bytes > 0", repr(peak_bytes))
    fixed, one = peak(0.0), peak(1.0)
    if peak_bytes <= fixed:
        raise refuse(
            "measured_peak",
            f"above {fixed / 1e9:.4g} GB, what the weights, gradients, optimizer state,"
            " buffers and workspaces alone take",
            f"{peak_bytes / 1e9:.4g} GB",
        )
    if one <= fixed:  # the optimizer step's buffers set the peak, whatever the activations hold
        raise refuse(
            "measured_peak",
            "of a layout whose activations set its peak (this one's is the optimizer step's)",
            f"{peak_bytes / 1e9:.4g} GB",
        )
    k = (peak_bytes - fixed) / (one - fixed)
    return dataclasses.replace(base, name=f"{base.name} (peak calibrated)", activation_factor=k)


def profile_to_json(profile: Profile) -> str:
    """A profile as JSON: every field by name (what ``profile_from_json`` reads back).

    Parameters
    ----------
    profile : Profile
        The profile to write.

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

    Parameters
    ----------
    text : str
        A JSON object of profile fields (``profile_to_json``'s form).

    Returns
    -------
    profile : Profile
        The profile the JSON object describes, named "from JSON" unless it names itself.

    Raises
    ------
    InputError
        For text that is not JSON, not an object, or holds a field that is not a profile's or
        a value of the wrong kind.
    """
    try:
        data = json.loads(text)
    except (json.JSONDecodeError, RecursionError) as err:
        raise refuse(
            "profile", "a JSON object of profile fields", f"invalid JSON ({err})"
        ) from None
    fields = {f.name: f for f in dataclasses.fields(Profile)}
    if isinstance(data, dict):
        data = {name: value for name, value in data.items() if name not in LEGACY}
    if not isinstance(data, dict) or set(data) - set(fields):
        unknown = sorted(set(data) - set(fields)) if isinstance(data, dict) else type(data).__name__
        raise refuse("profile", f"a JSON object with the fields {', '.join(fields)}", f"{unknown}")
    for name, value in data.items():
        if name in ("name", "chip", "calibration", "overlaps", "hidden") and not isinstance(
            value, str
        ):
            raise refuse(f"profile {name}", "a string", repr(value))
        if name in SWITCHES and not isinstance(value, bool):
            raise refuse(f"profile {name}", "true or false", repr(value))
        number = (
            isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1e30
        )
        if name not in ("name", *SWITCHES, *WORDS) and not number:
            raise refuse(f"profile {name}", "a number >= 0 and < 1e30", repr(value))
    return Profile(**{"name": "from JSON", **data})
