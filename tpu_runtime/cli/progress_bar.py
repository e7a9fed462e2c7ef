"""The one progress bar every long CLI command shows on stderr (a `ProgressFn` the jobs call).

Silent when stderr is not a terminal, so scripts and `--json` output see nothing of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console


class ProgressBar:
    """A rich bar over a job's steps.

    `with_step` prefixes each message with its step id, `percent` adds a percentage column, `transient`
    clears the bar when the job ends, `enabled` overrides the terminal test.
    """

    def __init__(
        self,
        console: Console,
        *,
        first: str = "starting",
        with_step: bool = False,
        percent: bool = False,
        transient: bool = True,
        enabled: bool | None = None,
    ) -> None:
        from rich.progress import (
            BarColumn,
            Progress,
            ProgressColumn,
            SpinnerColumn,
            TaskProgressColumn,
            TextColumn,
            TimeElapsedColumn,
        )

        self.enabled = console.is_terminal if enabled is None else enabled
        self.with_step = with_step
        columns: list[ProgressColumn] = [SpinnerColumn(), TextColumn("{task.description}"), BarColumn()]
        if percent:
            columns.append(TaskProgressColumn())
        columns.append(TimeElapsedColumn())
        self.bar = Progress(*columns, console=console, transient=transient)
        self.task = self.bar.add_task(first, total=1.0)

    def __enter__(self) -> ProgressBar:
        if self.enabled:
            self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            self.bar.stop()

    def __call__(self, step: str, message: str, fraction: float) -> None:
        description = f"{step}: {message}" if self.with_step else message
        self.bar.update(self.task, description=description, completed=min(max(fraction, 0.0), 1.0))
