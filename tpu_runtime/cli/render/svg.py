"""A matplotlib figure as an inline SVG element, shared by the HTML renderers.

Figures come from matplotlib's object API (no pyplot, so the caller's backend and figure list are left
alone). Each SVG's element ids are prefixed with the chart's name so several charts can share one
document, and the id salt is fixed so the same report renders to the same bytes; matplotlib escapes the
text it writes into SVG itself.
"""

from __future__ import annotations

import io
import re

import matplotlib
from markupsafe import Markup, escape
from matplotlib.figure import Figure

__all__ = ["figure_svg", "mpl_text"]


def mpl_text(s: str, limit: int = 40) -> str:
    """A label matplotlib prints as typed: `$` would start mathtext; long dotted paths keep their tail."""
    if len(s) > limit:
        s = "…" + s[-(limit - 1) :]
    return s.replace("$", r"\$")


def figure_svg(fig: Figure, name: str, label: str) -> Markup:
    """`fig` as an `<svg class="chart">` element, ids prefixed `name-`, labelled for screen readers."""
    buf = io.StringIO()
    with matplotlib.rc_context({"svg.hashsalt": f"tpu-agent-{name}", "svg.fonttype": "none"}):
        fig.savefig(
            buf,
            format="svg",
            bbox_inches="tight",
            metadata={"Creator": None, "Date": None, "Format": None, "Type": None},
        )
    text = buf.getvalue()
    text = text[text.index("<svg") :]  # drop the XML declaration and DOCTYPE: not valid inside HTML
    text = re.sub(r'\bid="([^"]+)"', rf'id="{name}-\1"', text)
    text = text.replace('href="#', f'href="#{name}-').replace("url(#", f"url(#{name}-")
    attrs = f'<svg class="chart" role="img" aria-label="{escape(label)}" '
    text = text.replace("<svg ", attrs, 1)
    # Markup: the SVG is generated here and matplotlib escapes every text node it writes.
    return Markup(text)
