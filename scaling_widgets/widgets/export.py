"""Export: the scenario as JSON, as the CLI command that gives the same numbers, and as each
framework's launch file.

``scaling-widgets estimate --scenario scenario.json --json`` prints what the panel shows; so
does the command with flags, when every value has a flag (your own model or chip, or axis roles
by hand, have none: then the file is the way). The JSON can be copied or downloaded, and so can
the layout as torchtitan's job TOML, Megatron-LM's launch script and MaxText's YAML
(``launch/``), each saying what was chosen for it and what it cannot express.
"""

from __future__ import annotations

import base64
import html
import json

import ipywidgets as w
from traitlets import Unicode

from ..cost.views.trace import step_trace
from ..fields.command import command
from ..launch import FORMATS, write_config
from ._base import check_kwargs
from .analysis import Analysis
from .scenario import Scenario


class Export(w.VBox):
    """The scenario's JSON (``value``), a download link, and the equivalent commands.

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
    value : str
        The scenario as JSON, as ``Scenario.to_json`` writes it; read-only.
    """

    value = Unicode(read_only=True)  # the scenario as JSON, as to_json() writes it

    def __init__(self, scenario: Scenario | None = None, **kwargs):
        check_kwargs("Export", kwargs)
        self.scenario = scenario or Scenario()
        self._json = w.Textarea(layout=w.Layout(width="100%", height="90px"))
        self._json.add_class("sw-export-json")
        self._commands = w.HTML()
        self._commands.add_class("sw-export-command")
        self._files = {name: w.Textarea(layout=w.Layout(width="100%", height="160px"))
                       for name in FORMATS}  # fmt: skip
        self._links = {name: w.HTML() for name in FORMATS}
        self._launch = w.Tab([w.VBox([self._files[n], self._links[n]]) for n in FORMATS])
        for i, name in enumerate(FORMATS):
            self._launch.set_title(i, FORMATS[name].label)
            self._files[name].add_class(f"sw-export-{name}")
        self._launch.add_class("sw-export-launch")
        # a trace walks every pass: made when asked, not on every change
        self._make_trace = w.Button(
            description="Make the step's trace", layout=w.Layout(width="auto")
        )
        self._trace = w.HTML()
        self._trace.add_class("sw-export-trace")
        self._make_trace.on_click(self._on_make_trace_click)
        trace = w.HBox([self._make_trace, self._trace])
        super().__init__([self._json, self._commands, self._launch, trace], **kwargs)
        self.add_class("sw-export")
        # After the analysis, so that a change the panel could not evaluate is never exported.
        Analysis.of(self.scenario).observe(self._redraw, "estimate")
        self._redraw()

    def _redraw(self, change=None) -> None:
        text = self.scenario.to_json()
        self._json.value = text
        self.set_trait("value", text)
        link = base64.b64encode(text.encode()).decode()
        flags = command(*self.scenario.values())
        lines = [
            f'<a download="scenario.json" href="data:application/json;base64,{link}">Download '
            "scenario.json</a>,"
            " then: <code>scaling-widgets estimate --scenario scenario.json --json</code>",
        ]
        if flags is not None:
            lines.append(f"The same with flags: <code>{html.escape(flags)}</code>")
        self._commands.value = "<br>".join(lines)
        self._trace.value = ""  # a trace made before is of another step
        self._show_launch_files()

    def _on_make_trace_click(self, button) -> None:
        """The current step as trace.json, for Perfetto (ui.perfetto.dev) or chrome://tracing."""
        e = Analysis.of(self.scenario).estimate
        try:
            text = json.dumps(step_trace(e))
        except ValueError as err:
            self._trace.value = html.escape(f"No trace: {err}")
            return
        link = base64.b64encode(text.encode()).decode()
        self._trace.value = (
            f'<a download="trace.json" href="data:application/json;base64,{link}">Download'
            " trace.json</a> (open it in Perfetto or chrome://tracing)"
        )

    def _show_launch_files(self) -> None:
        """Each framework's file for the layout, or why it has none (a batch that frameworks
        cannot split evenly, say)."""
        e = Analysis.of(self.scenario).estimate
        for name, written in FORMATS.items():
            try:
                text = write_config(name, e) if e is not None else ""
            except ValueError as err:
                self._files[name].value = f"# No {written.label} file for this layout: {err}"
                self._links[name].value = ""
                continue
            self._files[name].value = text
            link = base64.b64encode(text.encode()).decode()
            file = written.file_name
            self._links[
                name
            ].value = (
                f'<a download="{file}" href="data:text/plain;base64,{link}">Download {file}</a>'
            )
