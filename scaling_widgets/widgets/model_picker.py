"""ModelPicker: a preset model, or your own dimensions."""

from __future__ import annotations

import html

import ipywidgets as w

from ..catalog import name_of
from ..cost import Model
from ..presets import MODELS
from ..text.moe_and_context import model_summary
from ._base import Bound, Message, check_kwargs
from .scenario import Scenario

DIMS = ("layers", "d_model", "d_ff", "heads", "kv_heads", "head_dim", "vocab")


class ModelPicker(Bound, w.VBox):
    """A dropdown of presets plus "custom", which opens a field per dimension.

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
    """

    def __init__(self, scenario: Scenario | None = None, **kwargs):
        check_kwargs("ModelPicker", kwargs)
        self.scenario = scenario or Scenario()
        self._preset = w.Dropdown(
            description="Model",
            options=[(m.name, k) for k, m in MODELS.items()] + [("custom", "custom")],
        )
        self._dims = {d: w.IntText(description=d, layout=w.Layout(width="170px")) for d in DIMS}
        self._gated = w.Checkbox(description="gated MLP", indent=False)
        self._tied = w.Checkbox(description="tied embeddings", indent=False)
        self._custom = w.GridBox(
            [*self._dims.values(), self._gated, self._tied],
            layout=w.Layout(grid_template_columns="repeat(3, 180px)"),
        )
        self._about = w.HTML()  # its parameters, total and active, and its experts
        self._about.add_class("sw-model-about")
        self._message = Message()
        super().__init__([self._preset, self._about, self._custom, self._message], **kwargs)
        self.add_class("sw-model-picker")
        self._preset.observe(self._on_preset_change, "value")
        for box in (*self._dims.values(), self._gated, self._tied):
            box.observe(self._on_dim_change, "value")
        self.scenario.observe(self._sync, "model")
        self._sync()

    def _show_scenario(self) -> None:
        m = self.scenario.model
        key = name_of(m, MODELS) or "custom"
        self._preset.value = key
        for d, box in self._dims.items():
            box.value = getattr(m, d)
        self._gated.value, self._tied.value = m.gated, m.tied_embeddings
        self._about.value = html.escape(model_summary(m))
        self._custom.layout.display = "" if key == "custom" else "none"

    def _on_preset_change(self, change) -> None:
        if change["new"] == "custom":
            self._custom.layout.display = ""
        else:
            self._apply(model=MODELS[change["new"]])

    def _on_dim_change(self, change) -> None:
        if self._syncing or self._preset.value != "custom":
            return
        dims = {d: box.value for d, box in self._dims.items()}
        try:
            # A MoE model's experts and latent attention stay as they were: the fields are its dense
            # dims.
            now = self.scenario.model
            model = Model(
                "custom model",
                **dims,
                gated=self._gated.value,
                tied_embeddings=self._tied.value,
                moe=now.moe,
                mla=now.mla,
            )
        except ValueError as err:
            self._message.show(str(err))
            return
        self._apply(model=model)
