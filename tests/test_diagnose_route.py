"""`tpu-agent diagnose PATH [--json]` run by the console script without typer
(tpu_runtime.cli.diagnose_route) prints what the typer command prints, byte for byte, exits with the same
code, and leaves every other command line to typer.

Each case runs the console script (`tpu_runtime.cli.launcher`) and the typer app (`tpu_runtime.cli.app`)
in fresh interpreters on the same input. The JSON report's `timings` (seconds each step took) differ
from run to run and are the one field compared by key only.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO, SHARED_FIXTURES
from tests.subprocess_support import run_text
from tests.test_diagnose_detect import xspace_bytes
from tpu_runtime.cli.diagnose_route import plain_diagnose

V6E = SHARED_FIXTURES / "profiles" / "tpu_v6e_inference.xplane.pb"
CRASH_LOG = REPO / "tests" / "data" / "crash_logs" / "hbm_oom" / "torch_tpu_program_load.log"

_RUN = "import sys; sys.argv = ['tpu-agent', *sys.argv[1:]]; from {module} import main; main()"
LAUNCHER = _RUN.format(module="tpu_runtime.cli.launcher")
TYPER_APP = _RUN.format(module="tpu_runtime.cli.app")


def _run(program: str, args: list[str], home: Path) -> tuple[int, str, str]:
    env = {**os.environ, "TPU_AGENT_HOME": str(home)}
    done = run_text([sys.executable, "-c", program, *args], env=env, timeout=120)
    return done.returncode, done.stdout, done.stderr


def _blank_timings(stdout: str) -> str:
    """The JSON report as printed, with the values of its `timings` block (seconds, different in every
    run) blanked; every other byte is kept."""
    lines = stdout.splitlines(keepends=True)
    start = lines.index('  "timings": {\n')
    end = next(i for i in range(start, len(lines)) if lines[i].startswith("  }"))
    blanked = [line.rsplit(":", 1)[0] + "\n" for line in lines[start + 1 : end]]
    assert blanked, "the report should time its steps"
    return "".join(lines[: start + 1] + blanked + lines[end:])


def _same_both_ways(args: list[str], home: Path) -> tuple[int, str]:
    """Run `args` through the console script and through typer: the same exit code, stderr and stdout
    (for a JSON report, but for its step times)."""
    code, stdout, stderr = _run(LAUNCHER, args, home)
    typer_code, typer_stdout, typer_stderr = _run(TYPER_APP, args, home)
    assert (code, stderr) == (typer_code, typer_stderr)
    if "--json" in args and code == 0:
        assert _blank_timings(stdout) == _blank_timings(typer_stdout)
    else:
        assert stdout == typer_stdout
    return code, stdout


@pytest.fixture(scope="module")
def small_profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A synthetic XSpace of one host plane and one TPU plane with no events, in a profile run folder."""
    run = tmp_path_factory.mktemp("small") / "plugins" / "profile" / "run"
    run.mkdir(parents=True)
    (run / "host.xplane.pb").write_bytes(xspace_bytes("/host:CPU", "/device:TPU:0"))
    return run / "host.xplane.pb"


@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["terminal", "json"])
def test_small_profile_file_and_folder_print_the_same(
    small_profile: Path, json_flag: list[str], tmp_path: Path
) -> None:
    for path in (small_profile, small_profile.parent, small_profile.parents[3]):
        code, stdout = _same_both_ways(["diagnose", *json_flag, str(path)], tmp_path)
        assert code == 0 and "plane(s)" in stdout


@pytest.mark.skipif(
    not V6E.is_file(), reason=f"shared fixture {V6E} is absent (the shared/ folder beside the checkout)"
)
@pytest.mark.parametrize("json_flag", [[], ["--json"]], ids=["terminal", "json"])
def test_real_v6e_profile_prints_the_same(json_flag: list[str], tmp_path: Path) -> None:
    code, stdout = _same_both_ways(["diagnose", str(V6E), *json_flag], tmp_path)
    assert code == 0 and "copy-done" in stdout


def test_a_crash_log_prints_the_same(tmp_path: Path) -> None:
    code, stdout = _same_both_ways(["diagnose", str(CRASH_LOG)], tmp_path)
    assert code == 0 and "hbm_oom" in stdout


@pytest.mark.parametrize("name", ["missing.xplane.pb", "empty.xplane.pb"], ids=["missing", "empty"])
def test_unreadable_input_gets_typers_error_and_exit_code(name: str, tmp_path: Path) -> None:
    path = tmp_path / name
    if name.startswith("empty"):
        path.write_bytes(b"")
    code, stdout = _same_both_ways(["diagnose", str(path)], tmp_path)
    assert code == 2 and stdout == ""


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["diagnose", "a.xplane.pb"], ("a.xplane.pb", False)),
        (["diagnose", "--json", "run"], ("run", True)),
        (["diagnose", "run", "--json"], ("run", True)),
        (["diagnose"], None),
        (["diagnose", "--json"], None),
        (["diagnose", "-"], None),
        (["diagnose", "a", "b"], None),
        (["diagnose", "a", "--json", "--json"], None),
        (["diagnose", "a", "--top", "3"], None),
        (["diagnose", "a", "--compare", "b"], None),
        (["diagnose", "a", "--md", "r.md"], None),
        (["diagnose", "a", "--help"], None),
        (["diagnose", "--", "a"], None),
        (["diagnose", ""], None),
        (["route", "a"], None),
    ],
)
def test_only_a_plain_command_line_takes_the_route(
    argv: list[str], expected: tuple[str, bool] | None
) -> None:
    assert plain_diagnose(argv) == expected


def test_a_completion_request_goes_to_typer(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("_TPU_AGENT_COMPLETE", "bash_complete")
    assert plain_diagnose(["diagnose", "a.xplane.pb"]) is None


def test_other_options_still_work_through_typer(small_profile: Path, tmp_path: Path) -> None:
    md = tmp_path / "r.md"
    code, stdout, stderr = _run(
        LAUNCHER, ["diagnose", str(small_profile), "--top", "3", "--md", str(md)], tmp_path
    )
    assert code == 0 and "XProf profile" in stdout and f"wrote {md}" in stderr
    assert md.read_text(encoding="utf-8").startswith("#")


def test_the_job_and_the_renderer_run_with_the_collector_paused(monkeypatch: pytest.MonkeyPatch) -> None:
    """Both ways run `diagnose_command`, which pauses the cyclic collector and restores it afterwards."""
    import gc

    import tpu_runtime.cli.diagnose_run as command
    import tpu_runtime.diagnose.job as job

    seen: list[object] = []
    monkeypatch.setattr(job, "run_diagnose", lambda *args, **kwargs: seen.append(gc.isenabled()) or "report")
    monkeypatch.setattr(command, "render", lambda report, **kwargs: seen.append((report, gc.isenabled())))
    assert gc.isenabled()
    command.diagnose_command(["run.log"], as_json=True, top=15)
    assert seen == [False, ("report", False)]
    assert gc.isenabled()


@pytest.mark.parametrize(
    ("raised", "expected"), [(KeyboardInterrupt, 130), (EOFError, None)], ids=["interrupt", "eof"]
)
def test_an_interrupt_ends_as_typer_ends_it(
    raised: type[BaseException],
    expected: int | None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """typer exits 130 without a word on Ctrl-C; on EOFError the route hands the command line to typer,
    which prints its own abort message. A process about to end keeps the cyclic collector off with what
    exists frozen; one going on to typer has it on again."""
    import gc

    import tpu_runtime.cli.diagnose_run as command
    from tpu_runtime.cli import diagnose_route

    def interrupted(*args: object, **kwargs: object) -> None:
        raise raised

    monkeypatch.setattr(command, "diagnose_command", interrupted)
    frozen = gc.get_freeze_count()
    try:
        assert diagnose_route.serve(["diagnose", "a.xplane.pb"]) == expected
        assert gc.isenabled() is (expected is None)
        assert (gc.get_freeze_count() > frozen) is (expected is not None)
    finally:
        gc.unfreeze()
        gc.enable()
    assert capsys.readouterr() == ("", "")


def test_a_reader_gone_ends_quietly_both_ways(small_profile: Path, tmp_path: Path) -> None:
    """stdout closed before the report is written: exit 1 and no traceback, as typer ends it."""
    import subprocess

    results = []
    for program in (LAUNCHER, TYPER_APP):
        env = {**os.environ, "TPU_AGENT_HOME": str(tmp_path)}
        child = subprocess.Popen(
            [sys.executable, "-c", program, "diagnose", str(small_profile)],
            env=env,
            cwd=REPO,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert child.stdout is not None and child.stderr is not None
        child.stdout.close()  # the reader goes before the child has imported anything
        results.append((child.wait(timeout=120), child.stderr.read()))
    assert results[0] == results[1] == (1, b"")


def test_a_truncated_compressed_trace_aborts_as_typer_does(tmp_path: Path) -> None:
    """gzip raises EOFError on a cut-off file: the route hands it to typer, whose abort message it is."""
    import gzip

    events = [{"ph": "X", "name": "a", "pid": 1, "tid": 1, "ts": i, "dur": 1} for i in range(2000)]
    whole = gzip.compress(json.dumps({"traceEvents": events}).encode())
    trace = tmp_path / "trace.json.gz"
    trace.write_bytes(whole[: len(whole) // 2])
    code, stdout = _same_both_ways(["diagnose", str(trace)], tmp_path)
    assert (code, stdout) == (1, "")
