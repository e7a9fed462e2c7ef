"""What a command imports decides how long a person waits before it answers (issue: speed where users
wait): `--help` and `diagnose` on a crash log load neither the ML stacks nor what only other commands use.

Each case runs the console script's entry point (`tpu_runtime.cli.launcher`) in a fresh interpreter, with
a cache folder of its own, and lists, at exit, which of the watched modules got imported.
`TORCH_DEVICE_BACKEND_AUTOLOAD` is left unset, as in a person's shell: were torch imported, torch_tpu and
libtpu would load with it.
"""

from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import pytest

from tests.subprocess_support import run_text

REPO = Path(__file__).resolve().parents[1]
CRASH_LOG = REPO / "tests" / "data" / "crash_logs" / "hbm_oom" / "torch_tpu_program_load.log"

ML = ["torch", "torch_tpu", "jax", "chromadb", "transformers", "bm25s", "xprof"]
#: Loaded only by commands that run remote work, read profiles or talk to an MCP client or LLM; scikit-learn
#: and SciPy only fit the similar known errors' weights when their data file is written.
OTHER_COMMANDS = [
    "numpy",
    "google.protobuf",
    "asyncio",
    "ssl",
    "asyncssh",
    "mcp",
    "anthropic",
    "sqlite3",
    "sklearn",
    "scipy",
]
#: What typer's help renderer imports for the markdown markup mode and pretty exceptions (both off here;
#: `tpu_runtime.cli.lean_help`), and what a progress bar nobody sees would load.
HELP_EXTRAS = ["rich.markdown", "markdown_it", "pygments", "rich.traceback", "rich.pretty", "attr", "glob"]
QUIET = ["rich.progress", "rich.live"]
#: The other inputs' analysers and the onboarding report models: not for a profile alone.
NOT_FOR_A_PROFILE = [
    "tpu_runtime.diagnose.crashlog",
    "tpu_runtime.diagnose.torch_trace",
    "tpu_runtime.diagnose.xla_dump",
    "tpu_runtime.diagnose.metrics",
    "tpu_runtime.onboard.report",
    "numpy.ma",
]
#: What a profile's report does without: PyYAML (its workflow and the chip names are read precompiled,
#: `tpu_runtime.yaml_data.compiled`), protobuf's generated descriptor classes (the reader writes its
#: schema itself) and pydantic's plugin lookup in the installed packages' metadata, which comes with the
#: first validator or serializer built (the report is on plain models, `tpu_runtime.model_base`).
NOT_FOR_A_PROFILE_REPORT = ["yaml", "google.protobuf.descriptor_pb2", "importlib.metadata"]
#: The real v6e profile in the shared fixtures beside the checkout, when present.
V6E = REPO.parent / "shared" / "fixtures" / "profiles" / "tpu_v6e_inference.xplane.pb"

_PROBE = """
import atexit, sys
watched = sys.argv[1].split(",")
def report():
    import os
    sys.stderr.write("IMPORTED " + ",".join(m for m in watched if m in sys.modules) + "\\n")
    blas = os.environ.get("OPENBLAS_NUM_THREADS", "-")
    sys.stderr.write(f"THREADS {len(os.listdir('/proc/self/task'))} {blas}\\n")
atexit.register(report)
sys.argv = ["tpu-agent", *sys.argv[2:]]
from tpu_runtime.cli.launcher import main
main()
"""


def _imported(watched: list[str], *args: str, home: Path | None = None) -> tuple[int, list[str]]:
    code, imported, _threads = _probed(watched, *args, home=home)
    return code, imported


def _probed(
    watched: list[str], *args: str, home: Path | None = None, blas: str | None = None
) -> tuple[int, list[str], str]:
    """Exit code, the watched modules imported, and "THREADS OPENBLAS_NUM_THREADS" as seen at exit."""
    env = {
        k: v
        for k, v in os.environ.items()
        if k not in ("TORCH_DEVICE_BACKEND_AUTOLOAD", "OPENBLAS_NUM_THREADS")
    }
    if blas is not None:
        env["OPENBLAS_NUM_THREADS"] = blas
    with tempfile.TemporaryDirectory() as fresh:
        env["TPU_AGENT_HOME"] = str(home or fresh)
        return _run_probe(watched, args, env)


def _run_probe(watched: list[str], args: tuple[str, ...], env: dict[str, str]) -> tuple[int, list[str], str]:
    done = run_text(
        [sys.executable, "-c", _PROBE, ",".join(watched), *args],
        env=env,
        timeout=120,
        check=False,
    )
    line = next(x for x in done.stderr.splitlines() if x.startswith("IMPORTED "))
    names = line.removeprefix("IMPORTED ").strip()
    threads = next(x for x in done.stderr.splitlines() if x.startswith("THREADS "))
    return done.returncode, names.split(",") if names else [], threads.removeprefix("THREADS ")


def test_help_imports_only_the_cli(tmp_path: Path) -> None:
    """The first `--help` renders with typer and rich: not even pydantic, yaml or the report models,
    nor the parts of rich that typer's renderer imports for features tpu-agent leaves off. Once that
    help is kept (tpu_runtime.cli.help_cache), `--help` imports neither typer, rich nor pydantic."""
    watched = [
        *ML,
        *OTHER_COMMANDS,
        *HELP_EXTRAS,
        *QUIET,
        "pydantic",
        "yaml",
        "tpu_runtime.diagnose",
        "tpu_runtime.onboard",
        "typer.rich_utils",
    ]
    code, imported = _imported(watched, "--help", home=tmp_path)
    assert code == 0
    assert imported == ["typer.rich_utils"]  # the renderer itself is loaded: the probe sees it
    code, imported = _imported([*watched, "typer", "rich", "click"], "--help", home=tmp_path)
    assert code == 0
    assert imported == []


def test_a_usage_error_renders_without_the_deferred_modules() -> None:
    """typer's error panel goes through the same renderer; it must still work with them deferred."""
    code, imported = _imported([*HELP_EXTRAS, "typer.rich_utils"], "no-such-command")
    assert code == 2
    assert imported == ["typer.rich_utils"]


def test_diagnose_on_a_crash_log_imports_no_profile_reader() -> None:
    """A crash log is matched against rules: no numpy or protobuf (the profile reader), no ML stack,
    no other input's analyser."""
    watched = [*ML, *OTHER_COMMANDS, *HELP_EXTRAS, *QUIET, "tpu_runtime.diagnose.profile"]
    code, imported = _imported([*watched, *NOT_FOR_A_PROFILE[1:]], "diagnose", str(CRASH_LOG))
    assert code == 0
    assert imported == []


def test_a_log_no_rule_knows_reaches_the_similar_errors_without_scikit_learn(tmp_path: Path) -> None:
    """A log the rules leave `unknown` is compared with the known errors by the shipped TF-IDF weights,
    applied in plain Python (tpu_runtime.diagnose.tfidf): the fallback runs, yet no scikit-learn or SciPy."""
    log = tmp_path / "odd.log"
    log.write_text("FrobnicatorError: the zyzzyva quux widget refused to spin at step 7\n", encoding="utf-8")
    watched = ["sklearn", "scipy", "numpy", "tpu_runtime.diagnose.similar_errors"]
    code, imported = _imported(watched, "diagnose", str(log))
    assert code == 0
    assert imported == ["tpu_runtime.diagnose.similar_errors"]


@pytest.mark.skipif(not V6E.is_file(), reason="the shared v6e profile is not beside this checkout")
@pytest.mark.parametrize(("extra", "printer"), [((), ["rich"]), (("--json",), [])], ids=["terminal", "json"])
def test_diagnose_on_a_profile_imports_only_the_profile_reader(
    extra: tuple[str, ...], printer: list[str]
) -> None:
    """A small profile needs protobuf, not numpy (its events are folded on Python lists:
    `profile_planes.ops_for`), the crash rules, the other readers or the ML stacks; rich only when it
    prints the report (`--json` is written past it), and no pydantic (the report is built on plain
    models and written as pydantic would write it: `tpu_runtime.model_base`)."""
    watched = [*ML, *HELP_EXTRAS, *QUIET, *NOT_FOR_A_PROFILE, *NOT_FOR_A_PROFILE_REPORT]
    watched += ["numpy", "google.protobuf", "rich", "pydantic", "pydantic_core"]
    code, imported = _imported(watched, "diagnose", *extra, str(V6E))
    assert code == 0
    assert imported == ["google.protobuf", *printer]


def test_diagnose_on_a_crash_log_keeps_pydantics_models() -> None:
    """The crash rules validate the models they make: a crash log is reported on pydantic's models."""
    code, imported = _imported(["pydantic"], "diagnose", str(CRASH_LOG))
    assert (code, imported) == (0, ["pydantic"])


@pytest.fixture(scope="module")
def large_profile(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A profile of more events than the reader folds without numpy: the v6e one (26,700 of them)
    with its timelines repeated twice (below the size from which it takes numpy without counting)."""
    from tests.profiles_synth import load_space, synthesize, write_space
    from tpu_runtime.diagnose.profile_planes import LIST_EVENTS, LIST_PROFILE_BYTES
    from tpu_runtime.diagnose.xspace import count_events

    if not V6E.is_file():
        pytest.skip("the shared v6e profile is not beside this checkout")
    space = synthesize(load_space(V6E), devices=4, repeats=2)
    path = write_space(space, tmp_path_factory.mktemp("large") / "large.xplane.pb")
    assert path.stat().st_size <= LIST_PROFILE_BYTES and count_events(path, 1 << 40) > LIST_EVENTS
    return path


def test_diagnose_on_a_large_profile_loads_numpy_with_no_blas_pool(large_profile: Path) -> None:
    """A large profile is folded with numpy, which loads with one OpenBLAS thread (no spinning pool:
    tpu_runtime.cli.blas_threads); the variable is gone again afterwards, and a person's own setting is
    used as it is."""
    code, imported, threads = _probed(["numpy", "numpy.ma"], "diagnose", "--json", str(large_profile))
    assert (code, imported, threads) == (0, ["numpy"], "1 -")
    code, imported, threads = _probed(["numpy"], "diagnose", "--json", str(large_profile), blas="2")
    assert (code, imported, threads) == (0, ["numpy"], "2 2")


@pytest.mark.parametrize(
    "args",
    [("ops", "show", "aten::nansum"), ("route", "my run is out of HBM")],
    ids=["ops-show", "route"],
)
def test_lookup_commands_import_no_ml_stack(args: tuple[str, ...]) -> None:
    code, imported = _imported([*ML, *OTHER_COMMANDS], *args)
    assert code == 0
    assert imported == []


#: What only the typer app loads: a plain `diagnose PATH [--json]` runs without it (cli.diagnose_route).
TYPER_APP = [
    "typer",
    "typer._click",
    "typer._adapters",
    "tpu_runtime.cli.app",
    "tpu_runtime.cli.diagnose_cmd",
]


@pytest.mark.parametrize(("extra", "printer"), [((), ["rich"]), (("--json",), [])], ids=["terminal", "json"])
def test_a_plain_diagnose_of_a_profile_loads_no_typer(
    tmp_path: Path, extra: tuple[str, ...], printer: list[str]
) -> None:
    """The console script runs `diagnose PATH [--json]` itself, unreadable input included: no typer,
    click or command tree, only the reader, the job and (for the terminal) rich; any other option still
    goes through typer."""
    from tests.test_diagnose_detect import xspace_bytes

    profile = tmp_path / "host.xplane.pb"
    profile.write_bytes(xspace_bytes("/host:CPU", "/device:TPU:0"))
    watched = [*TYPER_APP, *ML, *NOT_FOR_A_PROFILE, "google.protobuf", "rich"]
    for path in [profile, *([V6E] if V6E.is_file() else [])]:
        code, imported = _imported(watched, "diagnose", *extra, str(path))
        assert (code, imported) == (0, ["google.protobuf", *printer])
    code, imported = _imported(TYPER_APP, "diagnose", *extra, str(tmp_path / "missing.xplane.pb"))
    assert (code, imported) == (2, [])  # the `error:` line, without typer too
    code, imported = _imported(TYPER_APP, "diagnose", *extra, "--top", "3", str(profile))
    assert (code, imported) == (0, TYPER_APP)
