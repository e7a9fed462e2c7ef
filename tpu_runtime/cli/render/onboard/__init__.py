"""The OnboardReport renderers: `shaping` picks what they show; `terminal`, `markdown`, `html` format it."""
