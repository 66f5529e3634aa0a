"""The error a0 records in error.pb: the only place a failed user function shows up (a0 exits 0 anyway)."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TaskError:
    """What a0 recorded: the user's exception type name (`code`), its message, its kind (`user`,
    `system` or `unknown`), and whether a retry can help (a0 marks every error recoverable except
    `flyte.errors.NonRecoverableError`)."""

    code: str
    message: str
    kind: str
    recoverable: bool = False

    def describe(self) -> str:
        return self.message if self.message.startswith(self.code) else f"{self.code}: {self.message}"

    def as_info(self) -> dict[str, object]:
        """The error as the `error` entry of the connector Resource's custom_info."""
        return {"code": self.code, "kind": self.kind.upper(), "recoverable": self.recoverable, "message": self.message}
