"""The command line's options: what ``estimate``, ``plan`` and ``demo`` accept, parsed and checked
for their form; the cost model checks what they mean."""

from __future__ import annotations

import argparse

from ..cost import REMAT_POLICIES, SCHEDULES, STRATEGIES
from ..cost.context import CP_KINDS
from ..cost.profiles import STACKS
from ..presets import HARDWARE, MODELS, PRECISIONS
from ..text import units


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
        "--mesh",
        type=_typed(units.parse_mesh, "--mesh"),
        help="slice shape such as 16x16x16 (default: a TPU's full pod, 1,024 GPUs)",
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
    _data_axis_groups(est, searched=False)
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
        "--mfu", type=_typed(_fraction, "--mfu"),
        help="take this utilisation as given, the chapter's model (default: predict the step, SPEC C)",
    )  # fmt: skip
    _profile_options(est)
    est.add_argument(
        "--measured-peak-gb", type=_typed(units.parse_count, "--measured-peak-gb"), metavar="GB",
        help="a measured peak (as the stack reports it) that calibrates the memory; saved with --save-profile",
    )  # fmt: skip
    est.add_argument(
        "--save-profile", metavar="FILE.json",
        help="with --measured-step-time and/or --measured-peak-gb: calibrate and save",
    )  # fmt: skip
    est.add_argument(
        "--tokens",
        type=_typed(units.parse_count, "--tokens"),
        help="training tokens, such as 15T: reports time to train",
    )
    est.add_argument(
        "--precision", choices=list(PRECISIONS), default="book", help="bytes per parameter policy (default book: 10)"
    )
    est.add_argument("--json", action="store_true", help="print one JSON object instead of the report")


def _data_axis_groups(parser, searched: bool) -> None:
    """EP and CP, groups of the data axis (SPEC D): one layout's, or what holds a plan's search."""
    default = None if searched else 1
    parser.add_argument(
        "--ep", type=_typed(units.parse_whole, "--ep"), default=default, metavar="EP",
        help="expert parallelism: EP chips of the data axis split a MoE model's experts"
             + (" (default: searched)" if searched else " (default 1)"),
    )  # fmt: skip
    parser.add_argument(
        "--cp", type=_typed(units.parse_whole, "--cp"), default=default, metavar="CP",
        help="context parallelism: CP chips of the data axis split each sequence"
             + (" (default: the least a replica needs)" if searched else " (default 1)"),
    )  # fmt: skip
    parser.add_argument("--cp-kind", choices=CP_KINDS, default=None if searched else "ring",
                        help="how CP passes keys and values (default ring)")  # fmt: skip


def _profile_options(parser) -> None:
    parser.add_argument(
        "--profile", metavar="FILE.json", help="efficiency profile for the predicted step (default: the chip's)"
    )
    parser.add_argument(
        "--stack", choices=list(STACKS),
        help="what the software keeps in memory, for the peak and whether it fits; it also turns flash attention on"
        " (default: the chip's profile's)",
    )  # fmt: skip
    parser.add_argument(
        "--flash-attention", choices=("on", "off"),
        help="off keeps the s x s attention scores, in memory and in the step (default: the stack's, on)",
    )  # fmt: skip


def build_parser() -> argparse.ArgumentParser:
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
    planner.add_argument(
        "--mfu", type=_typed(_fraction, "--mfu"), help="rank at this given utilisation (default: the predicted step)"
    )
    _profile_options(planner)
    planner.add_argument("--precision", choices=list(PRECISIONS), default="book", help="default book")
    _data_axis_groups(planner, searched=True)
    top = _typed(units.parse_whole, "--top")
    planner.add_argument("--top", type=top, default=10, help="layouts to show (default 10)")
    planner.add_argument("--json", action="store_true", help="one JSON object whose layouts list is ranked best first")
    demo = commands.add_parser("demo", help="serve the panel in the browser with Voila")
    demo.add_argument(
        "--port", type=_typed(units.parse_whole, "--port"), help="port on 127.0.0.1 (default: a free one)"
    )
    demo.add_argument("--no-browser", action="store_true", help="do not open a browser; just print the URL")
    demo.add_argument(
        "--cull-after", type=_typed(units.parse_whole, "--cull-after"), default=60, metavar="SECONDS",
        help="shut down a closed page's kernel after this many idle seconds (default 60)",
    )  # fmt: skip
    demo.add_argument("--theme", choices=("light", "dark"), default="light", help="the page's theme (default light)")
    return parser


def parser_default(parser, name):
    commands = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return commands.choices["estimate"].get_default(name)
