"""The person's approver key: what makes an approval something only the person can give.

A coding agent runs shell commands as the same user, so anything it can read or write (the state
database, the policy file, a terminal it fakes with a pseudo-terminal) cannot be what proves that the
person said yes. What it does not have is the passphrase the person types. So:

- `tpu-agent approver init` makes an Ed25519 key pair; the private key is stored encrypted under the
  passphrase (scrypt, then AES-256-GCM with the public key as associated data), never in clear, and the
  passphrase is never stored nor passed through MCP or JSON.
- Each approval is a signature over a statement (request, digest, approver, expiry, approval id); the
  executor and the worker-side gate verify it against the pinned public key before anything starts.
- Replacing the key (`approver init --replace`, which asks for the old passphrase) has the old key sign
  the new one; the audit log records it, so a key file replaced any other way is not trusted.
- Signatures are OpenSSH signatures (the SSHSIG format of
  https://github.com/openssh/openssh-portable/blob/master/PROTOCOL.sshsig), so a worker verifies them
  with its own `ssh-keygen -Y verify`, without our code or any Python package installed there.

The cryptography is `cryptography`'s (Ed25519, scrypt, AES-GCM); this module only lays out bytes.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import json
import os
import secrets
import struct
from pathlib import Path

from cryptography.exceptions import InvalidSignature, InvalidTag
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives.kdf.scrypt import Scrypt
from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat
from pydantic import BaseModel

from tpu_runtime.errors import Denied

KEY_FILE = "approver.key"
KEY_VERSION = 1
SCRYPT_N = 2**17  # about 0.8 s and 128 MiB per unlock: slow for guessing, fine once per approval
SCRYPT_R = 8
SCRYPT_P = 1
MIN_PASSPHRASE = 8
APPROVAL_NAMESPACE = "tpu-agent-approval"
POLICY_NAMESPACE = "tpu-agent-policy"
KEY_NAMESPACE = "tpu-agent-key"  # an old key endorsing the key that replaces it
SIGNER_ID = "tpu-agent-approver"
KEY_COMMENT = "tpu-agent-approver"
ARMOR_BEGIN = "-----BEGIN SSH SIGNATURE-----"
ARMOR_END = "-----END SSH SIGNATURE-----"


class ApproverError(Denied):
    """No key, a wrong passphrase, an unreadable key file or a bad signature; the message is one line."""


class ApproverKey(BaseModel):
    """The public half: what the executor and the workers pin and verify against."""

    public_line: str  # 'ssh-ed25519 AAAA... tpu-agent-approver'

    @property
    def fingerprint(self) -> str:
        return fingerprint(self.public_line)


def fingerprint(public_line: str) -> str:
    """OpenSSH-style SHA256 fingerprint of a public key line."""
    try:
        blob = base64.b64decode(public_line.split()[1], validate=True)
    except (IndexError, ValueError):
        return "unreadable key"
    return "SHA256:" + base64.b64encode(hashlib.sha256(blob).digest()).decode().rstrip("=")


def _string(data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + data


def _read_string(blob: bytes, at: int) -> tuple[bytes, int]:
    if at + 4 > len(blob):
        raise ApproverError("signature is truncated")
    (size,) = struct.unpack(">I", blob[at : at + 4])
    end = at + 4 + size
    if end > len(blob):
        raise ApproverError("signature is truncated")
    return blob[at + 4 : end], end


def _public_blob(public: Ed25519PublicKey) -> bytes:
    raw = public.public_bytes(Encoding.Raw, PublicFormat.Raw)
    return _string(b"ssh-ed25519") + _string(raw)


def _public_line(public: Ed25519PublicKey) -> str:
    return f"ssh-ed25519 {base64.b64encode(_public_blob(public)).decode()} {KEY_COMMENT}"


def _public_from_line(line: str) -> Ed25519PublicKey:
    try:
        kind, b64 = line.split()[:2]
        blob = base64.b64decode(b64, validate=True)
        name, at = _read_string(blob, 0)
        raw, at = _read_string(blob, at)
    except (ValueError, ApproverError):
        raise ApproverError("the approver public key cannot be read") from None
    if kind != "ssh-ed25519" or name != b"ssh-ed25519" or len(raw) != 32 or at != len(blob):
        raise ApproverError("the approver public key is not an Ed25519 key")
    return Ed25519PublicKey.from_public_bytes(raw)


def _signed_data(namespace: str, message: bytes) -> bytes:
    return (
        b"SSHSIG"
        + _string(namespace.encode())
        + _string(b"")
        + _string(b"sha512")
        + _string(hashlib.sha512(message).digest())
    )


class UnlockedApprover:
    """The private key, decrypted in this process only for as long as one approval takes."""

    def __init__(self, private: Ed25519PrivateKey) -> None:
        self._private = private
        self.key = ApproverKey(public_line=_public_line(private.public_key()))

    def sign(self, message: bytes, namespace: str = APPROVAL_NAMESPACE) -> str:
        """An armored OpenSSH signature over `message` (what `ssh-keygen -Y sign` would write)."""
        signature = self._private.sign(_signed_data(namespace, message))
        blob = (
            b"SSHSIG"
            + struct.pack(">I", 1)
            + _string(_public_blob(self._private.public_key()))
            + _string(namespace.encode())
            + _string(b"")
            + _string(b"sha512")
            + _string(_string(b"ssh-ed25519") + _string(signature))
        )
        text = base64.b64encode(blob).decode()
        lines = [text[i : i + 70] for i in range(0, len(text), 70)]
        return "\n".join([ARMOR_BEGIN, *lines, ARMOR_END]) + "\n"


def verify(public_line: str, message: bytes, armored: str, namespace: str = APPROVAL_NAMESPACE) -> bool:
    """Whether `armored` is a valid signature by this exact key over `message` in `namespace`."""
    try:
        public = _public_from_line(public_line)
        body = armored.strip()
        if not body.startswith(ARMOR_BEGIN) or not body.endswith(ARMOR_END):
            return False
        blob = base64.b64decode("".join(body[len(ARMOR_BEGIN) : -len(ARMOR_END)].split()), validate=True)
        if blob[:6] != b"SSHSIG" or struct.unpack(">I", blob[6:10])[0] != 1:
            return False
        signer, at = _read_string(blob, 10)
        ns, at = _read_string(blob, at)
        _reserved, at = _read_string(blob, at)
        hash_alg, at = _read_string(blob, at)
        sig_blob, at = _read_string(blob, at)
        if at != len(blob) or signer != _public_blob(public) or ns != namespace.encode():
            return False
        if hash_alg != b"sha512":
            return False
        kind, pos = _read_string(sig_blob, 0)
        raw, pos = _read_string(sig_blob, pos)
        if kind != b"ssh-ed25519" or pos != len(sig_blob):
            return False
        public.verify(raw, _signed_data(namespace, message))
    except (ApproverError, ValueError, struct.error, InvalidSignature):
        return False
    return True


def _kdf(passphrase: str, salt: bytes, n: int, r: int, p: int) -> bytes:
    return Scrypt(salt=salt, length=32, n=n, r=r, p=p).derive(passphrase.encode())


def key_path(folder: Path) -> Path:
    return folder / KEY_FILE


def load_public(folder: Path) -> ApproverKey | None:
    """The pinned public key, or None when no approver key was made yet."""
    path = key_path(folder)
    if not path.is_file():
        return None
    try:
        data = json.loads(path.read_text())
        line = str(data["public"])
        _public_from_line(line)
    except (OSError, ValueError, KeyError, TypeError, ApproverError):
        raise ApproverError(f"{path} cannot be read: make a new key with `tpu-agent approver init`") from None
    return ApproverKey(public_line=line)


def init_key(folder: Path, passphrase: str, *, replace: bool = False, cost: int = SCRYPT_N) -> ApproverKey:
    """Make a key pair and store the private half encrypted under `passphrase` (file 0600, folder 0700)."""
    if len(passphrase) < MIN_PASSPHRASE:
        raise ApproverError(f"the passphrase must have at least {MIN_PASSPHRASE} characters")
    path = key_path(folder)
    if path.exists() and not replace:
        raise ApproverError(f"an approver key already exists at {path}")
    private = Ed25519PrivateKey.generate()
    line = _public_line(private.public_key())
    salt, nonce = secrets.token_bytes(16), secrets.token_bytes(12)
    raw = private.private_bytes_raw()
    sealed = AESGCM(_kdf(passphrase, salt, cost, SCRYPT_R, SCRYPT_P)).encrypt(nonce, raw, line.encode())
    record = {
        "version": KEY_VERSION,
        "public": line,
        "kdf": {
            "name": "scrypt",
            "n": cost,
            "r": SCRYPT_R,
            "p": SCRYPT_P,
            "salt": base64.b64encode(salt).decode(),
        },
        "cipher": "aes-256-gcm",
        "nonce": base64.b64encode(nonce).decode(),
        "sealed": base64.b64encode(sealed).decode(),
    }
    folder.mkdir(parents=True, exist_ok=True, mode=0o700)
    os.chmod(folder, 0o700)
    partial = folder / f".{KEY_FILE}.{secrets.token_hex(4)}"
    fd = os.open(partial, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
    with os.fdopen(fd, "w") as handle:
        json.dump(record, handle, indent=1)
    partial.replace(path)
    return ApproverKey(public_line=line)


def unlock(folder: Path, passphrase: str) -> UnlockedApprover:
    """Decrypt the private key with the passphrase the person typed. Raises ApproverError."""
    path = key_path(folder)
    if not path.is_file():
        raise ApproverError(
            "no approver key yet: make one in your own terminal with `tpu-agent approver init`"
        )
    try:
        data = json.loads(path.read_text())
        kdf = data["kdf"]
        if data.get("version") != KEY_VERSION or kdf["name"] != "scrypt" or data["cipher"] != "aes-256-gcm":
            raise ValueError("unknown key format")
        n, r, p = int(kdf["n"]), int(kdf["r"]), int(kdf["p"])
        if n < 2**14 or n > 2**22 or r > 32 or p > 16:
            raise ValueError("key derivation settings out of range")
        secret = _kdf(passphrase, base64.b64decode(kdf["salt"]), n, r, p)
        raw = AESGCM(secret).decrypt(
            base64.b64decode(data["nonce"]), base64.b64decode(data["sealed"]), data["public"].encode()
        )
    except InvalidTag:
        raise ApproverError("wrong passphrase (or the key file was altered): nothing was approved") from None
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ApproverError(f"{path} cannot be read ({exc}): nothing was approved") from None
    private = Ed25519PrivateKey.from_private_bytes(raw)
    unlocked = UnlockedApprover(private)
    if unlocked.key.public_line != data["public"]:
        raise ApproverError(f"{path} holds a private key that does not match its public key")
    return unlocked


def allowed_signers_line(
    public_line: str, namespaces: tuple[str, ...] = (APPROVAL_NAMESPACE, POLICY_NAMESPACE)
) -> str:
    """One line of an `ssh-keygen -Y verify` allowed-signers file for this key."""
    kind, b64 = public_line.split()[:2]
    return f'{SIGNER_ID} namespaces="{",".join(namespaces)}" {kind} {b64}'


def endorsement_text(old_line: str, new_line: str) -> str:
    """What the old key signs when the person replaces it (`approver init --replace`): the new key."""
    return json.dumps({"v": 1, "old": old_line, "new": new_line}, sort_keys=True, separators=(",", ":"))


def forget(unlocked: UnlockedApprover | None) -> None:
    """Drop our reference to the private key as soon as the approval is signed."""
    if unlocked is not None:
        with contextlib.suppress(AttributeError):
            del unlocked._private
