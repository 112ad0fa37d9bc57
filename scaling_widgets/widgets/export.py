"""Export: the scenario as JSON and as the CLI command that gives the same numbers.

``scaling-widgets estimate --scenario scenario.json --json`` prints what the panel shows; so
does the command with flags, when every value has a flag (your own model or chip, or axis roles
by hand, have none: then the file is the way). The JSON can be copied or downloaded.
"""

from __future__ import annotations

import base64
import html

import ipywidgets as w

from ..text.command import command
from ._base import check_kwargs
from .analysis import Analysis
from .scenario import Scenario


class Export(w.VBox):
    """The scenario's JSON (``value``), a download link, and the equivalent commands."""

    def __init__(self, scenario: Scenario | None = None, **kwargs):
        check_kwargs("Export", kwargs)
        self.scenario = scenario or Scenario()
        self._json = w.Textarea(layout=w.Layout(width="100%", height="90px"))
        self._json.add_class("sw-export-json")
        self._commands = w.HTML()
        self._commands.add_class("sw-export-command")
        super().__init__([self._json, self._commands], **kwargs)
        self.add_class("sw-export")
        # After the analysis, so that a change the panel could not evaluate is never exported.
        Analysis.of(self.scenario).observe(self._redraw, "estimate")
        self._redraw()

    @property
    def value(self) -> str:
        return self._json.value

    def _redraw(self, change=None) -> None:
        text = self.scenario.to_json()
        self._json.value = text
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
