"""Front end: the `tpu-agent` command line (typer + rich) and its report renderers."""
