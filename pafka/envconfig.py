"""Reading typed settings from ``PAFKA_<SERVICE>_*`` environment variables, with clear errors.

Each service builds its one immutable settings object with an :class:`Env` for its prefix.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

from pafka.errors import ConfigError


@dataclass(frozen=True)
class Env:
    prefix: str
    values: Mapping[str, str]

    @classmethod
    def of(cls, prefix: str, values: Mapping[str, str] | None = None) -> Env:
        return cls(prefix, os.environ if values is None else values)

    def raw(self, name: str) -> str | None:
        value = self.values.get(self.prefix + name)
        return value if value else None

    def text(self, name: str, default: str) -> str:
        return self.raw(name) or default

    def integer(self, name: str, default: int, *, minimum: int = 0) -> int:
        raw = self.raw(name)
        if raw is None:
            return default
        try:
            value = int(raw)
        except ValueError:
            raise ConfigError(f"{self.prefix}{name} must be an integer, got {raw!r}") from None
        if value < minimum:
            raise ConfigError(f"{self.prefix}{name} must be >= {minimum}, got {value}")
        return value

    def number(self, name: str, default: float, *, minimum: float = 0.0) -> float:
        raw = self.raw(name)
        if raw is None:
            return default
        try:
            value = float(raw)
        except ValueError:
            raise ConfigError(f"{self.prefix}{name} must be a number, got {raw!r}") from None
        if not value >= minimum:  # also refuses NaN
            raise ConfigError(f"{self.prefix}{name} must be >= {minimum}, got {raw}")
        return value

    def flag(self, name: str, default: bool) -> bool:
        raw = self.raw(name)
        if raw is None:
            return default
        if raw.lower() not in ("true", "false"):
            raise ConfigError(f"{self.prefix}{name} must be true or false, got {raw!r}")
        return raw.lower() == "true"

    def secret(self, name: str) -> str | None:
        """``NAME`` itself or, for Kubernetes Secrets mounted as files, the content of the file
        named by ``NAME_FILE`` (surrounding whitespace dropped); giving both is an error."""
        inline, file_name = self.raw(name), self.raw(name + "_FILE")
        if inline is not None and file_name is not None:
            raise ConfigError(f"give {self.prefix}{name} or {self.prefix}{name}_FILE, not both")
        if file_name is None:
            return inline
        try:
            value = Path(file_name).read_text().strip()
        except OSError as exc:
            raise ConfigError(f"{self.prefix}{name}_FILE: cannot read {file_name}: {exc}") from None
        if not value:
            raise ConfigError(f"{self.prefix}{name}_FILE: {file_name} is empty")
        return value
