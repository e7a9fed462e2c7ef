"""The one progress bar every long CLI command shows on stderr (a `ProgressFn` the jobs call).

Silent when stderr is not a terminal, so scripts and `--json` output see nothing of it.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from rich.console import Console
    from rich.progress import Progress, TaskID


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
        self.enabled = console.is_terminal if enabled is None else enabled
        self.with_step = with_step
        self._console, self._first, self._percent, self._transient = console, first, percent, transient
        self._bar: Progress | None = None
        self._task: TaskID | None = None

    @property
    def bar(self) -> Progress:
        """The rich bar, built on first use: a disabled bar (no terminal, `--json`) never loads
        rich.progress, which costs more start-up time than a short command takes to run."""
        if self._bar is None:
            from rich.progress import (
                BarColumn,
                Progress,
                ProgressColumn,
                SpinnerColumn,
                TaskProgressColumn,
                TextColumn,
                TimeElapsedColumn,
            )

            columns: list[ProgressColumn] = [SpinnerColumn(), TextColumn("{task.description}"), BarColumn()]
            if self._percent:
                columns.append(TaskProgressColumn())
            columns.append(TimeElapsedColumn())
            self._bar = Progress(*columns, console=self._console, transient=self._transient)
            self._task = self._bar.add_task(self._first, total=1.0)
        return self._bar

    def __enter__(self) -> ProgressBar:
        if self.enabled:
            self.bar.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            self.bar.stop()

    def __call__(self, step: str, message: str, fraction: float) -> None:
        if not self.enabled:
            return
        description = f"{step}: {message}" if self.with_step else message
        bar = self.bar
        assert self._task is not None
        bar.update(self._task, description=description, completed=min(max(fraction, 0.0), 1.0))
