"""Where one layout ranks in a plan, and which terms make the layouts above it faster (MODEL.md
§C, §F.3): ``plan --rank-of``'s answer."""

from __future__ import annotations

from ..cost import Estimate
from . import units
from .explain import layout_name
from .step import TERM_NAMES

ABOVE = 3  # the layouts above it that are compared term by term, the best first
SHOWN = 4  # the terms named for each, the largest differences first


def rank_of(ranked, e: Estimate) -> str:
    """Where ``e`` ranks among the plan's layouts that fit (``Plan.place``), whether it ties the
    fastest, and for the best ``ABOVE`` layouts, the terms of the step that make each faster.

    Parameters
    ----------
    ranked : Plan
        The plan: every layout evaluated, those that fit ranked best first.
    e : Estimate
        The layout asked about, evaluated on the plan's scenario.

    Returns
    -------
    text : str
        A line on the layout, a line on its rank, a line per layout above it.
    """
    t, fastest = float(e.step_time), float(ranked.step_time[ranked.order].min())
    rank = ranked.place(e)
    said = str(e.verdict)  # the estimate's word; the plan ranks only layouts that fit
    fits = (
        "fits"
        if bool(e.fits)
        else f"{'is ' * (said == 'tight')}{said} (the plan ranks only"
        " layouts that fit, with the peak's uncertainty)"
    )
    lines = [f"Your layout: {layout_name(e)}; step {units.seconds(t)}{_span(e)}; it {fits}."]
    tie = rank > 1 and t <= ranked.band * fastest  # a tight layout ties too, if the least safe
    lines.append(
        f"It ranks {rank:,} of the {len(ranked):,} layouts that fit"
        + (
            ", in the tie with the fastest, which the model cannot order: the safer first"
            if tie
            else ""
        )
        + ("." if rank > 1 else ": none comes before it.")
    )
    for r in range(min(ABOVE, rank - 1)):
        lines.append(_faster(r, ranked.estimate(r), e))
    return "\n".join(lines)


def _span(e: Estimate) -> str:
    if e.step_interval is None:
        return ""
    low, high = (units.seconds(float(x)) for x in e.step_interval)
    return f" (80% interval {low} to {high})"


def _faster(r: int, other: Estimate, e: Estimate) -> str:
    """Rank r + 1's layout and the terms by which its step is shorter (or longer) than ``e``'s."""
    head = f"  #{r + 1} {layout_name(other)}: {units.seconds(float(other.step_time))}"
    if e.step_breakdown is None or other.step_breakdown is None:
        return head
    gaps = {k: float(e.step_breakdown[k]) - float(other.step_breakdown[k]) for k in TERM_NAMES}
    largest = sorted(gaps.items(), key=lambda item: -abs(item[1]))[:SHOWN]
    said = [f"{TERM_NAMES[k]} {_signed(-gap)}" for k, gap in largest if abs(gap) > 0]
    return head + (f"; against yours: {', '.join(said)}" if said else "")


def _signed(seconds: float) -> str:
    return ("+" if seconds > 0 else "-") + units.seconds(abs(seconds))
