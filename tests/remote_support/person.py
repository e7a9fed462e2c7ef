"""The person, played by the tests: an approver key made with a known passphrase.

Engine-level tests unlock the key in-process with the passphrase, as the CLI does after the person typed
it; tests of the CLI type it into a real pseudo-terminal (`tests/security/pty_person.py`). There is no
passphrase source for tests in the product itself. The key uses a cheap scrypt setting so each unlock
takes milliseconds.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import TYPE_CHECKING

from tpu_runtime.remote import approver, policy

if TYPE_CHECKING:
    from tpu_runtime.remote.approvals import Approval
    from tpu_runtime.remote.engine import RemoteEngine

PASSPHRASE = "correct horse battery staple"
TEST_COST = 2**14


def make_key(folder: Path) -> approver.UnlockedApprover:
    """Create the person's approver key in `folder` and return it unlocked."""
    approver.init_key(folder, PASSPHRASE, cost=TEST_COST)
    return approver.unlock(folder, PASSPHRASE)


_UNLOCKED: dict[Path, approver.UnlockedApprover] = {}


def unlocked(folder: Path) -> approver.UnlockedApprover:
    """The person's key in `folder`, made on first use, unlocked once per test session."""
    if folder not in _UNLOCKED or approver.load_public(folder) != _UNLOCKED[folder].key:
        if approver.load_public(folder) is None:
            _UNLOCKED[folder] = make_key(folder)
        else:
            _UNLOCKED[folder] = approver.unlock(folder, PASSPHRASE)
    return _UNLOCKED[folder]


def approve(
    engine: RemoteEngine,
    request_id: str,
    digest: str | None = None,
    approver_name: str = "tester@tty",
    via: str = "cli",
) -> Approval:
    """The person reads the request and approves it with their passphrase."""
    request = engine.get_request(request_id)
    return engine.approve(
        request_id, approver_name, digest or request.digest, via=via, key=unlocked(engine.approver_path)
    )


def sign_policy(engine: RemoteEngine) -> None:
    """The person signs the policy file as it is now."""
    policy.sign_policy(engine.policy_path, unlocked(engine.approver_path))


def farm_key_dir(session: Path) -> Path:
    """One approver key per sshd farm: its workers' gates pin the first key they see."""
    return session.parent / f"{session.name}-approver"


def share_key(source: Path, home: Path) -> Path:
    """Put the person's key into `home/approver` (a TPU_AGENT_HOME), as if they had made it there."""
    unlocked(source)
    folder = home / "approver"
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    shutil.copy2(approver.key_path(source), approver.key_path(folder))
    return folder
