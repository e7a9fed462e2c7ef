#!/usr/bin/env bash
# Set up an environment and run every check: ruff, mypy, and pytest inside a loopback-only network
# namespace, so no test can reach the metadata server or any other host.
#   VENV=path   the environment to use or create (default .venv)
#   FRESH=1     delete it first
set -euo pipefail
cd "$(dirname "$0")/.."
VENV="${VENV:-.venv}"
export TPU_SKIP_MDS_QUERY=1 JAX_PLATFORMS=cpu HF_HUB_OFFLINE=1 ANONYMIZED_TELEMETRY=False MPLBACKEND=Agg
export PYTHONWARNINGS="ignore:<TorchTpu/Performance/TcMalloc/"

# System tools some tests use: a network namespace (iproute2), real sshd processes (openssh-server) and
# a browser for the HTML reports (chromium and a font, driven by Playwright from the test extra).
# As root with apt they are installed; otherwise those tests skip and say why.
need=()
command -v ip >/dev/null || need+=(iproute2)
[ -x /usr/sbin/sshd ] || need+=(openssh-server)
command -v chromium >/dev/null || command -v chromium-browser >/dev/null || need+=(chromium fonts-liberation)
if [ ${#need[@]} -gt 0 ] && [ "$(id -u)" = 0 ] && command -v apt-get >/dev/null; then
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

if [ "${FRESH:-0}" = 1 ]; then rm -rf "$VENV"; fi
if [ ! -x "$VENV/bin/python" ]; then python3.11 -m venv "$VENV" 2>/dev/null || python3 -m venv "$VENV"; fi
# shellcheck disable=SC1091
. "$VENV/bin/activate"
python -m pip install -q --upgrade pip
python -m pip install -q torch==2.13.0          # the CPU build; an unpinned torch pulls a CUDA build
python -m pip install -q -e ".[tpu,test]"

# The real Claude Code, Gemini and Codex CLIs and the MCP Inspector check the bundles and the servers
# (tests skip without npm).
if command -v npm >/dev/null; then
  NPM_TOOLS="${NPM_TOOLS:-$PWD/.npm-tools}"
  npm install --silent --prefix "$NPM_TOOLS" --no-audit --no-fund \
    @anthropic-ai/claude-code@2.1.197 @modelcontextprotocol/inspector@0.15.0 \
    @google/gemini-cli@0.61.0 @openai/codex@0.171.0 >/dev/null 2>&1 \
    || echo "warning: npm could not install claude-code / gemini-cli / codex / mcp inspector; their tests will skip" >&2
  [ -x "$NPM_TOOLS/node_modules/.bin/claude" ] && export TPU_AGENT_CLAUDE_BIN="$NPM_TOOLS/node_modules/.bin/claude"
  [ -x "$NPM_TOOLS/node_modules/.bin/gemini" ] && export TPU_AGENT_GEMINI_BIN="$NPM_TOOLS/node_modules/.bin/gemini"
  [ -x "$NPM_TOOLS/node_modules/.bin/codex" ] && export TPU_AGENT_CODEX_BIN="$NPM_TOOLS/node_modules/.bin/codex"
  [ -x "$NPM_TOOLS/node_modules/.bin/mcp-inspector" ] && export TPU_AGENT_INSPECTOR_BIN="$NPM_TOOLS/node_modules/.bin/mcp-inspector"
fi

echo "== ruff"
ruff check .
ruff format --check .
echo "== mypy"
mypy
echo "== pytest (loopback-only network namespace)"
run_tests='ip link set lo up && python -m pytest -q "$@"'
if unshare -n true 2>/dev/null; then
  unshare -n sh -c "$run_tests" sh "$@"
elif unshare -rn true 2>/dev/null; then
  unshare -rn sh -c "$run_tests" sh "$@"
elif [ "${CI:-}" = true ]; then
  echo "cannot create a network namespace (unshare -n): CI refuses to run tests with network access" >&2
  exit 1
else
  echo "warning: no network namespace available (unshare -n); running tests with the host network" >&2
  python -m pytest -q "$@"
fi
