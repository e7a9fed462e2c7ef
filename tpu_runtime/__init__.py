"""The tpu-agent engine: everything the CLI, MCP servers and agents call.

Importing the package makes the process safe on machines that are not TPU VMs before torch or
libtpu can be imported (see `platform_env`).
"""

from tpu_runtime.platform_env import apply_safe_defaults

__version__ = "0.1.0"

apply_safe_defaults()
