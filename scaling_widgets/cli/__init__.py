"""The command line: ``scaling-widgets estimate``, ``plan`` and ``demo``.

``estimate`` builds the four values the cost model takes (cluster, workload, layout, options)
from the flags, or reads them from a saved scenario (``--scenario FILE.json``), and evaluates
them by the same path as the panel. Bad input prints one line naming the option, the value and
what is allowed, and exits 2. A closed pipe (``| head``) ends quietly.
"""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from pathlib import Path

from .. import catalog
from ..cost import Cluster, Exactness, InputError, Layout, Options, Workload, compare_strategies, evaluate, plan
from ..cost.calibrate import calibrate, calibrate_memory, profile_from_json, profile_to_json
from ..cost.nodes import gpu_slice
from ..text import explain, report
from .options import build_parser, parser_default

# The cost model's field names as the flags that set them, for its error messages.
FLAGS = {
    "x": "--fsdp", "y": "--tp", "z": "--pp", "slice_shape": "--mesh", "seq_len": "--seq-len",
    "virtual_stages": "--virtual-stages", "microbatch_seqs": "--microbatch-seqs",
    "measured_step_time": "--measured-step-time", "overhead_bytes": "--overhead-gb", "fits_below": "--fits-below",
    "sequence_parallel": "--sequence-parallel", "attention_flops": "--attention-flops", "cp_kind": "--cp-kind",
    "measured_peak": "--measured-peak-gb",
}  # fmt: skip


def main(argv=None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "demo":
            from ..demo import serve  # Voila loads only for the demo

            return serve(port=args.port, open_browser=not args.no_browser, cull_after=args.cull_after, theme=args.theme)
        if args.command == "plan":
            return _plan(args, parser)
        return _estimate(args, parser)
    except InputError as err:
        flag = err.field if args.command == "estimate" and args.scenario else _flag(err.field)
        parser.exit(2, f"scaling-widgets {args.command}: error: {err.named(flag)}\n")
    except ValueError as err:
        parser.exit(2, f"scaling-widgets {args.command}: error: {err}\n")
    except BrokenPipeError:  # the reader went away (| head): say nothing more
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1


def _flag(field: str) -> str:
    return FLAGS.get(field, "--" + field.replace("_", "-"))


def _estimate(args, parser) -> int:
    if args.scenario is not None:
        values = _scenario_values(args, parser)
    else:
        values = _values(args)
    if args.save_profile is not None or args.measured_peak_gb is not None:
        values = _calibrated(values, args)
    chosen = evaluate(*values)
    others = compare_strategies(*values)
    best = others["fsdp+tp"] if not isinstance(others["fsdp+tp"], Exception) else None
    out = report.record(chosen, others) if args.json else report.text(chosen, others, best)
    print(json.dumps(out, indent=2) if args.json else out)
    return 0


def _calibrated(values, args):
    """--measured-peak-gb G, and --save-profile FILE with --measured-step-time S and/or G: the
    profile that predicts S and G for this layout (saved with --save-profile); the values read
    with it, as the panel reads a measured peak."""
    if args.save_profile is not None and args.measured_step_time is None and args.measured_peak_gb is None:
        raise ValueError("--save-profile needs --measured-step-time or --measured-peak-gb: what it calibrates on")
    cluster, workload, layout, options = values
    if args.save_profile is not None and args.measured_step_time is not None:
        profile = calibrate(*values, step_time=args.measured_step_time)
        options = dataclasses.replace(options, profile=profile, stack=None, flash_attention=None)
    if args.measured_peak_gb is not None:
        profile = calibrate_memory(cluster, workload, layout, options, peak_bytes=args.measured_peak_gb * 1e9)
        options = dataclasses.replace(options, profile=profile, stack=None, flash_attention=None)
    if args.save_profile is not None:
        Path(args.save_profile).write_text(profile_to_json(options.profile) + "\n")
    return cluster, workload, layout, options


def _profile(args):
    """--profile FILE: a profile saved by --save-profile (or written by hand); None: the chip's."""
    return None if args.profile is None else profile_from_json(catalog.read_text(args.profile))


def _flash(args):
    """--flash-attention on|off: True or False; None (absent): the stack's."""
    return None if args.flash_attention is None else args.flash_attention == "on"


def _scenario_values(args, parser):
    """The values of a saved scenario; no other option may be given beside it."""
    given = [a for a, v in vars(args).items() if a not in ("command", "scenario", "json", "profile", "save_profile")
             and v != parser_default(
        parser, a)]  # fmt: skip
    if given:
        raise ValueError(f"give --scenario alone (with --json if wanted); got --{given[0].replace('_', '-')} too")
    # A scenario's own MFU, or its measured step, says how it is read (the panel's choice).
    from ..widgets.scenario import Scenario  # traitlets and the widget layer load only for this

    cluster, workload, layout, options = Scenario.from_json(catalog.read_text(args.scenario)).values()
    return cluster, workload, layout, dataclasses.replace(options, profile=_profile(args))


def _chip_and_model(args):
    chip = (
        catalog.chip_from_json(args.hardware_file)
        if args.hardware_file is not None
        else catalog.hardware(args.hardware)
    )
    model = catalog.model_from_json(args.model_file) if args.model_file is not None else catalog.model(args.model)
    return chip, model


def _required(args) -> None:
    if args.model is None and args.model_file is None:
        raise ValueError("one of --model, --model-file (or --scenario) is required")
    if args.batch is None:
        raise ValueError("--batch is required, such as --batch 3M")


def _values(args):
    """The cluster, workload, layout and options the flags describe."""
    _required(args)
    chip, model = _chip_and_model(args)
    exact = Exactness(
        ring_factor=args.ring_factor, halve_without_wrap=args.halve_without_wraparound, latency=args.latency or 0.0
    )
    overhead = (args.overhead_gb or 0.0) * 1e9
    if not overhead < 1e30:
        raise InputError("overhead_bytes", "a number of GB below 1e21", f"{args.overhead_gb:g}")
    return (
        Cluster(chip, _mesh(args, chip), args.pods),
        Workload(model, args.batch, args.seq_len, catalog.precision(args.precision), args.tokens),
        Layout(
            strategy=args.strategy, x=args.fsdp, y=args.tp, z=args.pp, zero=args.zero, microbatches=args.microbatches,
            microbatch_seqs=args.microbatch_seqs, schedule=args.schedule, virtual_stages=args.virtual_stages,
            remat=args.remat, sequence_parallel=args.sequence_parallel, mx=args.mx, my=args.my, ep=args.ep,
            cp=args.cp, cp_kind=args.cp_kind,
        ),
        Options(
            mfu=args.mfu, measured_step_time=args.measured_step_time, attention_flops=args.attention_flops,
            exact=exact, overhead_bytes=overhead, fits_below=args.fits_below, profile=_profile(args),
            stack=args.stack, flash_attention=_flash(args),
        ),
    )  # fmt: skip


def _plan(args, parser) -> int:
    _required(args)
    chip, model = _chip_and_model(args)
    if args.chips is not None and args.mesh is not None:
        raise ValueError("give --mesh or --chips, not both")
    ranked = plan(
        model=model, chip=chip, batch=args.batch, seq_len=args.seq_len, slice_shape=args.mesh, chips=args.chips,
        pods=args.pods, mfu=args.mfu, precision=catalog.precision(args.precision), profile=_profile(args),
        stack=args.stack, flash_attention=_flash(args), ep=args.ep, cp=args.cp, cp_kind=args.cp_kind,
    )  # fmt: skip
    top = range(min(args.top, len(ranked)))
    if args.json:
        best = [ranked.estimate(r) for r in top]
        layouts = [{**report.record(e), "binds": explain.binds(e)} for e in best]
        print(json.dumps({"evaluated": len(ranked.step_time), "fit": len(ranked), "layouts": layouts}, indent=2))
    else:
        print(report.plan_table(ranked, top))
    return 0


def _mesh(args, chip):
    """The slice: --mesh, or --chips on a GPU cluster (nodes of the preset's size), or the pod."""
    if args.chips is not None and args.mesh is not None:
        raise ValueError("give --mesh or --chips, not both")
    if args.chips is None:
        return args.mesh or chip.default_slice
    if not chip.is_gpu:
        raise ValueError(f"--chips needs a GPU cluster; {chip.name} is a TPU torus: give its shape with --mesh")
    return gpu_slice(chips=args.chips, node_size=chip.node_size)


if __name__ == "__main__":
    sys.exit(main())
