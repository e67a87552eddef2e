"""Validation with messages a person can act on: file, dotted field path, value, what is allowed.

Every config model (workloads here, each driver's own section) goes through :func:`parse_model`,
so a typo anywhere reads the same way: ``unknown field 'partitionPerTopic' (did you mean
'partitionsPerTopic'?)``.
"""

from __future__ import annotations

import difflib
import logging
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from loadgen.errors import ConfigError

log = logging.getLogger("loadgen.spec")

M = TypeVar("M", bound=BaseModel)

TYPE_WORDS = {
    "int": "an integer",
    "float": "a number",
    "bool": "true or false",
    "string": "a string",
    "dict": "a mapping",
    "list": "a list",
}


def field_names(model_cls: type[BaseModel]) -> list[str]:
    """The keys a YAML file may use for ``model_cls`` (aliases where set)."""
    return [info.alias or name for name, info in model_cls.model_fields.items()]


def _model_at(model_cls: type[BaseModel], location: tuple[Any, ...]) -> type[BaseModel]:
    """The nested model that owns the last element of ``location``."""
    current = model_cls
    for part in location[:-1]:
        fields = {info.alias or name: info for name, info in current.model_fields.items()}
        info = fields.get(part) or current.model_fields.get(str(part))
        annotation = getattr(info, "annotation", None)
        if isinstance(annotation, type) and issubclass(annotation, BaseModel):
            current = annotation
        else:
            break
    return current


def _drop_unknown(
    model_cls: type[BaseModel], data: Mapping[str, Any], file: str | None, prefix: str
) -> dict[str, Any]:
    known = set(field_names(model_cls)) | set(model_cls.model_fields)
    kept = {}
    for key, value in data.items():
        if key not in known:
            log.warning(
                "%s: ignoring unknown field %r (--lenient)", file or "<config>", prefix + str(key)
            )
            continue
        info = model_cls.model_fields.get(key) or next(
            (i for n, i in model_cls.model_fields.items() if i.alias == key), None
        )
        nested = getattr(info, "annotation", None)
        if (
            isinstance(nested, type)
            and issubclass(nested, BaseModel)
            and isinstance(value, Mapping)
        ):
            value = _drop_unknown(nested, value, file, f"{prefix}{key}.")
        kept[key] = value
    return kept


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
    if lenient:
        data = _drop_unknown(model_cls, data, file, prefix)
    try:
        return model_cls.model_validate(dict(data))
    except ValidationError as error:
        raise _config_error(model_cls, error, file, prefix) from None
    except ConfigError as error:  # raised by a model's cross-field check, which knows the field
        raise ConfigError(
            error.args[0],
            file=file,
            path=prefix + (error.path or ""),
            value=error.value,
            allowed=error.allowed,
        ) from None


def _config_error(
    model_cls: type[BaseModel], error: ValidationError, file: str | None, prefix: str
) -> ConfigError:
    # an unknown key first: a misspelt key also shows up as its correct twin "missing"
    first = min(error.errors(), key=lambda e: e["type"] != "extra_forbidden")
    location = tuple(first["loc"])
    path = prefix + ".".join(str(part) for part in location)
    value = first.get("input")
    kind = first["type"]
    if kind == "extra_forbidden":
        owner = _model_at(model_cls, location)
        allowed = field_names(owner)
        wrong = str(location[-1])
        guess = difflib.get_close_matches(wrong, allowed, n=1, cutoff=0.6)
        hint = f" (did you mean {guess[0]!r}?)" if guess else ""
        return ConfigError(
            f"unknown field {wrong!r}{hint}", file=file, path=path, value=value, allowed=allowed
        )
    if kind == "missing":
        return ConfigError("required field is missing", file=file, path=path)
    if kind in ("enum", "literal_error"):
        expected = first.get("ctx", {}).get("expected", "")
        allowed = [
            part.strip(" '") for part in expected.replace(" or ", ",").split(",") if part.strip()
        ]
        return ConfigError(
            f"{value!r} is not a valid value", file=file, path=path, value=value, allowed=allowed
        )
    base = kind.split("_")[0]
    if kind.endswith(("_type", "_parsing")) and base in TYPE_WORDS:
        return ConfigError(
            f"expected {TYPE_WORDS[base]}, got {value!r}",
            file=file,
            path=path,
            value=value,
            allowed=TYPE_WORDS[base],
        )
    message = first["msg"].removeprefix("Value error, ")
    bounds = {"ge": ">=", "gt": ">", "le": "<=", "lt": "<"}
    limits = [
        f"{sign} {first['ctx'][key]}" for key, sign in bounds.items() if key in first.get("ctx", {})
    ]
    return ConfigError(
        f"{message} (got {value!r})",
        file=file,
        path=path,
        value=value,
        allowed=", ".join(limits) if limits else None,
    )
