"""The DiagnoseReport renderers.

`facts` and `profile_rows` pick what they show; `terminal`, `markdown` and `html` format it.
"""
