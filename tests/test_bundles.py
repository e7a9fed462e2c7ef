"""`tpu-agent bundle`: every client's bundle is built from agents/, skills/, workflows/, the servers
`tpu-agent serve` knows and the approval guard; the copies git keeps never drift from that build, and
the generated bundles (`bundles/`, not kept in git) carry the guard byte for byte.

The real clients check their own bundle when they are installed (scripts/test.sh installs them from npm
into .npm-tools and exports their paths): `gemini extensions validate`, `gemini extensions install` and
`gemini mcp list` (which starts each server and must report it Connected) with TPU_AGENT_GEMINI_BIN;
`codex mcp list`, `codex execpolicy check` on the rules file, `codex debug prompt-input` (the model's
input holds AGENTS.md) and `mcpServerStatus/list` on `codex app-server` (which starts each server and
reports what it serves) with TPU_AGENT_CODEX_BIN; `claude plugin validate --strict` on a bundle written
elsewhere with TPU_AGENT_CLAUDE_BIN (tests/test_plugin.py checks the root plugin and its servers).
"""

from __future__ import annotations

import importlib
import json
import os
import select
import shutil
import subprocess
import sys
import time
import tomllib
from pathlib import Path
from typing import Any

import pytest
import yaml
from typer.testing import CliRunner

from tests.conftest import REPO
from tests.subprocess_support import run_text
from tpu_runtime.agent_defs import ROUTER, SPECIALISTS
from tpu_runtime.bundle import HARNESSES, BundleError, build_bundle, checked_in_files, load_source
from tpu_runtime.bundle.build import GENERATED_DIR, write_bundle
from tpu_runtime.bundle.guard import DENIED_COMMANDS, command_text
from tpu_runtime.bundle.source import CanonicalSource, SourceError
from tpu_runtime.cli.app import app
from tpu_runtime.cli.serve_cmd import server_modules

SAFE_ENV = {"TPU_SKIP_MDS_QUERY": "1", "JAX_PLATFORMS": "cpu", "TORCH_DEVICE_BACKEND_AUTOLOAD": "0"}
BIN_DIR = str(Path(sys.executable).parent)  # where `tpu-agent` is installed beside this Python


@pytest.fixture(scope="module")
def source() -> CanonicalSource:
    return load_source(list(server_modules()))


@pytest.fixture(scope="module")
def bundles(source: CanonicalSource, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Every harness's bundle written by `write_bundle` into `<folder>/<harness>/`, as a user gets it."""
    folder = tmp_path_factory.mktemp("bundles")
    for harness in HARNESSES:
        write_bundle(harness, source, folder / harness)
    return folder


def _front_matter(text: str) -> dict[str, object]:
    assert text.startswith("---\n"), text[:80]
    meta = yaml.safe_load(text.split("---\n")[1])
    assert isinstance(meta, dict)
    return meta


# --- the canonical source and the drift check ------------------------------------------------------


def test_servers_are_the_ones_tpu_agent_serve_knows(source: CanonicalSource) -> None:
    from mcp_servers.all import SPECIALISTS as SERVED

    assert [s.serve_name for s in source.servers] == list(SERVED)
    for server in source.servers:
        assert server.key == importlib.import_module(SERVED[server.serve_name]).NAME
    configured = json.loads((REPO / ".mcp.json").read_text())["mcpServers"]
    assert list(configured) == [s.key for s in source.servers]


@pytest.mark.parametrize("harness", list(HARNESSES))
def test_checked_in_bundle_matches_the_build(harness: str, source: CanonicalSource) -> None:
    """Drift check: regenerate with `tpu-agent bundle --harness NAME` after editing the canonical files."""
    expected = checked_in_files(harness, source)
    for path, content in expected.items():
        on_disk = REPO / path
        assert on_disk.is_file(), f"{path} is missing: run tpu-agent bundle --harness {harness}"
        assert on_disk.read_bytes() == content, (
            f"{path} differs from the build: run tpu-agent bundle --harness {harness}"
        )


def test_generated_bundles_are_not_kept_in_git() -> None:
    """A copy of the guard in git could drift from hooks/ and tpu_runtime/bundle/; a build output cannot."""
    git = shutil.which("git")
    if git is None or not (REPO / ".git").exists():
        pytest.skip("not a git checkout")
    listed = subprocess.run([git, "ls-files", GENERATED_DIR], cwd=REPO, capture_output=True, text=True)
    assert listed.returncode == 0 and listed.stdout == "", listed.stdout
    probe = f"{GENERATED_DIR}/codex/hooks/deny_approvals.py"
    assert subprocess.run([git, "check-ignore", "-q", probe], cwd=REPO).returncode == 0


GUARD_FILES = {
    "claude-code": {"hooks/deny_approvals.py": "hooks/deny_approvals.py"},
    "codex": {"hooks/deny_approvals.py": "hooks/deny_approvals.py"},
    "gemini-cli": {
        "hooks/deny_approvals.py": "hooks/deny_approvals.py",
        "hooks/guard_hook.py": "tpu_runtime/bundle/guard_hook.py",
    },
    "cursor": {
        ".cursor/hooks/deny_approvals.py": "hooks/deny_approvals.py",
        ".cursor/hooks/guard_hook.py": "tpu_runtime/bundle/guard_hook.py",
    },
}
"""Harness -> {guard file in its bundle: the one source file it is written from}."""


@pytest.mark.parametrize("harness", list(GUARD_FILES))
def test_every_written_guard_is_its_source_byte_for_byte(harness: str, bundles: Path) -> None:
    for inside, origin in GUARD_FILES[harness].items():
        assert (bundles / harness / inside).read_bytes() == (REPO / origin).read_bytes(), inside


def test_drift_is_detected(source: CanonicalSource, tmp_path: Path) -> None:
    """An edited agent changes every bundle that carries its prompt."""
    copy = tmp_path / "repo"
    for folder in ("agents", "skills", "workflows", "hooks"):
        shutil.copytree(REPO / folder, copy / folder)
    agent = copy / "agents" / "tpu-diagnostics.md"
    agent.write_text(agent.read_text() + "\nOne more sentence.\n")
    edited = load_source([s.serve_name for s in source.servers], root=copy)
    for harness in ("gemini-cli", "codex", "cursor", "antigravity", "vscode", "claude-code"):
        before = build_bundle(harness, source)
        after = build_bundle(harness, edited)
        assert before != after, harness


def test_source_errors_are_one_line(tmp_path: Path) -> None:
    with pytest.raises(SourceError, match="source checkout"):
        load_source(["onboarding"], root=tmp_path)
    with pytest.raises(BundleError, match="choose one of"):
        build_bundle("emacs", load_source(["onboarding"]))
    with pytest.raises(SourceError, match="no MCP servers"):
        load_source(["all"])


# --- what each bundle holds --------------------------------------------------------------------------


SERVER_LISTS = {
    "claude-code": (".mcp.json", "mcpServers"),
    "gemini-cli": ("gemini-extension.json", "mcpServers"),
    "codex": ("config.toml", "mcp_servers"),
    "antigravity": ("mcp_config.json", "mcpServers"),
    "cursor": (".cursor/mcp.json", "mcpServers"),
    "vscode": (".vscode/mcp.json", "servers"),
}
"""Harness -> (file in its bundle, key of its server table)."""


def _servers_of(harness: str, source: CanonicalSource) -> dict[str, Any]:
    path, key = SERVER_LISTS[harness]
    text = next(f.content.decode() for f in build_bundle(harness, source) if f.path == path)
    data = tomllib.loads(text) if path.endswith(".toml") else json.loads(text)
    servers: dict[str, Any] = data[key]
    return servers


@pytest.mark.parametrize("harness", list(HARNESSES))
def test_every_bundle_starts_every_server_the_same_way(harness: str, source: CanonicalSource) -> None:
    servers = _servers_of(harness, source)
    assert list(servers) == [s.key for s in source.servers]
    for server in source.servers:
        spec = servers[server.key]
        assert spec["command"] == "tpu-agent" and spec["args"] == ["serve", server.serve_name]
        if harness in ("claude-code", "vscode"):
            assert spec["type"] == "stdio"


@pytest.mark.parametrize("harness", ["gemini-cli", "codex", "vscode"])
def test_context_documents_carry_every_agent_and_skill(harness: str, source: CanonicalSource) -> None:
    name = {"gemini-cli": "GEMINI.md", "codex": "AGENTS.md", "vscode": ".github/copilot-instructions.md"}
    text = next(f.content.decode() for f in build_bundle(harness, source) if f.path == name[harness])
    for agent in SPECIALISTS:
        assert f"## {agent}" in text
        assert source.agents[agent].body.strip().splitlines()[0] in text
    for skill in source.skills:
        assert f"## Skill: {skill.name}" in text
    assert "| the user brings | hand it to |" in text  # the router's table
    titles = [line for line in _outside_code(text) if line.startswith("# ")]
    assert titles == ["# tpu-agent"], titles  # every body's headings sit below its section


def _outside_code(markdown: str) -> list[str]:
    lines, fenced = [], False
    for line in markdown.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        elif not fenced:
            lines.append(line)
    return lines


def test_cursor_and_antigravity_rules_have_the_documented_front_matter(source: CanonicalSource) -> None:
    cursor = {f.path: f.content.decode() for f in build_bundle("cursor", source)}
    always = _front_matter(cursor[".cursor/rules/tpu-agent.mdc"])
    assert always["alwaysApply"] is True
    for name in [*SPECIALISTS, *(s.name for s in source.skills)]:
        meta = _front_matter(cursor[f".cursor/rules/{name}.mdc"])
        assert meta["alwaysApply"] is False and len(str(meta["description"])) >= 100
    antigravity = {f.path: f.content.decode() for f in build_bundle("antigravity", source)}
    assert _front_matter(antigravity[".agents/rules/tpu-agent.md"])["trigger"] == "always_on"
    for name in SPECIALISTS:
        meta = _front_matter(antigravity[f".agents/rules/{name}.md"])
        assert meta["trigger"] == "model_decision" and meta["description"] == source.agents[name].description
    for skill in source.skills:
        assert _front_matter(antigravity[f".agents/workflows/{skill.name}.md"])["description"]
        assert len(antigravity[f".agents/workflows/{skill.name}.md"]) <= 12_000  # Antigravity's cap


def test_the_claude_bundle_is_the_plugin_with_its_guard(source: CanonicalSource) -> None:
    files = {f.path: f.content for f in build_bundle("claude-code", source)}
    assert files["agents/tpu-agent.md"] == (REPO / "agents" / "tpu-agent.md").read_bytes()
    assert files["hooks/deny_approvals.py"] == (REPO / "hooks" / "deny_approvals.py").read_bytes()
    assert {f"agents/{name}.md" for name in (ROUTER, *SPECIALISTS)} <= set(files)
    deny = json.loads(files["settings.json"])["permissions"]["deny"]
    assert all(f"Bash({command_text(words)}:*)" in deny for words in DENIED_COMMANDS)


def test_every_guard_names_every_denied_command(source: CanonicalSource) -> None:
    gemini = {f.path: f.content for f in build_bundle("gemini-cli", source)}
    excluded = json.loads(gemini["gemini-extension.json"])["excludeTools"]
    hook = json.loads(gemini["hooks/hooks.json"])["hooks"]["BeforeTool"][0]
    assert hook["matcher"] == "run_shell_command" and 'guard_hook.py" gemini' in hook["hooks"][0]["command"]
    vscode = {f.path: f.content for f in build_bundle("vscode", source)}
    auto = json.loads(vscode[".vscode/settings.json"])["chat.tools.terminal.autoApprove"]
    codex = {f.path: f.content.decode() for f in build_bundle("codex", source)}
    codex_hook = json.loads(codex["hooks.json"])["hooks"]["PreToolUse"][0]
    assert codex_hook["matcher"] == "Bash" and "deny_approvals.py" in codex_hook["hooks"][0]["command"]
    for words in DENIED_COMMANDS:
        text = command_text(words)
        assert f"run_shell_command({text})" in excluded
        assert auto[text] is False
        assert f"pattern = [{', '.join(json.dumps(w) for w in words)}]" in codex["rules/tpu-agent.rules"]
    cursor = {f.path: f.content.decode() for f in build_bundle("cursor", source)}
    cursor_hook = json.loads(cursor[".cursor/hooks.json"])
    assert cursor_hook["version"] == 1
    assert cursor_hook["hooks"]["beforeShellExecution"] == [{"command": "python3 hooks/guard_hook.py cursor"}]
    assert ".cursor/hooks/deny_approvals.py" in cursor and ".cursor/hooks/guard_hook.py" in cursor
    for harness in ("antigravity",):  # no guard file: its README says so plainly
        readme = next(f.content.decode() for f in build_bundle(harness, source) if f.path == "README.md")
        assert "this bundle ships none" in readme or "this bundle has no guard of its own" in readme


def _run_hook(hook: Path, harness: str, event: dict[str, Any]) -> subprocess.CompletedProcess[str]:
    """A bundle's guard hook run the way its harness runs it: the tool event as JSON on stdin."""
    return run_text([sys.executable, str(hook), harness], input=json.dumps(event))


GUARD_CASES = [
    ("tpu-agent approvals approve r-1", True),
    ("cd /tmp && TPU=1 tpu-agent approvals approve r-1", True),
    ("sqlite3 ~/.local/state/tpu-agent/state.db 'DELETE FROM runs'", True),
    ("tpu-agent approvals list", False),
    ("ls -la", False),
]
"""Shell commands every bundle's guard is shown through its client's hook, and whether it must refuse."""


@pytest.mark.parametrize(("command", "blocked"), GUARD_CASES)
def test_the_gemini_hook_runs_the_guard_on_geminis_shell_tool(
    command: str, blocked: bool, bundles: Path
) -> None:
    hook = bundles / "gemini-cli" / "hooks" / "guard_hook.py"
    hook_input = {"tool_name": "run_shell_command", "tool_input": {"command": command}}
    done = _run_hook(hook, "gemini", hook_input)
    assert done.returncode == (2 if blocked else 0), done.stderr
    if blocked:
        assert "tpu-agent guard" in done.stderr
    else:
        assert json.loads(done.stdout) == {}
    other = {"tool_name": "read_file", "tool_input": {"command": "tpu-agent approvals approve r-1"}}
    done = _run_hook(hook, "gemini", other)
    assert done.returncode == 0 and json.loads(done.stdout) == {}


@pytest.mark.parametrize(
    ("command", "permission"), [(command, "deny" if blocked else "allow") for command, blocked in GUARD_CASES]
)
def test_the_cursor_hook_runs_the_guard_on_cursors_terminal(
    command: str, permission: str, bundles: Path
) -> None:
    hook = bundles / "cursor" / ".cursor" / "hooks" / "guard_hook.py"
    hook_input = {"hook_event_name": "beforeShellExecution", "command": command, "cwd": "/tmp"}
    done = _run_hook(hook, "cursor", hook_input)
    assert done.returncode == 0, done.stderr
    reply = json.loads(done.stdout)
    assert reply["permission"] == permission
    if permission == "deny":
        assert "tpu-agent" in reply["agent_message"] and reply["user_message"] == reply["agent_message"]


@pytest.mark.parametrize(("command", "blocked"), GUARD_CASES)
def test_the_codex_hook_runs_the_guard_on_codexs_shell_tool(
    command: str, blocked: bool, bundles: Path
) -> None:
    hook = bundles / "codex" / "hooks" / "deny_approvals.py"
    hook_input = {"hook_event_name": "PreToolUse", "tool_name": "Bash", "tool_input": {"command": command}}
    done = run_text([sys.executable, str(hook)], input=json.dumps(hook_input))
    assert done.returncode == (2 if blocked else 0), done.stderr
    assert ("tpu-agent guard" in done.stderr) is blocked


def test_the_bundle_command_writes_a_bundle_and_lists_it(tmp_path: Path, source: CanonicalSource) -> None:
    result = CliRunner().invoke(app, ["bundle", "--harness", "codex", "--out", str(tmp_path), "--json"])
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    expected = build_bundle("codex", source)
    assert payload["harness"] == "codex" and payload["files"] == [f.path for f in expected]
    assert len(payload["written"]) == len(expected)
    for item in expected:
        assert (tmp_path / item.path).read_bytes() == item.content
    again = CliRunner().invoke(app, ["bundle", "--harness", "codex", "--out", str(tmp_path), "--json"])
    assert json.loads(again.stdout)["written"] == []  # unchanged files are left alone
    bad = CliRunner().invoke(app, ["bundle", "--harness", "emacs"])
    assert bad.exit_code == 2


def test_the_command_offers_every_harness_the_runtime_builds() -> None:
    from tpu_runtime.cli.bundle_cmd import HarnessChoice

    assert [choice.value for choice in HarnessChoice] == list(HARNESSES)


# --- the real clients ----------------------------------------------------------------------------------


def _tool(env_name: str, program: str) -> str | None:
    named = os.environ.get(env_name)
    if named:
        return named if Path(named).is_file() else shutil.which(named)
    return shutil.which(program)


def _env(home: Path, **extra: str) -> dict[str, str]:
    home.mkdir(parents=True, exist_ok=True)
    return {
        "HOME": str(home),
        "PATH": os.pathsep.join([BIN_DIR, os.environ.get("PATH", "")]),
        **SAFE_ENV,
        **extra,
    }


def _codex_env(tmp_path: Path, bundle: Path) -> dict[str, str]:
    """Codex's environment: a CODEX_HOME holding only the bundle's config.toml, and an empty HOME."""
    codex_home = tmp_path / "codex-home"
    codex_home.mkdir()
    shutil.copy(bundle / "config.toml", codex_home / "config.toml")
    return _env(tmp_path / "home", CODEX_HOME=str(codex_home))


def _run(args: list[str], env: dict[str, str], cwd: Path, timeout: int = 180) -> str:
    done = subprocess.run(
        args, cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
    )
    output = done.stdout + done.stderr
    assert done.returncode == 0, output
    return output


def _json_line(output: str) -> dict[str, object]:
    """The one JSON line of a command's output (Codex may add warnings on other lines)."""
    line = next(row for row in output.splitlines() if row.startswith("{"))
    parsed: dict[str, object] = json.loads(line)
    return parsed


GEMINI = _tool("TPU_AGENT_GEMINI_BIN", "gemini")
CODEX = _tool("TPU_AGENT_CODEX_BIN", "codex")
CLAUDE = _tool("TPU_AGENT_CLAUDE_BIN", "claude")
needs_gemini = pytest.mark.skipif(
    GEMINI is None,
    reason="the Gemini CLI is not installed (npm install @google/gemini-cli; put `gemini` on PATH or set "
    "TPU_AGENT_GEMINI_BIN)",
)
needs_codex = pytest.mark.skipif(
    CODEX is None,
    reason="the Codex CLI is not installed (npm install @openai/codex; put `codex` on PATH or set "
    "TPU_AGENT_CODEX_BIN)",
)
needs_claude = pytest.mark.skipif(
    CLAUDE is None,
    reason="the Claude Code CLI is not installed (npm install @anthropic-ai/claude-code; put `claude` on "
    "PATH or set TPU_AGENT_CLAUDE_BIN)",
)


@needs_gemini
@pytest.mark.slow
def test_gemini_validates_installs_and_connects_the_extension(
    tmp_path: Path, source: CanonicalSource, bundles: Path
) -> None:
    assert GEMINI is not None
    bundle = bundles / "gemini-cli"
    home = tmp_path / "home"
    (home / ".gemini").mkdir(parents=True)
    (home / ".gemini" / "trustedFolders.json").write_text(json.dumps({str(bundle): "TRUST_FOLDER"}))
    env = _env(home)
    assert "successfully validated" in _run([GEMINI, "extensions", "validate", str(bundle)], env, tmp_path)
    _run([GEMINI, "extensions", "install", str(bundle), "--consent"], env, tmp_path)
    listed = _run([GEMINI, "extensions", "list"], env, tmp_path)
    assert "tpu-agent (0.1.0)" in listed or f"tpu-agent ({source.version})" in listed
    for skill in source.skills:
        assert f"{skill.name}:" in listed
    assert "run_shell_command(tpu-agent approvals approve)" in listed

    def status() -> dict[str, str]:
        listed = _run([GEMINI, "mcp", "list"], env, tmp_path)
        found = {}
        for server in source.servers:
            line = next((row for row in listed.splitlines() if f" {server.key} (from tpu-agent)" in row), "")
            found[server.key] = line.rstrip()
        return found

    # Gemini gives each server a few seconds to answer; on a busy machine a cold start can miss that
    # once, so a server that is listed but not yet connected is asked once more before it counts.
    found = status()
    if not all(line.endswith("Connected") for line in found.values()):
        found = status()
    assert all(found.values()), found
    assert all(line.endswith("Connected") for line in found.values()), found


@pytest.mark.slow
@needs_codex
def test_codex_reads_the_config_rules_and_agents_file(
    tmp_path: Path, source: CanonicalSource, bundles: Path
) -> None:
    assert CODEX is not None
    bundle = bundles / "codex"
    env = _codex_env(tmp_path, bundle)
    table = _run([CODEX, "mcp", "list"], env, tmp_path)
    for server in source.servers:
        row = next((r for r in table.splitlines() if r.startswith(f"{server.key} ")), None)
        assert row is not None, table
        assert f"serve {server.serve_name}" in row and "enabled" in row, row
    rules = str(bundle / "rules" / "tpu-agent.rules")
    for words in DENIED_COMMANDS:
        checked = _run([CODEX, "execpolicy", "check", "--rules", rules, *words, "x"], env, tmp_path)
        assert _json_line(checked)["decision"] == "forbidden", checked
    allowed = _run(
        [CODEX, "execpolicy", "check", "--rules", rules, "tpu-agent", "approvals", "list"], env, tmp_path
    )
    assert _json_line(allowed) == {"matchedRules": []}
    project = tmp_path / "project"
    project.mkdir()
    shutil.copy(bundle / "AGENTS.md", project / "AGENTS.md")
    prompt = _run([CODEX, "debug", "prompt-input", "hello"], env, project)
    assert "Choosing a specialist" in prompt and "tpu-model-onboarding" in prompt


def _codex_server_status(codex: str, env: dict[str, str], cwd: Path) -> list[dict[str, Any]]:
    """Codex's app server (JSON-RPC over stdio) starts every configured MCP server for
    `mcpServerStatus/list` and reports what each one serves; no model or account is involved."""
    requests = [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"clientInfo": {"name": "t", "version": "0"}},
        },
        {"jsonrpc": "2.0", "method": "initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "mcpServerStatus/list", "params": {}},
    ]
    proc = subprocess.Popen(
        [codex, "app-server"],
        cwd=cwd,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
    )
    assert proc.stdin is not None and proc.stdout is not None
    try:
        proc.stdin.write("".join(json.dumps(r) + "\n" for r in requests))
        proc.stdin.flush()
        deadline = time.monotonic() + 150
        while time.monotonic() < deadline:
            ready, _, _ = select.select([proc.stdout], [], [], 1.0)
            if not ready:
                continue
            line = proc.stdout.readline()
            assert line, "codex app-server closed its output before answering"
            message = json.loads(line)
            if message.get("id") == 2:
                assert "error" not in message, message
                data: list[dict[str, Any]] = message["result"]["data"]
                return data
        raise AssertionError("codex app-server did not answer mcpServerStatus/list in 150 s")
    finally:
        proc.kill()
        proc.wait(timeout=30)


@needs_codex
@pytest.mark.slow
def test_codex_connects_every_server(tmp_path: Path, source: CanonicalSource, bundles: Path) -> None:
    assert CODEX is not None
    env = _codex_env(tmp_path, bundles / "codex")
    status = {entry["name"]: entry for entry in _codex_server_status(CODEX, env, tmp_path)}
    assert set(status) == {s.key for s in source.servers}, sorted(status)
    for server in source.servers:
        entry = status[server.key]
        assert entry["serverInfo"]["name"] == server.key, entry.get("serverInfo")
        assert entry["tools"], f"{server.key} connected but served no tools"
    assert {"onboard_model", "op_status"} <= set(status["tpu-onboarding"]["tools"])


@pytest.mark.slow
@needs_claude
def test_claude_validates_a_plugin_written_elsewhere(tmp_path: Path) -> None:
    assert CLAUDE is not None
    out = tmp_path / "plugin"
    result = CliRunner().invoke(app, ["bundle", "--harness", "claude-code", "--out", str(out)])
    assert result.exit_code == 0, result.output
    env = _env(
        tmp_path / "home",
        DISABLE_AUTOUPDATER="1",
        DISABLE_TELEMETRY="1",
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1",
    )
    for target in (".", ".claude-plugin/plugin.json"):
        output = _run([CLAUDE, "plugin", "validate", target, "--strict"], env, out, timeout=120)
        assert "Validation passed" in output
        assert "warning" not in output.lower() and "error" not in output.lower(), output
