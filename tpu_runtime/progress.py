"""The one progress callback every job reports through, whichever front end listens (CLI bar, MCP
`report_progress`, nothing): a leaf module, so any layer may import it without a cycle."""

from __future__ import annotations

from collections.abc import Callable

#: (step id, message, fraction of that step done, 0.0-1.0)
ProgressFn = Callable[[str, str, float], None]
#: a kernel-check child's stage callback: (stage name, fraction of the stage done)
StageProgressFn = Callable[[str, float], None]
