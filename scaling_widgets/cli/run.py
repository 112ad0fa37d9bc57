"""The command line's work: parse, evaluate and print, each subcommand by the same path as the
panel (``__init__.main`` hands every command here but the top-level help).

Tier 11 of the package (``tests/test_tiers.py`` declares the order), the top but for the package's
face: it may import any other part.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import re
import shlex
import sys

from .. import catalog, fields
from ..cost import InputError, compare_strategies, evaluate
from ..cost.ground.refusals import refuse
from ..cost.search.layouts import HELD
from ..cost.search.map_axes import BATCHES, batch_axis, chip_axis, chip_range
from ..cost.search.plan import as_planned, chooses_layout, scenario_plan
from ..cost.step.profiles import TAKEN_IN
from ..cost.strategies import BEST
from ..fields import FIELDS
from ..text import report
from ..text.step import binds
from .options import ACTIONS
from .parser import build_parser

# What is refused without a field of its own, as the flag that set it.
OTHER_FLAGS = {"measured_peak": "--measured-peak-gb", "chips": "--chips", "dp": "--dp",
               "rank": "--rank"}  # fmt: skip


def _negatives_joined(argv: list[str]) -> list[str]:
    """``--batch -4M`` as ``--batch=-4M``: argparse would read "-4M" as a flag and say only
    "expected one argument"; joined, the flag's own check names what is allowed."""
    out = []
    for arg in argv:
        if out and out[-1].startswith("--") and "=" not in out[-1] and re.match(r"-[0-9.]", arg):
            out[-1] = f"{out[-1]}={arg}"
        else:
            out.append(arg)
    return out


def run(argv: list) -> int:
    """``main``'s work for a command: parse, evaluate and print.

    Parameters
    ----------
    argv : list of str
        The arguments after the program's name.

    Returns
    -------
    status : int
        As ``main`` returns it (and exits).
    """
    argv = _negatives_joined(list(argv))
    parser = build_parser(argv)
    args = parser.parse_args(argv)
    typed = {k: v for k, v in vars(args).items() if k != "command" and k not in ACTIONS}
    from_file = getattr(args, "scenario", None) is not None
    try:
        if args.command == "demo":
            from ..demo import serve  # Voila loads only for the demo

            return serve(
                port=args.port,
                open_browser=not args.no_browser,
                cull_after=args.cull_after,
                theme=args.theme,
                max_kernels=args.max_kernels,
                token=not args.no_token,
                warm=args.warm,
            )
        if args.command == "compare":
            return _compare(args)
        start = (
            fields.from_json(catalog.read_text(args.scenario)) if from_file else fields.defaults()
        )
        if getattr(args, "config", None) is not None:
            start = {**start, **_from_config(args, typed)}
            from_file = True
        given = fields.from_flags(typed, start)
        state = fields.given_by_hand(start, given)
        if from_file:  # flags over a scenario held: what they leave impossible, mended
            state.update(_mended(start, given))
        if state["model"] is None:
            raise ValueError("one of --model, --model-file (or --scenario) is required")
        if state["batch"] is None and args.command != "map":
            raise ValueError("--batch is required, such as --batch 4M")
        run = {"plan": _plan, "export": _export, "map": _map}.get(args.command, _estimate)
        return run(args, state, given)
    except InputError as err:
        held = from_file or getattr(args, "config", None) is not None  # a file's key keeps its name
        flag = _flag(err.field, given=err.field in typed or not held)
        parser.exit(2, f"scaling-widgets {args.command}: error: {err.named(flag)}\n")
    except ValueError as err:
        parser.exit(2, f"scaling-widgets {args.command}: error: {err}\n")
    except BrokenPipeError:  # the reader went away (| head): say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _mended(start: dict, given: dict) -> dict:
    """The fields the flags leave impossible in the scenario they change, mended as the panel
    mends them (``fields.mended``); what changed said on stderr."""
    changes, said = fields.mended(start, given)
    if said:
        print(f"note: {said}", file=sys.stderr)
    return {name: value for name, value in changes.items() if name not in given}


def _compare(args) -> int:
    """Two to four saved scenarios side by side (``text/compare.py``)."""
    from pathlib import Path  # here: pathlib's import is 3 ms of every start

    from ..text.compare import as_csv, as_text, comparison  # compare's own, here

    if not 2 <= len(args.scenarios) <= 4:
        raise ValueError(f"compare takes 2 to 4 scenarios; got {len(args.scenarios)}")
    estimates = []
    for path in args.scenarios:
        try:
            state = fields.checked(fields.from_json(catalog.read_text(path)))
        except ValueError as err:
            raise ValueError(f"{path}: {err}") from None
        estimates.append(evaluate(*fields.values(state)))
    table = comparison(estimates, [Path(p).stem for p in args.scenarios])
    text = json.dumps(table, indent=2) if args.json else as_csv(table) if args.csv else None
    print(text if text is not None else as_text(table), end="" if args.csv else "\n")
    return 0


def _from_config(args, typed: dict) -> dict:
    """The fields a launch file sets (``--config``), on the chip and GPUs the flags give; what it
    approximates said on stderr, what it ignores too with ``--verbose``."""
    named = getattr(typed.get("slice_shape"), "chip", None)  # --mesh v5p-512 names its chip
    hardware = typed.get("hardware") or typed.get("hardware:--hardware-file") or named
    if hardware is None:
        raise refuse("hardware", "given with --config: a launch file does not name its chips", None)
    chip = fields.coerced({"hardware": hardware})
    given = fields.from_flags({k: v for k, v in typed.items() if k.startswith("model")}, {})
    # the file's chips in all: a pod's (--chips, or --mesh's slice) times the pods
    chips = typed.get("slice_shape:--chips")
    if chips is None and typed.get("slice_shape") is not None:
        chips = math.prod(typed["slice_shape"])
    chips = None if chips is None else chips * typed.get("pods", 1)
    from ..launch import read_config  # here: the readers' parsers load only for --config

    config, read = read_config(
        args.config,
        chip=chip["hardware"],
        chips=chips,
        pods=typed.get("pods"),
        model=given.get("model"),
    )
    for note in read.notes:
        print(f"note: {note}", file=sys.stderr)
    if read.ignored:  # one note: the keys read and left, none of which changes the cost
        shown = read.ignored if args.verbose else read.ignored[:6]
        more = "" if len(shown) == len(read.ignored) else f", and {len(read.ignored) - 6} more"
        print(f"ignored (no cost): {', '.join(shown)}{more}", file=sys.stderr)
    return config


def _export(args, state: dict, given: dict) -> int:
    """The layout as ``--to``'s launch file: printed, or written to ``--output``."""
    from ..launch import write_config  # here: the writers load only for --to

    state = fields.checked(state, tuple(given))
    values, said = _layout_values(args, fields.values(state), given)
    if said is not None:
        print(f"note: {said}", file=sys.stderr)
    text = write_config(args.to, evaluate(*values))
    if getattr(args, "output", None) is None:
        print(text, end="")
    else:
        _write(args.output, text)
    return 0


def _flag(field: str, given: bool) -> str:
    """The flag of a field the user typed; a field read from a saved scenario keeps its name."""
    if field in OTHER_FLAGS:
        return OTHER_FLAGS[field]
    if field in FIELDS and FIELDS[field].flag is not None and given:
        return FIELDS[field].flag
    return field


def _layout_values(args, values: tuple, given: dict) -> tuple:
    """The four values estimate and export evaluate, and a line on where their layout comes from
    (None: the user's): the user's own layout (flags, a saved scenario, a launch file, a measured
    peak), else the plan's first row, else, where the plan has none, the defaults' layout."""
    if chooses_layout(given) or any(
        hasattr(args, f) for f in ("scenario", "config", "measured_peak_gb")
    ):
        return values, None
    try:
        ranked = scenario_plan(values, given)
    except ValueError as err:  # none fits: the defaults' layout shows by how much
        return values, f"Layout: the defaults' own, as the plan has none: {err}."
    return ranked.values(0), _planned(ranked)


def _estimate(args, state: dict, given: dict) -> int:
    try:
        state = fields.checked(state, tuple(given))
        values = fields.values(state)
        _used(values, state, given)
        values, said = _layout_values(args, values, given)
        if (
            getattr(args, "save_profile", None) is not None
            or getattr(args, "measured_peak_gb", None) is not None
        ):
            values = _calibrated(values, args)
        chosen = evaluate(*values)
        chosen = chosen if said is None else as_planned(chosen, given)
    except InputError as err:
        if err.field == "x" and getattr(args, "x:--dp", None) is not None:
            raise _in_dp_terms(state, getattr(args, "x:--dp")) from None
        if err.field == "slice_shape" and getattr(args, "slice_shape:--chips", None) is not None:
            raise _in_chips(state, getattr(args, "slice_shape:--chips")) from None
        raise
    if getattr(args, "trace", None) is not None:
        from ..cost.views.trace import step_trace  # here: the views load only for --trace (4 ms)

        _write(args.trace, json.dumps(step_trace(chosen)))
    # each strategy's own layout, evaluated once: the layout stands for its own strategy, but
    # for the best split's, whose own split the report shows beside it
    known = {} if chosen.strategy == BEST else {chosen.strategy: chosen}
    defaults = compare_strategies(*values, known=known)
    best = defaults[BEST] if not isinstance(defaults[BEST], Exception) else None
    others = {**defaults, chosen.strategy: chosen}  # its own row is the layout, as the panel's
    out = report.record(chosen, others) if args.json else report.text(chosen, others, best)
    if said is not None:  # where the layout came from
        out = {**out, "layout_from": said} if args.json else f"{said}\n{out}"
    print(json.dumps(out, indent=2) if args.json else out)
    return 0


def _planned(ranked) -> str:
    """Where estimate's layout came from when the user chose none."""
    return (
        f"Layout: the plan's first of {len(ranked):,} that fit (plan, same flags): the fastest, or"
        " of those the model cannot tell from it, the farthest inside its limits. Give"
        " --strategy, --fsdp, --tp or --pp for a layout of your own."
    )


def _in_chips(state: dict, chips: int) -> InputError:
    """A GPU slice refused when --chips gave it: the most GPUs the preset's cluster holds."""
    chip = catalog.hardware(state["hardware"])
    nodes, per_node = chip.pod_shape
    return refuse(
        "chips",
        f"at most {nodes * per_node:,} GPUs of {chip.name} ({nodes:,} nodes of {per_node})",
        chips,
    )


def _in_dp_terms(state: dict, dp: int) -> InputError:
    """A data axis refused when --dp gave it: in the frameworks' count, DP x CP x TP x PP = the
    chips of a pod, with the DP that would run."""
    chips = math.prod(fields.values(fields.filled(fields.coerced(state)))[0].slice_shape)
    cp, tp, pp = (state.get(name) or 1 for name in ("cp", "y", "z"))
    others = cp * tp * pp
    would = f"DP = {chips // others:,} here" if chips % others == 0 else "no DP does with these"
    return refuse(
        "dp",
        f"such that DP x CP x TP x PP is the {chips:,} chips of a pod, as Megatron-LM and"
        f" torchtitan count (this tool's --fsdp is DP x CP): {would}",
        f"DP {dp} x CP {cp} x TP {tp} x PP {pp} = {dp * others:,}",
    )


def _used(values: tuple, state: dict, given: dict) -> None:
    """A flag given is used, or refused by name: never silently ignored."""
    for name in given:
        field = FIELDS[name]
        if field.value is None or field.get(values) is not None or state[name] is None:
            continue
        raise ValueError(
            f"{field.flag} {state[name]} is not used: the scenario's axis roles set the groups"
        )


def _calibrated(values, args):
    """--measured-peak-gb G, and --save-profile FILE with --measured-step-time S and/or G: the
    profile that predicts S and G for this layout (saved with --save-profile); the values read
    with it, as the panel reads a measured peak."""
    from ..cost.calibrate import calibrate, calibrate_memory, profile_to_json  # their own, here

    save, peak_gb = getattr(args, "save_profile", None), getattr(args, "measured_peak_gb", None)
    cluster, workload, layout, options = values
    if save is not None and options.measured_step_time is None and peak_gb is None:
        raise ValueError(
            "--save-profile needs --measured-step-time or --measured-peak-gb: what it calibrates on"
        )
    if save is not None and options.measured_step_time is not None:
        profile = calibrate(*values, step_time=options.measured_step_time)
        options = dataclasses.replace(options, profile=profile, **TAKEN_IN)
    if peak_gb is not None:
        profile = calibrate_memory(cluster, workload, layout, options, peak_bytes=peak_gb * 1e9)
        options = dataclasses.replace(options, profile=profile, **TAKEN_IN)
    if save is not None:
        _write(save, profile_to_json(options.profile) + "\n")
    return cluster, workload, layout, options


def _layout_of(flags: str, state: dict):
    """The layout ``--rank-of``'s estimate flags give over the plan's scenario, evaluated."""
    try:
        words = shlex.split(flags)
    except ValueError as err:
        raise ValueError(
            f"--rank-of must be estimate flags in quotes; got {flags!r} ({err})"
        ) from None
    parsed, unknown = build_parser(["estimate"]).parse_known_args(["estimate", *words])
    if unknown:
        raise ValueError(f"--rank-of takes estimate's flags; {' '.join(unknown)} is none of them")
    typed = {k: v for k, v in vars(parsed).items() if k != "command" and k not in ACTIONS}
    given = fields.from_flags(typed, state)
    for name in given:  # the plan's scenario stands: only the layout is the flags'
        value = FIELDS[name].value
        if value is not None and not value.startswith("layout."):
            flag = FIELDS[name].flag
            raise ValueError(f"--rank-of takes the layout's flags; give {flag} to the plan itself")
    chosen = fields.checked(fields.given_by_hand(state, given), tuple(given))
    return evaluate(*fields.values(chosen))


# the stack that runs each framework's file: what a plan for it ranks by
FRAMEWORK_STACKS = {"torchtitan": "fsdp2", "megatron": "megatron-lm", "maxtext": "maxtext"}


def _sorted_by(sort: str, state: dict) -> str:
    """What a plan ranks by for ``--sort``: the step, or the run's wall clock, which its cost and
    energy follow on one cluster; refused where the run is not known."""
    if sort == "step":
        return "step"
    if state.get("tokens") is None:
        raise ValueError(f"--sort {sort} needs the run: give --tokens, such as --tokens 15T")
    if sort == "cost" and state.get("price_per_chip_hour") is None:
        raise ValueError("--sort cost needs a price: give --price-per-chip-hour, such as 2.5")
    return "wall"


def _plan(args, state: dict, given: dict) -> int:
    export_to = getattr(args, "export_to", None)
    if export_to is not None and "stack" not in given:  # rank what that framework runs
        state = {**state, "stack": FRAMEWORK_STACKS[export_to]}
    limits = {name: getattr(args, name) for name in ("max_tp", "max_pp") if hasattr(args, name)}
    values = fields.values(fields.filled(fields.coerced(state)))
    ranked = scenario_plan(values, given, **limits, rank_by=_sorted_by(args.rank_by, state))
    if args.rank_by == "energy" and len(ranked) and ranked.estimate(0).run.energy is None:
        raise ValueError("--sort energy needs the chip's power: give --chip-power, such as 700")
    if getattr(args, "rank_of", None) is not None:
        if args.rank_by != "step":
            raise ValueError(f"--rank-of ranks by the step: drop --sort {args.rank_by}")
        if not len(ranked):
            raise ValueError("no layout of this plan fits: there is nothing to rank against")
        from ..text.rank_of import rank_of  # --rank-of's own, here

        print(rank_of(ranked, _layout_of(args.rank_of, state)))
        return 0
    if export_to is not None:
        if args.rank > len(ranked):
            raise refuse("rank", f"at most the {len(ranked):,} layouts that fit", args.rank)
        from ..launch import write_config  # here: the writers load only for --export-to

        print(write_config(args.export_to, ranked.estimate(args.rank - 1)), end="")
        return 0
    top = range(min(args.top, len(ranked)))
    if args.json:
        best = [ranked.estimate(r) for r in top]
        layouts = [
            {
                **report.record(e),
                "binds": binds(e),
                "ties_best": r > 0 and bool(ranked.tied[ranked.order[r]]),
            }
            for r, e in enumerate(best)
        ]
        print(
            json.dumps(
                {"evaluated": len(ranked.step_time), "fit": len(ranked), "layouts": layouts},
                indent=2,
            )
        )
    else:
        print(report.plan_table(ranked, top))
    return 0


# the map's axes, as the flags that set them
AXIS_FLAGS = {
    "batches": "--batches",
    "chips": "--chip-range",
    "rows": "--cells",
    "columns": "--cells",
}


def _map(args, state: dict, given: dict) -> int:
    """The strategy map of the scenario's model, chip and options (``text/strategy_map.py``)."""
    from ..cost.search.strategy_map import map_keywords, strategy_map  # the map's own, here
    from ..text.strategy_map import as_record
    from ..text.strategy_map import as_text as map_text

    state = {**state, "batch": state["batch"] or 2**20}  # a column's; the map sets each
    keywords = map_keywords(*fields.values(fields.filled(fields.coerced(state))))
    keywords.update({name: given.get(name) for name in HELD})  # what is not given is searched
    chip, rows, columns = keywords["chip"], *args.cells
    try:
        batches = batch_axis(keywords["seq_len"], *getattr(args, "batches", BATCHES), columns)
        chips = chip_axis(chip, *getattr(args, "chip_range", chip_range(chip)), rows)
    except InputError as err:  # named by the flag that set it
        flag = AXIS_FLAGS.get(err.field)
        raise err if flag is None else ValueError(err.named(flag)) from None
    limits = {name: getattr(args, name) for name in ("max_tp", "max_pp") if hasattr(args, name)}
    m = strategy_map(**keywords, **limits, batches=batches, chips=chips)
    if args.json:
        print(json.dumps(as_record(m), indent=2))
    else:
        title = (
            f"{keywords['model'].name} on the {chip.name}: the best layout at each batch and count"
        )
        print(map_text(m, f"{title} ({m.evaluated:,} layouts evaluated)"))
    return 0


def _write(path: str, text: str) -> None:
    """A file the user named, written whole (open, not pathlib: pathlib's import is 3 ms of a
    start)."""
    with open(path, "w", encoding="utf-8") as file:
        file.write(text)
