"""Durable security state: SCRAM credentials and ACLs, each one JSON file in
`<log.dirs>/security/`, replaced atomically and fsynced (file and directory)
before a change is acknowledged, so it survives `kill -9`.

Credentials hold salt, StoredKey, ServerKey and iterations only, never a
password. Small files rewritten whole: security changes are rare.
"""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # imported when there is something to read: a start without
    # credentials or ACLs needs neither module
    from muster.security.acl import AclBinding
    from muster.security.scram import ScramCredential


def _write_durably(path: Path, payload: Any) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    with open(tmp, "w") as fh:
        json.dump(payload, fh, indent=1, sort_keys=True)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)
    fd = os.open(path.parent, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


def _read(path: Path | None, default: Any) -> Any:
    if path is None or not path.exists():
        return default
    return json.loads(path.read_text())


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


class CredentialStore:
    """user -> mechanism -> ScramCredential; `path` None keeps it in memory."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        raw = _read(path, {})
        if raw:
            from muster.security.scram import ScramCredential
        self._creds: dict[str, dict[str, ScramCredential]] = {
            user: {
                mech: ScramCredential(
                    base64.b64decode(c["salt"]),
                    base64.b64decode(c["stored_key"]),
                    base64.b64decode(c["server_key"]),
                    int(c["iterations"]),
                )
                for mech, c in mechs.items()
            }
            for user, mechs in raw.items()
        }

    def get(self, user: str, mechanism: str) -> ScramCredential | None:
        return self._creds.get(user, {}).get(mechanism)

    def users(self) -> dict[str, dict[str, ScramCredential]]:
        return {u: dict(m) for u, m in self._creds.items()}

    def apply(
        self,
        upserts: list[tuple[str, str, ScramCredential]],
        deletions: list[tuple[str, str]],
    ) -> None:
        """One durable write for a whole AlterUserScramCredentials request."""
        for user, mech in deletions:
            mechs = self._creds.get(user, {})
            mechs.pop(mech, None)
            if not mechs:
                self._creds.pop(user, None)
        for user, mech, cred in upserts:
            self._creds.setdefault(user, {})[mech] = cred
        if self.path is not None:
            _write_durably(
                self.path,
                {
                    user: {
                        mech: {
                            "salt": _b64(c.salt),
                            "stored_key": _b64(c.stored_key),
                            "server_key": _b64(c.server_key),
                            "iterations": c.iterations,
                        }
                        for mech, c in mechs.items()
                    }
                    for user, mechs in self._creds.items()
                },
            )


class AclStore:
    """The set of ACL bindings, durable the same way."""

    def __init__(self, path: Path | None) -> None:
        self.path = path
        raw = _read(path, [])
        if raw:
            from muster.security.acl import AclBinding
        self.bindings: list[AclBinding] = [AclBinding(**b) for b in raw]

    def replace(self, bindings: list[AclBinding]) -> None:
        if self.path is not None:
            _write_durably(self.path, [b.as_dict() for b in bindings])
        self.bindings = list(bindings)
