"""One predicted step as a trace in the Trace Event Format, which Perfetto and chrome://tracing
open (MODEL.md §C.5): a process per pipeline stage, with a compute track and a communication
track. The schedule's passes (``step/timeline.py``) are scaled so that the pipeline lasts what the
step's per-microbatch terms and its bubble take; each pass's exposed communication follows its
compute; the idle time is drawn as "idle"; after the pipeline drains, every stage reduces its
gradients and runs the optimizer. Each stage's events add up to the predicted step.
"""

from __future__ import annotations

import numpy as np

from ..ground.refusals import refuse
from ..step.timeline import timeline

# what a step does once, after its pipeline drains: on the communication track, then compute
TAIL = (("dp_exposed", "communication"), ("dcn_exposed", "communication"), ("optimizer", "compute"))
# the exposed communication of a microbatch's pass, beside its compute
PER_PASS = ("tp_exposed", "ep_exposed", "cp_exposed", "fsdp_exposed", "stage_to_stage")
NAMES = {"F": "forward", "B": "backward", "W": "weight gradients"}
US = 1e6  # the format counts microseconds


def step_trace(e) -> dict:
    """The step of one evaluated layout ``e`` as a trace: ``{"traceEvents": [...]}``.

    Parameters
    ----------
    e : Estimate
        One evaluated layout: its step, predicted (with ``step_breakdown``) or at an MFU given
        or measured.

    Returns
    -------
    trace : dict
        The Trace Event Format's object: "traceEvents", each event's time and duration in
        microseconds, and "displayTimeUnit".

    Raises
    ------
    InputError
        For arrays of layouts (one layout's trace at a time), or more passes than a picture walks.
    """
    if np.ndim(e.step_time):
        raise refuse("layout", "one layout (a trace is one step's)", "an array of them")
    terms = e.step_breakdown or {"compute": e.compute_time, "communication": e.comm_time}
    terms = {name: float(value) for name, value in terms.items()}
    step = float(e.step_time)
    tail = [(name, track, terms.get(name, 0.0)) for name, track in TAIL]
    pipeline = step - sum(seconds for _, _, seconds in tail)
    exposed = sum(terms.get(name, 0.0) for name in PER_PASS) + terms.get("communication", 0.0)
    busy = max(pipeline - terms.get("bubble", 0.0), 1e-300)
    share = min(exposed / busy, 1.0)  # of each pass, its exposed communication
    Z, v = int(e.z), int(e.virtual_stages) if int(e.z) > 1 else 1
    t = timeline(
        schedule=str(e.schedule),
        stages=Z,
        microbatches=int(e.microbatches),
        virtual_stages=v,
        combined=bool(e.layout.ep_overlap),
    )
    scale = pipeline / float(t.end.max())  # seconds a slot
    events = _names(Z)
    for d in range(Z):
        mine = np.flatnonzero(t.device == d)
        at = 0.0
        for i in mine[np.argsort(t.start[mine], kind="stable")]:
            start, end = float(t.start[i]) * scale, float(t.end[i]) * scale
            if start > at:
                events.append(_event("idle", d, "compute", at, start - at))
            compute = (end - start) * (1 - share)
            name = f"{NAMES[str(t.kind[i])]} {int(t.microbatch[i])}"
            events.append(_event(name, d, "compute", start, compute))
            events.append(
                _event(
                    f"{name}: exposed", d, "communication", start + compute, end - start - compute
                )
            )
            at = end
        if pipeline > at:
            events.append(_event("idle", d, "compute", at, pipeline - at))
        at = pipeline
        for name, track, seconds in tail:
            events.append(_event(name.removesuffix("_exposed"), d, track, at, seconds))
            at += seconds
    return {"traceEvents": events, "displayTimeUnit": "ms"}


def _event(name: str, stage: int, track: str, start: float, seconds: float) -> dict:
    """A complete event ("X") of ``seconds`` from ``start`` [s] on a stage's track."""
    return {
        "name": name,
        "ph": "X",
        "pid": stage,
        "tid": track,
        "ts": start * US,
        "dur": max(seconds, 0.0) * US,
    }


def _names(stages: int) -> list[dict]:
    """Metadata: each process named for its stage, in order."""
    out = []
    for d in range(stages):
        out.append({"name": "process_name", "ph": "M", "pid": d, "args": {"name": f"stage {d}"}})
        out.append({"name": "process_sort_index", "ph": "M", "pid": d, "args": {"sort_index": d}})
    return out
