"""The command line: ``scaling-widgets estimate``, ``plan`` and ``demo``.

``estimate`` builds the four values the cost model takes (cluster, workload, layout, options)
from the flags, or reads them from a saved scenario (``--scenario FILE.json``), and evaluates
them by the same path as the panel. Bad input prints one line naming the option, the value and
what is allowed, and exits 2. A closed pipe (``| head``) ends quietly.
"""

from __future__ import annotations

import argparse
import json
import os
import sys

from . import catalog
from .cost import (
    REMAT_POLICIES,
    SCHEDULES,
    STRATEGIES,
    Cluster,
    Exactness,
    InputError,
    Layout,
    Options,
    Workload,
    compare_strategies,
    evaluate,
    plan,
)  # fmt: skip
from .cost.nodes import gpu_slice
from .presets import HARDWARE, MODELS, PRECISIONS
from .text import explain, report, units

# The cost model's field names as the flags that set them, for its error messages.
FLAGS = {
    "x": "--fsdp", "y": "--tp", "z": "--pp", "slice_shape": "--mesh", "seq_len": "--seq-len",
    "virtual_stages": "--virtual-stages", "microbatch_seqs": "--microbatch-seqs",
    "measured_step_time": "--measured-step-time", "overhead_bytes": "--overhead-gb", "fits_below": "--fits-below",
    "sequence_parallel": "--sequence-parallel", "attention_flops": "--attention-flops",
}  # fmt: skip


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # one line, no usage dump
        self.exit(2, f"{self.prog}: error: {message}\n")


def _typed(parse, field):
    def convert(text):
        try:
            return parse(text, field)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    convert.__name__ = field
    return convert


def _fraction(text, field):
    value = units.parse_count(text, field)
    if value > 1:
        raise ValueError(f"{field} must be in (0, 1], such as 0.4; got {text!r}")
    return value


def _add_cluster_options(parser) -> None:
    """What both ``estimate`` and ``plan`` ask: the model, the chip, the cluster, the batch."""
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--model", choices=list(MODELS), help="a model preset")
    which.add_argument("--model-file", metavar="F.json", help="your own model as JSON")
    chip = parser.add_mutually_exclusive_group()
    chip.add_argument("--hardware", choices=list(HARDWARE), default="tpu-v5p", help="a chip preset (default tpu-v5p)")
    chip.add_argument("--hardware-file", metavar="F.json", help="your own chip as JSON")
    parser.add_argument(
        "--mesh", type=_typed(units.parse_mesh, "--mesh"), help="slice shape such as 16x16x16 (default: the full pod)"
    )
    parser.add_argument(
        "--chips", type=_typed(units.parse_whole, "--chips"), help="GPUs in all (GPU presets; nodes from the preset)"
    )
    parser.add_argument(
        "--pods", type=_typed(units.parse_whole, "--pods"), default=1, help="pods joined by DCN (default 1)"
    )
    parser.add_argument(
        "--batch",
        type=_typed(units.parse_count, "--batch"),
        help="global batch in tokens: 3M, 3e6 or 3000000 (required)",
    )
    parser.add_argument(
        "--seq-len", type=_typed(units.parse_whole, "--seq-len"), default=4096, help="sequence length (default 4096)"
    )


def _chip_and_model(args):
    chip = (
        catalog.chip_from_json(args.hardware_file)
        if args.hardware_file is not None
        else catalog.hardware(args.hardware)
    )
    model = catalog.model_from_json(args.model_file) if args.model_file is not None else catalog.model(args.model)
    return chip, model


def _layout_options(est) -> None:
    """How the work is spread: the strategy, the split, the pipeline, the recompute."""
    est.add_argument("--strategy", choices=STRATEGIES, default="fsdp+tp", help="default fsdp+tp")
    est.add_argument(
        "--fsdp", type=_typed(units.parse_whole, "--fsdp"), metavar="X", help="FSDP/data degree (default: best split)"
    )
    est.add_argument(
        "--tp", type=_typed(units.parse_whole, "--tp"), metavar="Y", help="tensor-parallel degree (default: best split)"
    )
    est.add_argument(
        "--pp", type=_typed(units.parse_whole, "--pp"), metavar="Z", default=1, help="pipeline stages (default 1)"
    )
    est.add_argument(
        "--microbatches", type=_typed(units.parse_whole, "--microbatches"), help="pipeline microbatches (default 4·Z)"
    )
    est.add_argument(
        "--zero", type=int, choices=range(4), help="ZeRO stage on the data axis (dp: 0; fsdp, fsdp+tp: 3 unless told)"
    )
    est.add_argument("--schedule", choices=SCHEDULES, default="1f1b", help="pipeline schedule (default 1f1b)")
    est.add_argument(
        "--virtual-stages",
        type=_typed(units.parse_whole, "--virtual-stages"),
        default=1,
        help="with --schedule interleaved",
    )
    est.add_argument("--sequence-parallel", action="store_true", help="shard LayerNorm and dropout activations over TP")
    est.add_argument(
        "--microbatch-seqs", type=_typed(units.parse_count, "--microbatch-seqs"), help="sequences per microbatch"
    )


def _reading_options(est) -> None:
    """How the numbers are read: FLOPs, calibration, exactness, utilisation, precision, output."""
    est.add_argument("--attention-flops", action="store_true", help="count attention FLOPs, 12·L·T·N_h·H a token")
    est.add_argument(
        "--remat", choices=REMAT_POLICIES, default="checkpoints", help="recompute policy (default: the chapter's)"
    )
    est.add_argument(
        "--measured-step-time",
        type=_typed(units.parse_count, "--measured-step-time"),
        metavar="SECONDS",
        help="calibrate: report the MFU and HFU a measured step time implies",
    )
    exact = est.add_argument_group("beyond the chapter (SPEC B.7, B.8)")
    exact.add_argument("--ring-factor", action="store_true", help="a ring over n chips moves (n-1)/n of the array")
    exact.add_argument(
        "--halve-without-wraparound", action="store_true", help="halve a TPU group's bandwidth without a ring"
    )
    exact.add_argument(
        "--latency", type=_typed(units.parse_count, "--latency"), metavar="SECONDS", help="per collective"
    )
    exact.add_argument(
        "--overhead-gb", type=_typed(units.parse_count, "--overhead-gb"), help="runtime memory per chip, GB"
    )
    exact.add_argument(
        "--fits-below", type=_typed(_fraction, "--fits-below"), default=1.0, help="share of HBM a layout may fill (0.9)"
    )
    est.add_argument("--mx", type=_typed(units.parse_count, "--mx"), help="override: mesh axes the X group spans")
    est.add_argument("--my", type=_typed(units.parse_count, "--my"), help="override: mesh axes the Y group spans")
    est.add_argument(
        "--mfu", type=_typed(_fraction, "--mfu"), default=0.4, help="model-FLOPs utilisation (default 0.4)"
    )
    est.add_argument(
        "--tokens",
        type=_typed(units.parse_count, "--tokens"),
        help="training tokens, such as 15T: reports time to train",
    )
    est.add_argument(
        "--precision", choices=list(PRECISIONS), default="book", help="bytes per parameter policy (default book: 10)"
    )
    est.add_argument("--json", action="store_true", help="print one JSON object instead of the report")


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="scaling-widgets", description="How to parallelize a transformer for training.")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    est = commands.add_parser("estimate", help="evaluate one layout and compare the strategies")
    est.add_argument(
        "--scenario", metavar="FILE.json", help="evaluate a scenario saved from the panel (no other option then)"
    )
    _add_cluster_options(est)
    _layout_options(est)
    _reading_options(est)
    planner = commands.add_parser("plan", help="rank every legal layout of a cluster")
    _add_cluster_options(planner)
    planner.add_argument("--mfu", type=_typed(_fraction, "--mfu"), default=0.4, help="default 0.4")
    planner.add_argument("--precision", choices=list(PRECISIONS), default="book", help="default book")
    top = _typed(units.parse_whole, "--top")
    planner.add_argument("--top", type=top, default=10, help="layouts to show (default 10)")
    planner.add_argument("--json", action="store_true", help="one JSON object whose layouts list is ranked best first")
    demo = commands.add_parser("demo", help="serve the panel in the browser with Voila")
    demo.add_argument(
        "--port", type=_typed(units.parse_whole, "--port"), help="port on 127.0.0.1 (default: a free one)"
    )
    demo.add_argument("--no-browser", action="store_true", help="do not open a browser; just print the URL")
    return parser


def main(argv=None) -> int:
    parser = _build_parser()
    args = parser.parse_args(argv)
    try:
        if args.command == "demo":
            from .demo import serve  # Voila loads only for the demo

            return serve(port=args.port, open_browser=not args.no_browser)
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
    chosen = evaluate(*values)
    others = compare_strategies(*values)
    best = others["fsdp+tp"] if not isinstance(others["fsdp+tp"], Exception) else None
    out = report.record(chosen, others) if args.json else report.text(chosen, others, best)
    print(json.dumps(out, indent=2) if args.json else out)
    return 0


def _scenario_values(args, parser):
    """The values of a saved scenario; no other option may be given beside it."""
    given = [a for a, v in vars(args).items() if a not in ("command", "scenario", "json") and v != parser_default(
        parser, a)]  # fmt: skip
    if given:
        raise ValueError(f"give --scenario alone (with --json if wanted); got --{given[0].replace('_', '-')} too")
    from .widgets.scenario import Scenario  # traitlets and the widget layer load only for this

    return Scenario.from_json(catalog.read_text(args.scenario)).values()


def parser_default(parser, name):
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return commands.choices["estimate"].get_default(name)


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
            remat=args.remat, sequence_parallel=args.sequence_parallel, mx=args.mx, my=args.my,
        ),
        Options(
            mfu=args.mfu, measured_step_time=args.measured_step_time, attention_flops=args.attention_flops,
            exact=exact, overhead_bytes=overhead, fits_below=args.fits_below,
        ),
    )  # fmt: skip


def _plan(args, parser) -> int:
    _required(args)
    chip, model = _chip_and_model(args)
    if args.chips is not None and args.mesh is not None:
        raise ValueError("give --mesh or --chips, not both")
    ranked = plan(
        model=model, chip=chip, batch=args.batch, seq_len=args.seq_len, slice_shape=args.mesh, chips=args.chips,
        pods=args.pods, mfu=args.mfu, precision=catalog.precision(args.precision),
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
        return args.mesh or chip.pod_shape
    if not chip.is_gpu:
        raise ValueError(f"--chips needs a GPU cluster; {chip.name} is a TPU torus: give its shape with --mesh")
    return gpu_slice(chips=args.chips, node_size=chip.node_size)


if __name__ == "__main__":
    sys.exit(main())
