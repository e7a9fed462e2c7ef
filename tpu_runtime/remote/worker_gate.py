"""The worker-side gate: the last check before an approved command starts on a worker.

The executor sends this file's source as the SSH command (`python3 -I -c SOURCE run`), never anything
taken from the request, and writes the run's bundle (the approved spec, the approval or the signed
policy that allowed it, the secret environment values) to the gate's stdin, so no value ever appears in
a process's argv. Before anything runs, the gate:

1. pins the approver's public key on first use (in `~/.tpu-agent-gate/`, or `$TPU_AGENT_GATE_DIR` when
   the worker's sshd sets it) and refuses any other key afterwards;
2. checks the spec's SHA-256 against the approved digest and verifies the signature with the worker's
   own `ssh-keygen -Y verify` (an approval signed by the person, or a read-only command or an
   elicitation answer that the person's signed policy allows);
3. checks the wrapper script is the one tpu-agent writes for this request (`build_script`: no view
   shows it, so an edited one would run unseen), the command is the approved one (or a planned attempt
   of the approved loop), every uploaded file's SHA-256, each secret against the hash the approval
   covers (and that none is a variable that decides which code runs: `code_loading`), and that this
   approval was not used before on this worker (for this attempt number, which must lie within the
   approved loop's attempt budget), nor is first used after it expired;
4. for a read-only command allowed by policy, checks its paths on this worker: they must resolve inside
   an allowed folder and be regular files (a FIFO would block, a symlink could lead elsewhere);
5. appends a line to its append-only ledger (run, approval, digest, key, the audit log's head at the
   start), which `tpu-agent audit verify --remote` compares with the local audit log;
6. then replaces itself with the approved wrapper script.

It runs on the worker's Python 3 (3.8 or later) with the standard library only; `tpu_runtime.remote.policy`
imports its read-only rule from here, so the executor and the gate judge commands by the same code.
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import math
import os
import posixpath
import shlex
import stat
import subprocess
import sys
import tempfile
import time
from typing import Any, BinaryIO

GATE_VERSION = 1
EXIT_REFUSED = 121  # what the gate exits with when it refuses to start the command
MAX_BUNDLE = 16 * 1024 * 1024
CLOCK_SKEW_S = 300.0
APPROVAL_NAMESPACE = "tpu-agent-approval"
POLICY_NAMESPACE = "tpu-agent-policy"
SIGNER_ID = "tpu-agent-approver"

# ---- the wrapper script (the executor writes it into every spec, through tpu_runtime.remote.wrap) -----
WRAPPER_VERSION = 2
KILL_AFTER_S = 10
EXIT_SETUP_FAILED = 125  # what the wrapper exits with when it cannot make or enter the run folder


def run_dir(remote_dir: str, run_key: str) -> str:
    return posixpath.join(remote_dir, "runs", run_key)


def _seconds(value: float) -> str:
    """`timeout` duration: whole seconds when whole, else up to milliseconds."""
    if value == math.floor(value):
        return str(int(value))
    return f"{value:.3f}".rstrip("0").rstrip(".")


def build_script(*, remote_dir: str, run_key: str, time_limit_s: float) -> str:
    """The wrapper text that goes into the spec and so under the approval digest.

    It carries no environment values: the worker's gate (`worker_gate`) puts the approved environment
    and the secrets into the process environment before it runs this script, so no value shows in `ps`.
    """
    env_words = 'TPU_AGENT_WORKER="$w" TPU_AGENT_WORKER_NAME="$n" TPU_AGENT_ATTEMPT="$a"'
    folder = shlex.quote(run_dir(remote_dir, run_key))
    return "\n".join(
        [
            f"# tpu-agent wrapper v{WRAPPER_VERSION}: own process group, pidfile, time limit",
            "set -u",
            "w=$1 n=$2 a=$3",
            "shift 3",
            f"d={folder}",
            f'mkdir -p -- "$d/files" || exit {EXIT_SETUP_FAILED}',
            f'cd -- "$d/files" || exit {EXIT_SETUP_FAILED}',
            'p="$d/w$w.a$a.pid"',
            'setsid /bin/sh -c \'echo "$$" > "$0" && exec "$@"\' "$p" '
            f'env -- {env_words} timeout -k {KILL_AFTER_S} {_seconds(time_limit_s)} "$@" &',
            'wait "$!"',
            "s=$?",
            'rm -f -- "$p"',
            'exit "$s"',
        ]
    )


def script_problem(spec: dict[str, Any], request_id: str) -> str | None:
    """Why the spec's wrapper script is not the one tpu-agent writes for it, or None.

    No view shows the script (it is ours, not the requester's), so one edited into a stored request
    would run unseen: the executor refuses to sign or start it, and the gate refuses to run it.
    """
    if spec.get("target_kind") in ("gke", "ray"):
        return None if not spec.get("script") else "a GKE or Ray request carries no wrapper script"
    wanted = build_script(
        remote_dir=str(spec.get("remote_dir")), run_key=request_id, time_limit_s=float(spec["time_limit_s"])
    )
    if spec.get("script") != wanted:
        return "its wrapper script is not the one tpu-agent writes (it was edited after the request was made)"
    return None


# ---- the read-only rule (also used by the executor, through tpu_runtime.remote.policy) -------------------
MAX_AUTO_TIME_LIMIT_S = 600.0  # the CLI default; none of these commands needs longer
LS_FLAGS = set("lahtrS1d")
DF_FLAGS = {"-h", "-H", "-k", "-T", "-i", "-l", "-P"}
FREE_FLAGS = {"-h", "-b", "-k", "-m", "-g", "-t", "-w", "--si"}
MAX_TAIL_LINES = 100000


# Variables that decide which programs, libraries or startup code run. A view shows a plain one and
# flags it; as a secret (a value no view shows) the executor and this gate refuse it.
CODE_LOADING_PREFIXES = ("LD_", "DYLD_", "PYTHON", "BASH_FUNC_")
CODE_LOADING_NAMES = {
    "PATH",
    "HOME",
    "IFS",
    "ENV",
    "BASH_ENV",
    "BASHOPTS",
    "SHELLOPTS",
    "PS4",
    "PROMPT_COMMAND",
    "PERL5LIB",
    "PERL5OPT",
    "PERLLIB",
    "RUBYLIB",
    "RUBYOPT",
    "NODE_OPTIONS",
    "NODE_PATH",
    "JAVA_TOOL_OPTIONS",
    "_JAVA_OPTIONS",
    "GCONV_PATH",
    "TPU_LIBRARY_PATH",
}


def code_loading(name: str) -> bool:
    """Whether a variable of this name changes which code runs (a loader, shell or interpreter hook)."""
    upper = name.upper()
    return upper in CODE_LOADING_NAMES or upper.startswith(CODE_LOADING_PREFIXES)


def _has_control(text: str) -> bool:
    return any(ord(ch) < 32 or ord(ch) == 127 for ch in text)


def under_any(path: str, folders: list[str]) -> bool:
    """A remote path given as text (absolute or `~/...`) lies in one of the folders, with no `..`."""
    if _has_control(path) or not (path.startswith("/") or path.startswith("~/")):
        return False
    if ".." in path.split("/"):
        return False
    norm = posixpath.normpath(path)
    for folder in folders:
        root = posixpath.normpath(folder)
        if norm == root or norm.startswith(root.rstrip("/") + "/"):
            return True
    return False


def _paths_ok(paths: list[str], log_dirs: list[str]) -> bool:
    return bool(paths) and all(under_any(p, log_dirs) for p in paths)


def _ls_paths(args: list[str], log_dirs: list[str]) -> list[str] | None:
    flags = [a for a in args if a.startswith("-")]
    paths = [a for a in args if not a.startswith("-")]
    if any(len(f) < 2 or f.startswith("--") or not set(f[1:]) <= LS_FLAGS for f in flags):
        return None
    return paths if _paths_ok(paths, log_dirs) else None


def _tail_paths(args: list[str], log_dirs: list[str]) -> list[str] | None:
    paths = []
    i = 0
    while i < len(args):
        arg = args[i]
        if arg == "-n" and i + 1 < len(args) and args[i + 1].isdigit():
            if int(args[i + 1]) > MAX_TAIL_LINES:
                return None
            i += 2
            continue
        if arg.startswith("-"):
            return None  # -f would never end; other flags are not needed to read a log
        paths.append(arg)
        i += 1
    return paths if _paths_ok(paths, log_dirs) else None


def readonly_paths(spec: dict[str, Any], read_only: dict[str, Any]) -> tuple[str, list[str]] | None:
    """(rule name, paths it reads) when the read-only policy lets this spec run unasked, else None.

    `spec` is the spec as JSON data, `read_only` the policy's `read_only` section as JSON data.
    """
    if not read_only.get("enabled"):
        return None
    targets = read_only.get("targets")
    if targets is not None and spec.get("target") not in targets:
        return None
    if spec.get("target_kind") in ("gke", "ray") or spec.get("env") or spec.get("secret_env"):
        return None
    if spec.get("uploads") or spec.get("downloads") or spec.get("loop") is not None:
        return None
    if float(spec.get("time_limit_s", 0)) > MAX_AUTO_TIME_LIMIT_S:
        return None
    command = list(spec.get("command") or [])
    if not command:
        return None
    program, args = command[0], command[1:]
    log_dirs = list(read_only.get("log_dirs") or [])
    paths: list[str] | None = None
    if program == "tpu-info":
        paths = [] if args in ([], ["--version"]) else None
    elif program == "df":
        paths = [] if set(args) <= DF_FLAGS else None
    elif program == "free":
        paths = [] if set(args) <= FREE_FLAGS else None
    elif program == "ls":
        paths = _ls_paths(args, log_dirs)
    elif program == "cat":
        paths = None if any(a.startswith("-") for a in args) or not _paths_ok(args, log_dirs) else list(args)
    elif program == "tail":
        paths = _tail_paths(args, log_dirs)
    if paths is None:
        return None
    return "policy:read_only:" + program, paths


def check_paths_here(program: str, paths: list[str], log_dirs: list[str], home: str) -> str | None:
    """On the worker: each path must resolve inside an allowed folder and be a regular file (or, for
    `ls`, a folder). Returns the first problem, or None."""
    roots = []
    for folder in log_dirs:
        expanded = posixpath.join(home, folder[2:]) if folder.startswith("~/") else folder
        roots.append(os.path.realpath(expanded))
    for path in paths:
        expanded = posixpath.join(home, path[2:]) if path.startswith("~/") else path
        real = os.path.realpath(expanded)
        if not any(real == root or real.startswith(root.rstrip("/") + "/") for root in roots):
            return "%s resolves to %s, outside the allowed log folders" % (path, real)
        try:
            mode = os.stat(real).st_mode
        except OSError as exc:
            return "%s cannot be read: %s" % (path, exc.strerror)
        if stat.S_ISREG(mode) or (program == "ls" and stat.S_ISDIR(mode)):
            continue
        return "%s is not a regular file (a FIFO, device or socket could block or leak)" % path
    return None


# ---- the gate ----------------------------------------------------------------------------------------------
class Refused(Exception):
    pass


def canonical(data: Any) -> str:
    return json.dumps(data, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def gate_dir() -> str:
    folder = os.environ.get("TPU_AGENT_GATE_DIR") or os.path.join(os.path.expanduser("~"), ".tpu-agent-gate")
    os.makedirs(folder, mode=0o700, exist_ok=True)
    os.chmod(folder, 0o700)
    return folder


def _key_words(line: str) -> tuple[str, str]:
    words = line.split()
    if len(words) < 2 or words[0] != "ssh-ed25519":
        raise Refused("the approver key is not an Ed25519 public key")
    return words[0], words[1]


def _ssh_keygen_verify(folder: str, key_line: str, namespace: str, message: bytes, signature: str) -> bool:
    kind, b64 = _key_words(key_line)
    work = tempfile.mkdtemp(prefix="verify-", dir=folder)
    try:
        signers = os.path.join(work, "allowed_signers")
        with open(signers, "w") as handle:
            handle.write('%s namespaces="%s" %s %s\n' % (SIGNER_ID, namespace, kind, b64))
        sig = os.path.join(work, "sig")
        with open(sig, "w") as handle:
            handle.write(signature)
        try:
            done = subprocess.run(
                ["ssh-keygen", "-Y", "verify", "-f", signers, "-I", SIGNER_ID, "-n", namespace, "-s", sig],
                input=message,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                timeout=30,
            )
        except (OSError, subprocess.SubprocessError) as exc:
            raise Refused("cannot run ssh-keygen to verify the approval: %s" % exc) from None
        return done.returncode == 0
    finally:
        for name in os.listdir(work):
            os.unlink(os.path.join(work, name))
        os.rmdir(work)


def _ledger(folder: str) -> tuple[str, list[dict[str, Any]]]:
    path = os.path.join(folder, "ledger.jsonl")
    entries = []
    if os.path.exists(path):
        with open(path, encoding="utf-8") as handle:
            for line in handle:
                line = line.strip()
                if line:
                    try:
                        entries.append(json.loads(line))
                    except ValueError:
                        entries.append({"unreadable": line[:200]})
    return path, entries


def _append(path: str, entry: dict[str, Any]) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    try:
        os.write(fd, (canonical(entry) + "\n").encode("utf-8"))
        os.fsync(fd)
    finally:
        os.close(fd)


def _pinned_key(folder: str, offered: str, ledger_path: str) -> str:
    path = os.path.join(folder, "approver.pub")
    if os.path.exists(path):
        with open(path) as handle:
            pinned = handle.read().strip()
        if _key_words(pinned) != _key_words(offered):
            raise Refused(
                "the approval was signed with a key that is not the approver key pinned on this worker "
                "(%s); nothing ran" % path
            )
        return pinned
    _key_words(offered)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        handle.write(offered.strip() + "\n")
    _append(ledger_path, {"event": "pin", "ts": time.time(), "key": offered.strip()})
    return offered.strip()


def _sha256_file(path: str) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as handle:
        for block in iter(lambda: handle.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def check(bundle: dict[str, Any], folder: str, now: float) -> tuple[dict[str, Any], dict[str, Any], str]:
    """Every check before the command starts; returns (spec, ledger entry). Raises Refused."""
    spec_json = bundle["spec"]
    digest = "sha256:" + hashlib.sha256(spec_json.encode("utf-8")).hexdigest()
    if digest != bundle.get("digest"):
        raise Refused("the spec sent does not hash to the approved digest")
    spec = json.loads(spec_json)
    problem = script_problem(spec, str(bundle.get("request")))
    if problem:
        raise Refused("the spec's " + problem.replace("its ", "", 1))
    ledger_path, entries = _ledger(folder)
    key = _pinned_key(folder, bundle["key"], ledger_path)
    kind = bundle.get("kind")
    approval = bundle.get("approval") or {}
    policy = None
    if bundle.get("policy"):
        if not _ssh_keygen_verify(
            folder,
            key,
            POLICY_NAMESPACE,
            bundle["policy"]["json"].encode("utf-8"),
            bundle["policy"]["signature"],
        ):
            raise Refused("the policy sent is not signed by the pinned approver key")
        policy = json.loads(bundle["policy"]["json"])
    if kind == "person":
        statement = json.loads(approval.get("statement") or "{}")
        for field in ("id", "request", "digest", "approver", "expires_at"):
            if statement.get(field) != approval.get(field):
                raise Refused("the approval's %s does not match its signed statement" % field)
        if statement.get("digest") != digest:
            raise Refused("the approval was signed for another digest")
        if not _ssh_keygen_verify(
            folder,
            key,
            APPROVAL_NAMESPACE,
            approval["statement"].encode("utf-8"),
            approval.get("signature", ""),
        ):
            raise Refused("the approval's signature does not verify with the pinned approver key")
    elif kind == "policy":
        if policy is None:
            raise Refused("a policy-approved run came without the signed policy")
        found = readonly_paths(spec, policy.get("read_only") or {})
        if found is None or found[0] != approval.get("approver"):
            raise Refused("the signed policy does not allow this command without the person")
        problem = check_paths_here(
            spec["command"][0], found[1], policy["read_only"].get("log_dirs") or [], os.path.expanduser("~")
        )
        if problem:
            raise Refused(problem)
    elif kind == "elicitation":
        if policy is None or not (policy.get("approvals") or {}).get("elicitation"):
            raise Refused("the person's signed policy requires terminal approval (no dialog answers)")
    else:
        raise Refused("unknown approval kind %r" % kind)
    if approval.get("request") and approval.get("request") != bundle.get("request"):
        raise Refused("the approval is for another request")
    argv = list(bundle["argv"])
    loop = spec.get("loop")
    allowed = [list(a) for a in loop["attempts"]] if loop else [list(spec["command"])]
    if argv not in allowed:
        raise Refused("the command is not the approved one")
    worker, attempt = int(bundle["worker"]), int(bundle["attempt"])
    if (loop and not 1 <= attempt <= int(loop["max_attempts"])) or (not loop and attempt != 0):
        raise Refused("attempt %d is outside the approved budget" % attempt)
    names = {int(w["index"]): w["name"] for w in spec.get("workers") or []}
    if names.get(worker) != bundle.get("worker_name"):
        raise Refused("worker %d is not one of the approved workers" % worker)
    secrets_given = bundle.get("secrets") or {}
    wanted = spec.get("secret_env") or {}
    if sorted(secrets_given) != sorted(wanted):
        raise Refused("the secret environment sent is not the approved set of names")
    for name in wanted:
        if code_loading(name):
            raise Refused("%s decides which code runs, so it cannot be a secret (a value nobody saw)" % name)
    for name, ref in wanted.items():
        value = secrets_given[name]
        if hashlib.sha256((ref["salt"] + "\0" + value).encode("utf-8")).hexdigest() != ref["sha256"]:
            raise Refused("secret %s is not the value the approval covers" % name)
    base = posixpath.join(spec["remote_dir"], "runs", bundle["request"], "files")
    for up in spec.get("uploads") or []:
        path = posixpath.join(base, up["dest"])
        try:
            mode = os.lstat(path).st_mode
        except OSError:
            raise Refused("uploaded file %s is missing" % up["dest"]) from None
        if not stat.S_ISREG(mode):
            raise Refused("uploaded file %s is not a regular file" % up["dest"])
        if _sha256_file(path) != up["sha256"]:
            raise Refused("uploaded file %s is not the approved bytes (SHA-256 differs)" % up["dest"])
    used = [
        e
        for e in entries
        if e.get("event") == "start" and e.get("approval") == approval.get("id") and approval.get("id")
    ]
    if any(e.get("attempt") == attempt and e.get("worker") == worker for e in used):
        raise Refused("approval %s was already used on this worker: replay refused" % approval.get("id"))
    expires = approval.get("expires_at")
    if expires is not None:
        first = min([float(e["ts"]) for e in used] or [now])
        limit = float(expires) + CLOCK_SKEW_S
        if loop and used:
            limit = first + float(loop["max_seconds"]) + CLOCK_SKEW_S
        if now > limit:
            raise Refused("approval %s expired before it was used here" % approval.get("id"))
    audit_anchor = bundle.get("audit") or {}
    entry = {
        "event": "start",
        "ts": now,
        "run": bundle["run_id"],
        "request": bundle["request"],
        "approval": approval.get("id"),
        "kind": kind,
        "approver": approval.get("approver"),
        "digest": digest,
        "worker": worker,
        "attempt": attempt,
        "key": key.split()[1][-16:],
        "audit_seq": audit_anchor.get("seq"),
        "audit_hash": audit_anchor.get("hash"),
        "audit_log": audit_anchor.get("log"),
    }
    return spec, entry, ledger_path


def run(stdin: BinaryIO, folder: str) -> None:
    raw = stdin.read(MAX_BUNDLE + 1)
    if len(raw) > MAX_BUNDLE:
        raise Refused("the run bundle is too large")
    try:
        bundle = json.loads(raw.decode("utf-8"))
    except ValueError:
        raise Refused("the run bundle is not JSON") from None
    with open(os.path.join(folder, "lock"), "a") as lock:
        fcntl.flock(lock.fileno(), fcntl.LOCK_EX)  # one check-and-record at a time per gate folder
        spec, entry, ledger_path = check(bundle, folder, time.time())
        _append(ledger_path, entry)
    env = dict(os.environ)
    env.pop("TPU_AGENT_GATE_DIR", None)
    env.update(spec.get("env") or {})
    env.update(bundle.get("secrets") or {})
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    words = [str(bundle["worker"]), bundle["worker_name"], str(bundle["attempt"]), *list(bundle["argv"])]
    os.execve("/bin/sh", ["/bin/sh", "-c", spec["script"], "tpu-agent", *words], env)


def show(folder: str) -> None:
    path = os.path.join(folder, "approver.pub")
    pinned = None
    if os.path.exists(path):
        with open(path) as handle:
            pinned = handle.read().strip()
    print(canonical({"gate": GATE_VERSION, "pinned": pinned, "ledger": _ledger(folder)[1]}))


def main(argv: list[str]) -> int:
    try:
        folder = gate_dir()
        if argv[1:2] == ["show"]:
            show(folder)
            return 0
        run(sys.stdin.buffer, folder)
    except Refused as exc:
        sys.stderr.write("tpu-agent gate: refused: %s\n" % exc)
        return EXIT_REFUSED
    except (KeyError, TypeError, ValueError, OSError) as exc:
        sys.stderr.write(
            "tpu-agent gate: refused: malformed run bundle (%s: %s)\n" % (type(exc).__name__, exc)
        )
        return EXIT_REFUSED
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
