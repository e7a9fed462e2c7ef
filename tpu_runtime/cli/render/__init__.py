"""How each report looks: one sub-package per report (`onboard`, `diagnose`), one module per medium.

`terminal.py` prints a compact rich summary, `markdown.py` writes GitHub-flavoured Markdown and `html.py`
a self-contained page; the helpers every medium shares (escaping, code spans, inline SVG) live beside them
here, so two renderers cannot drift apart in how they quote a value.
"""
