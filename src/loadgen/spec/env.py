"""``${NAME}`` and ``${NAME:-default}`` in a driver file's strings, from the environment.

Why: one driver file then serves every deployment (a container gets its broker address from
``-e`` or compose), and secrets stay out of files. Nothing else is expanded (no ``$NAME``, no
commands), so a literal ``$`` in a password is left alone.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from typing import Any

from loadgen.base.errors import ConfigError

REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}")


def expand_env(value: Any, *, file: str | None, path: str = "") -> Any:
    """``value`` with every reference in its strings (at any depth) replaced.

    As in the shell, the default also stands in for an empty value; a variable unset or empty
    with no default is a ConfigError naming the field and the variable (an empty broker address
    would otherwise fail later, far from its cause).
    """
    if isinstance(value, str):
        return REFERENCE.sub(lambda match: _lookup(match, file, path), value)
    if isinstance(value, Mapping):
        return {
            key: expand_env(item, file=file, path=f"{path}.{key}" if path else str(key))
            for key, item in value.items()
        }
    if isinstance(value, list):
        return [expand_env(item, file=file, path=f"{path}[{i}]") for i, item in enumerate(value)]
    return value


def _lookup(match: re.Match[str], file: str | None, path: str) -> str:
    name, default = match.group(1), match.group(2)
    found = os.environ.get(name) or default
    if found is None:
        raise ConfigError(
            f"the environment variable {name} is not set or empty",
            file=file,
            path=path,
            value=match.group(0),
            allowed=f"set {name}, or give a default: ${{{name}:-DEFAULT}}",
        )
    return found
