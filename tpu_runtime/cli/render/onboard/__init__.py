"""The OnboardReport renderers: `rows` picks what they show; `terminal`, `markdown` and `html` format it."""
