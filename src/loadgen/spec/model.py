"""Validation with messages a person can act on: file, dotted field path, value, what is allowed.

Every config model (workloads here, each driver's own section) goes through :func:`parse_model`,
so a typo anywhere reads the same way: ``unknown field 'partitionPerTopic' (did you mean
'partitionsPerTopic'?)``.
"""

from __future__ import annotations

import copy
import difflib
import enum
import logging
import types
from collections.abc import Mapping
from typing import Annotated, Any, Literal, TypeVar, Union, get_args, get_origin

from pydantic import BaseModel, ValidationError

from loadgen.base.errors import ConfigError
from loadgen.base.redaction import redact_at

log = logging.getLogger("loadgen.spec")

M = TypeVar("M", bound=BaseModel)

TYPE_WORDS = {
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "string": "a string",
    "dict": "a mapping",
    "model": "a mapping",
    "list": "a list",
}
BOUNDS = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}


def field_names(model_cls: type[BaseModel]) -> list[str]:
    """The keys a YAML file may use for ``model_cls`` (aliases where set)."""
    return [info.alias or name for name, info in model_cls.model_fields.items()]


def parse_model(
    model_cls: type[M],
    data: Any,
    *,
    file: str | None,
    path_prefix: str = "",
    lenient: bool = False,
) -> M:
    """Validate ``data`` as ``model_cls``; the first problem becomes a :class:`ConfigError`.

    With ``lenient`` unknown keys are dropped with a warning (OMB's behaviour); type and value
    errors still fail.
    """
    prefix = f"{path_prefix}." if path_prefix else ""
    if not isinstance(data, Mapping):
        raise ConfigError(
            f"expected a mapping of fields, got {type(data).__name__}",
            file=file,
            path=path_prefix or None,
            value=data,
        )
    data = copy.deepcopy(dict(data)) if lenient else dict(data)
    while True:  # each lenient pass removes at least one key, so this ends
        try:
            return model_cls.model_validate(data)
        except ValidationError as error:
            unknown = [e["loc"] for e in error.errors() if e["type"] == "extra_forbidden"]
            if not (lenient and _drop_unknown(data, unknown, file, prefix)):
                raise _config_error(model_cls, data, error, file, prefix) from None
        except ConfigError as error:  # a model's cross-field check, which knows its field
            raise ConfigError(
                error.args[0],
                file=file,
                path=prefix + error.path if error.path else path_prefix or None,
                value=error.value,
                allowed=error.allowed,
            ) from None


def _drop_unknown(
    data: dict[str, Any], locations: list[tuple[Any, ...]], file: str | None, prefix: str
) -> bool:
    """Delete each unknown key from ``data`` in place, with a warning; True if any was."""
    dropped = False
    for location in locations:
        container: Any = data
        for part in location[:-1]:
            if not _was_given(container, (part,)):
                break
            container = container[part]
        else:
            if isinstance(container, dict) and location[-1] in container:
                del container[location[-1]]
                dotted = prefix + ".".join(str(part) for part in location)
                log.warning("%s: ignoring unknown field %r (lenient)", file or "<config>", dotted)
                dropped = True
    return dropped


def _resolve(model_cls: type[BaseModel], location: tuple[Any, ...]) -> tuple[tuple[Any, ...], Any]:
    """``location`` spelt with the YAML keys (aliases), and the declared type found there.

    Pydantic reports a refused default under its Python name; the user knows the alias. The
    type is None where it cannot be told (a union of models, say).
    """
    current: Any = model_cls
    keys: list[Any] = []
    for depth, part in enumerate(location):
        current = _unwrap(current)
        origin, args = get_origin(current), get_args(current)
        if isinstance(current, type) and issubclass(current, BaseModel):
            by_key = {info.alias or name: info for name, info in current.model_fields.items()}
            info = by_key.get(part) or current.model_fields.get(str(part))
            if info is None:
                return (*keys, *location[depth:]), None
            keys.append(info.alias or part)
            current = info.annotation
            continue
        keys.append(part)
        if origin in (list, tuple, set, frozenset) and args and isinstance(part, int):
            current = args[0]
        elif origin is dict and len(args) == 2:
            current = args[1]
        else:
            return (*keys, *location[depth + 1 :]), None
    return tuple(keys), _unwrap(current)


def _unwrap(annotation: Any) -> Any:
    """``X`` from ``Annotated[X, ...]`` and from ``X | None``; anything else as it is."""
    if get_origin(annotation) is Annotated:
        return _unwrap(get_args(annotation)[0])
    if get_origin(annotation) in (Union, types.UnionType):
        members = [arg for arg in get_args(annotation) if arg is not type(None)]
        return _unwrap(members[0]) if len(members) == 1 else annotation
    return annotation


def _allowed_values(annotation: Any) -> list[str] | None:
    if isinstance(annotation, type) and issubclass(annotation, enum.Enum):
        return [str(member.value) for member in annotation]
    if get_origin(annotation) is Literal:
        return [str(value) for value in get_args(annotation)]
    return None


def _plain(number: Any) -> Any:
    """``0`` rather than ``0.0`` in a bound: pydantic stores a float field's bounds as floats."""
    return int(number) if isinstance(number, float) and number.is_integer() else number


def _was_given(data: Any, location: tuple[Any, ...]) -> bool:
    for part in location:
        try:
            data = data[part]
        except (KeyError, IndexError, TypeError):
            return False
    return True


def _config_error(
    model_cls: type[BaseModel],
    data: Mapping[str, Any],
    error: ValidationError,
    file: str | None,
    prefix: str,
) -> ConfigError:
    # an unknown key first: a misspelt key also shows up as its correct twin "missing"
    first = min(error.errors(), key=lambda e: e["type"] != "extra_forbidden")
    location = tuple(first["loc"])
    keys, annotation = _resolve(model_cls, location)
    path = prefix + ".".join(str(part) for part in keys)
    value = redact_at(path, first.get("input"))  # shown in the message: never a secret
    kind = first["type"]
    context = first.get("ctx", {})
    if kind == "extra_forbidden":
        owner = _resolve(model_cls, location[:-1])[1]
        wrong = str(location[-1])
        if not (isinstance(owner, type) and issubclass(owner, BaseModel)):
            return ConfigError(f"unknown field {wrong!r}", file=file, path=path)
        allowed = field_names(owner)
        guess = difflib.get_close_matches(wrong, allowed, n=1, cutoff=0.6)
        hint = f" (did you mean {guess[0]!r}?)" if guess else ""
        return ConfigError(f"unknown field {wrong!r}{hint}", file=file, path=path, allowed=allowed)
    if kind == "missing":
        return ConfigError("required field is missing", file=file, path=path)
    if kind in ("enum", "literal_error"):
        allowed = _allowed_values(annotation) or context.get("expected")
        return ConfigError(
            f"{value!r} is not a valid value", file=file, path=path, value=value, allowed=allowed
        )
    base = kind.split("_")[0]
    if kind.endswith(("_type", "_parsing", "_from_float")) and base in TYPE_WORDS:
        return ConfigError(
            f"expected {TYPE_WORDS[base]}, got {value!r}",
            file=file,
            path=path,
            value=value,
            allowed=TYPE_WORDS[base],
        )
    limits = [f"{sign} {_plain(context[key])}" for key, sign in BOUNDS.items() if key in context]
    allowed_text = ", ".join(limits) if limits else None
    if not (_was_given(data, location) or _was_given(data, keys)):  # a refused default
        message = f"required field is missing (the default {value!r} is not allowed)"
        return ConfigError(message, file=file, path=path, allowed=allowed_text)
    message = first["msg"].removeprefix("Value error, ")
    return ConfigError(
        f"{message} (got {value!r})", file=file, path=path, value=value, allowed=allowed_text
    )
