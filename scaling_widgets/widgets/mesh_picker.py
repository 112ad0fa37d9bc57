"""MeshPicker: the chip, the slice, the pods over DCN, and which axes carry which role."""

from __future__ import annotations

import html
import math

import bqplot as bq
import ipywidgets as w
import numpy as np
from traitlets import Dict

from ..catalog import name_of
from ..cost.ground.refusals import InputError
from ..cost.hardware.slice_names import is_slice_name, named_slice, names_slices, slice_name
from ..cost.values import SPANS
from ..cost.views import MeshData
from ..presets import HARDWARE
from ..text import units
from ._base import ROLE_COLORS, Bound, Message, check_kwargs, control, vertical_axis
from .analysis import Analysis
from .scenario import Scenario
from .theme import color, css_color

ROLE_OPTIONS = [("X: FSDP/data", "x"), ("Y: tensor", "y"), ("Z: pipeline", "z")]
GROUPS = ("x", "y", "z")
# The groups the data axis may hold (MODEL.md §D): drawn as one more bar when they are in use.
SUBGROUPS = (("EP: experts", "indigo"), ("CP: sequence", "teal"))


class MeshPicker(Bound, w.VBox):
    """Pick the hardware, the slice shape and the pods; see the axes each group spans.

    ``value`` is the layout: hardware, slice_shape, pods, axis_roles, and the resulting X, Y,
    Z, M_X, M_Y and wraparound.

    Parameters
    ----------
    scenario : Scenario, optional
        The scenario the widget is bound to; None: a new ``Scenario()`` of its own.
    **kwargs
        ``layout`` only, passed on to ipywidgets; any other keyword raises ``TypeError``.

    Attributes
    ----------
    scenario : Scenario
        The scenario the widget is bound to.
    analysis : Analysis
        The scenario's shared analysis, whose ``mesh`` the picture draws.
    value : dict
        "hardware" (the chip's name), "slice_shape", "pods", the pods each group spans
        ("fsdp_pods", "pp_pods", "tp_pods", "ep_pods", "cp_pods"), "axis_roles", and the groups
        that result in a pod: "x", "y", "z" (X, Y, Z: the data, tensor and pipeline groups' sizes
        [chips]), "mx", "my" (M_X, M_Y: the mesh axes X and Y span) and "wrap_x", "wrap_y"
        (whether X's and Y's rings wrap around); read-only.
    """

    value = Dict(read_only=True)

    def __init__(self, scenario: Scenario | None = None, **kwargs):
        check_kwargs("MeshPicker", kwargs)
        self.scenario = scenario or Scenario()
        self.analysis = Analysis.of(self.scenario)
        self._hardware = control("hardware", options=[(c.name, k) for k, c in HARDWARE.items()])
        self._axes = w.HBox()
        # the slice by Google's name (v5p-512), shown and typed, on a TPU Google names slices of
        self._name = w.Text(
            description="TPU slice",
            placeholder="v5p-512",
            continuous_update=False,
            layout=w.Layout(width="220px"),
        )
        self._name.add_class("sw-slice-name")
        self._pods = control("pods")
        # the pods each group spans: shown with more than one pod (EP's for a MoE model)
        self._spans = {name: control(name) for name in SPANS}
        self._by_hand = w.Checkbox(description="Assign axes to roles by hand", indent=False)
        self._roles = w.HBox()
        self._info = w.HTML()
        self._picture = _MeshPicture()
        self._message = Message()
        self._moved = w.HTML()  # what a change of chip changed besides
        super().__init__(
            [
                self._hardware,
                self._moved,
                self._name,
                self._axes,
                self._pods,
                *self._spans.values(),
                self._by_hand,
                self._roles,
                self._message,
                self._info,
                self._picture,
            ],
            **kwargs,
        )
        self.add_class("sw-mesh-picker")
        self._hardware.observe(self._on_hardware_change, "value")
        self._name.observe(self._on_name_change, "value")
        self._bind(self._pods, "pods")
        for name, box in self._spans.items():
            self._bind(box, name)
        self._by_hand.observe(self._on_by_hand_change, "value")
        # recomputed after every change of the scenario
        self.analysis.observe(self._on_mesh_change, "mesh")
        self._on_mesh_change()

    def _show_scenario(self) -> None:
        s = self.scenario
        chip_key = name_of(s.hardware, HARDWARE)
        if chip_key is None:  # a user's own chip: offer it too
            self._hardware.options = [(c.name, k) for k, c in HARDWARE.items()] + [
                (s.hardware.name, "custom")
            ]
        self._hardware.value = chip_key or "custom"
        if len(self._axes.children) != len(s.slice_shape) or self._axes_pod != s.hardware.pod_shape:
            self._axes.children = [self._axis_box(i) for i in range(len(s.hardware.pod_shape))]
            self._roles.children = [self._role_box(i) for i in range(len(s.hardware.pod_shape))]
            self._axes_pod = s.hardware.pod_shape
        for box, n in zip(self._axes.children, s.slice_shape):
            box.value = n
        names = (
            ("nodes", "GPUs/node")
            if s.hardware.is_gpu
            else [f"axis {i}" for i in range(len(self._axes.children))]
        )
        for box, name in zip(self._axes.children, names):
            box.description = name
        if s.hardware.is_gpu:  # the node size is the chip's: only the number of nodes is a choice
            self._axes.children[1].disabled = True
        name = slice_name(s.hardware, math.prod(s.slice_shape), s.slice_shape)
        self._name.value = name or ""
        self._name.layout.display = "" if names_slices(s.hardware) else "none"
        super()._show_scenario()
        for name, box in self._spans.items():
            shown = s.pods > 1 and (name != "ep_pods" or s.model.moe is not None)
            box.layout.display = "" if shown else "none"
        self._by_hand.value = bool(s.axis_roles)
        self._roles.layout.display = "" if s.axis_roles else "none"
        for box, role in zip(self._roles.children, s.axis_roles or ("x",) * len(s.slice_shape)):
            box.value = role

    _axes_pod = ()

    def _axis_box(self, i: int) -> w.IntText:
        # The label as wide as its text ("GPUs/node" on a GPU); the box wide enough for 5 digits.
        box = w.IntText(
            description=f"axis {i}",
            layout=w.Layout(width="auto"),
            style={"description_width": "initial"},
        )
        box.add_class("sw-axis-length")
        box.observe(self._on_axis_change, "value")
        return box

    def _role_box(self, i: int) -> w.Dropdown:
        box = w.Dropdown(
            options=ROLE_OPTIONS, description=f"axis {i}", layout=w.Layout(width="190px")
        )
        box.style.description_width = "45px"
        box.observe(self._on_role_change, "value")
        return box

    def _on_hardware_change(self, change) -> None:
        if change["new"] == "custom" or self._syncing:
            return
        if self._apply(hardware=HARDWARE[change["new"]]):
            self._show_mended()

    def _on_name_change(self, change) -> None:
        """A slice typed by its name: its chip and its shape, at once."""
        if self._syncing:
            return
        text = change["new"]
        try:
            if not is_slice_name(text):
                raise ValueError(
                    f"slice must be a TPU slice's name such as v5p-512 or v6e-256; got {text!r}"
                )
            named = named_slice(text, HARDWARE.__getitem__, "slice")
        except (InputError, ValueError) as err:  # the text stays as typed; the scenario is kept
            self._message.show(str(err))
            return
        if self._apply(hardware=HARDWARE[named.chip], slice_shape=tuple(named)):
            self._show_mended()

    def _on_axis_change(self, change) -> None:
        self._moved.value = ""
        shape = tuple(box.value for box in self._axes.children)
        if not self._syncing and self._apply(slice_shape=shape):
            self._show_mended()

    def _show_mended(self) -> None:
        """What the change of chip or slice mended to keep the scenario runnable."""
        said = self.scenario.mended
        self._moved.value = f"<i>{html.escape(said)}</i>" if said else ""

    def _on_by_hand_change(self, change) -> None:
        n = len(self.scenario.slice_shape)
        roles = ("x",) * (n - 1) + ("y",) if change["new"] else ()  # tensor innermost to start
        self._apply(axis_roles=roles)

    def _on_role_change(self, change) -> None:
        if self._by_hand.value:
            self._apply(axis_roles=tuple(box.value for box in self._roles.children))

    def _on_mesh_change(self, change=None) -> None:
        mesh = self.analysis.mesh
        if mesh is None:
            return
        self._sync()
        self._info.value = _describe(mesh, self.scenario)
        # X's share of a folded EP group: the rest of it is TP's
        s = self.scenario
        ep = max(mesh.ep // mesh.y, 1) if mesh.ep_folded else mesh.ep
        self._picture.show(mesh, ep, mesh.cp, spans=s.pp_pods, tp=s.tp_pods, ep_pods=s.ep_pods,
                           cp_pods=s.cp_pods)  # fmt: skip
        self.set_trait(
            "value",
            {
                "hardware": s.hardware.name,
                "slice_shape": s.slice_shape,
                "pods": s.pods,
                **{name: getattr(s, name) for name in SPANS},
                "axis_roles": s.axis_roles,
                "x": mesh.x,
                "y": mesh.y,
                "z": mesh.z,
                "mx": mesh.mx,
                "my": mesh.my,
                "wrap_x": mesh.wrap_x,
                "wrap_y": mesh.wrap_y,
            },
        )


def _describe(mesh: MeshData, s: Scenario) -> str:
    shape = units.mesh(mesh.slice_shape)
    if mesh.gpu:
        nodes, per_node = mesh.slice_shape
        where = "; ".join(mesh.places) or "one GPU"
        groups = f"{where}; Z = {mesh.z}.{_groups_of_x(mesh, s)}"
        return f"<b>{mesh.chips:,} GPUs</b>: {nodes} nodes x {per_node}. {groups}"
    pods = f" x {mesh.pods} pods over DCN" if mesh.pods > 1 else ""
    groups = ("FSDP", "each pipeline", "each TP group", "each EP group", "each CP group")
    for name, group in zip(SPANS, groups):
        n = getattr(s, name)
        pods += f" ({group} across {n} of them)" if n > 1 else ""

    def ring(wraps: bool, size: int) -> str:
        return "" if size == 1 else (" (ring)" if wraps else " (no wraparound)")

    used = [(label, ROLE_COLORS[g]) for label, g in ROLE_OPTIONS]
    used += [SUBGROUPS[0]] * (mesh.ep > 1) + [SUBGROUPS[1]] * (mesh.cp > 1)
    key = " ".join(
        f'<span style="color:{css_color(c)}">&#9632;</span> {label}' for label, c in used
    )
    return (
        f"{key}<br><b>{mesh.chips:,} chips</b> ({shape}{pods}). "
        f"X = {mesh.x} spans M<sub>X</sub> = {mesh.mx:g} axes{ring(mesh.wrap_x, mesh.x)}; "
        f"Y = {mesh.y} spans M<sub>Y</sub> = {mesh.my:g}{ring(mesh.wrap_y, mesh.y)}; Z = {mesh.z}."
        + _groups_of_x(mesh, s)
    )


def _groups_of_x(mesh: MeshData, s: Scenario) -> str:
    """The groups the data axis holds beside its replicas: EP splits the experts, CP the
    sequences."""
    experts = (
        f"{max(mesh.ep // mesh.y, 1)} with TP's {mesh.y} make the EP {mesh.ep} that split the"
        " experts (whole ones on each chip)"
        if mesh.ep_folded
        else f"EP {mesh.ep} of them split the experts"
        + (f" with as many in each of {s.ep_pods} pods" if s.ep_pods > 1 else "")
    )
    context = f"CP {mesh.cp} split each sequence ({s.cp_kind})"
    context += f" with as many in each of {s.cp_pods} pods" if s.cp_pods > 1 else ""
    parts = [experts] * (mesh.ep > 1) + [context] * (mesh.cp > 1)
    if not parts:
        return ""
    replicas = mesh.x // mesh.cp
    return f" Of X's {mesh.x} chips, {' and '.join(parts)}: {replicas:,} replicas."


class _MeshPicture(bq.Figure):
    """Each slice axis as a bar, split into the factors the X, Y and Z groups take of it; with
    expert or context parallelism, one more bar: the data axis X split into its EP and CP groups."""

    def __init__(self):
        self._x = bq.LinearScale(min=0)
        self._y = bq.OrdinalScale()
        self._bars = bq.Bars(
            x=["axis 0"],
            y=np.zeros((5, 1)),
            scales={"x": self._y, "y": self._x},
            orientation="horizontal",
            type="stacked",
            colors=[color(ROLE_COLORS[g]) for g in GROUPS] + [color(c) for _, c in SUBGROUPS],
            labels=[label for label, _ in ROLE_OPTIONS] + [label for label, _ in SUBGROUPS],
            tooltip=bq.Tooltip(
                fields=["x", "y"], labels=["axis", "log2 of the share"], formats=["", ".0f"]
            ),
        )
        axes = [
            vertical_axis(self._y),
            bq.Axis(scale=self._x, label="log2 of the axis length, by group", tick_format="d"),
        ]
        super().__init__(
            marks=[self._bars],
            axes=axes,
            fig_margin=dict(top=10, bottom=40, left=60, right=10),
            layout=w.Layout(height="170px", width="100%", min_width="300px"),
        )
        self.add_class("sw-mesh-picture")

    def show(self, mesh: MeshData, ep: int = 1, cp: int = 1, spans: int = 1, tp: int = 1,
             ep_pods: int = 1, cp_pods: int = 1) -> None:  # fmt: skip
        names = [f"axis {i} ({n})" for i, n in enumerate(mesh.slice_shape)]
        # Bars of each group, per axis: the log2 of the factor it takes, so lengths add up.
        logs = np.log2(
            np.array([[share[k] for share in mesh.shares] for k in range(3)], dtype=float)
        )
        logs = np.vstack([logs, np.zeros((2, logs.shape[1]))])
        if mesh.pods > 1:  # the pods over DCN: one more axis, data parallel but for the pipeline's
            # or TP's, EP's or CP's share of it (``spans``, ``tp``, ``ep_pods``, ``cp_pods``: the
            # pods a pipeline, a TP, an EP or a CP group spans)
            names.append(f"pods over DCN ({mesh.pods})")
            data = mesh.pods // (spans * tp * ep_pods * cp_pods)
            shares = np.log2([data, tp, spans, ep_pods, cp_pods])
            logs = np.column_stack([logs, shares])
        if ep > 1 or cp > 1:  # X's own groups: the rest of X holds whole replicas
            names.append(f"X = {mesh.x}: EP {ep}, CP {cp}")
            rest = max(np.log2(mesh.x) - np.log2(ep) - np.log2(cp), 0.0)
            logs = np.column_stack([logs, [rest, 0.0, 0.0, np.log2(ep), np.log2(cp)]])
        with self._bars.hold_sync():
            self._bars.x, self._bars.y = names, logs
        # room for the names
        self.fig_margin = {**self.fig_margin, "left": round(12 + 6.5 * max(map(len, names)))}
        top = max(1, math.ceil(math.log2(max(*mesh.slice_shape, mesh.pods))))
        self._x.max = float(top)
        self.axes[1].tick_values = list(range(top + 1))
