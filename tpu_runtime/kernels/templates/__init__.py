"""Kernel templates for `tpu-agent kernel new`: each file is a complete kernel module (see the package
docstring of `tpu_runtime.kernels` for the convention). They are data: copied, never imported by the
engine."""
