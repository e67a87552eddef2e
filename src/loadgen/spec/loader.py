"""Reading YAML files, with every way a file can be unreadable turned into a ConfigError."""

from __future__ import annotations

from collections.abc import Hashable
from pathlib import Path
from typing import Any

import yaml

from loadgen.base.errors import ConfigError

BaseLoader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
MERGE_TAG = "tag:yaml.org,2002:merge"


class YamlLoader(BaseLoader):
    """The C safe loader, except that a key given twice is an error instead of "last one wins"."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict[Any, Any]:
        seen: set[Any] = set()
        for key_node, _ in node.value:
            if key_node.tag == MERGE_TAG:  # keys merged in with ``<<`` may be overridden
                continue
            key = self.construct_object(key_node, deep=True)
            if not isinstance(key, Hashable):  # the base class reports unhashable keys
                continue
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    problem=f"the key {key!r} is given twice", problem_mark=key_node.start_mark
                )
            seen.add(key)
        return super().construct_mapping(node, deep=deep)


def load_yaml(path: str | Path) -> dict[str, Any]:
    """The top-level mapping of a YAML file."""
    name = str(path)
    try:
        raw = Path(path).read_bytes()
    except FileNotFoundError:
        raise ConfigError("file not found", file=name) from None
    except OSError as error:
        raise ConfigError(f"cannot read the file: {error.strerror}", file=name) from None
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as error:
        raise ConfigError(f"not UTF-8 text (byte {error.start})", file=name) from None
    try:
        data = yaml.load(text, Loader=YamlLoader)
    except yaml.YAMLError as error:
        mark = getattr(error, "problem_mark", None)
        where = f" at line {mark.line + 1}, column {mark.column + 1}" if mark else ""
        problem = getattr(error, "problem", None) or str(error)
        raise ConfigError(f"invalid YAML{where}: {problem}", file=name) from None
    if data is None:
        raise ConfigError("the file is empty", file=name)
    if not isinstance(data, dict):
        raise ConfigError(
            f"expected a mapping of fields at the top level, got {type(data).__name__}", file=name
        )
    return data
