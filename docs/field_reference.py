"""The field reference (``docs/reference/fields.md``), generated from the pydantic models.

Why: a table of fields written by hand drifts from the models the files are checked against;
this one is read from them at every build, as ``docs/cli.md`` is read from click. It is a
mkdocs hook (``hooks:`` in ``mkdocs.yml``): a page line ``<!-- fields: workload -->`` or
``<!-- fields: drivers -->`` becomes the tables. ``tests/docs/test_drift.py`` imports
:func:`field_rows` to resolve the field names the pages mention against the same rows.

A field's YAML name is its alias (else its Python name), dotted below a nested section
(``consumer.subscriptionInitialPosition``) and with ``[]`` for the items of a list
(``messageSizes[].size``). The description is the field's ``description`` or, as the models
document fields today, the string right after it in the class body.
"""

from __future__ import annotations

import ast
import inspect
import itertools
import re
import textwrap
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from functools import cache
from importlib import import_module
from pathlib import Path, PurePosixPath
from types import NoneType, UnionType
from typing import Annotated, Any, Literal, Union, get_args, get_origin

import annotated_types as at
from pydantic import BaseModel, TypeAdapter, ValidationError
from pydantic.fields import FieldInfo

from loadgen.driver_api import display_name, driver_classes
from loadgen.driver_api.driver_file import omb_driver_classes
from loadgen.spec.workload import Workload

MARKER = re.compile(r"^<!-- fields: (\w+) -->$", re.MULTILINE)
BOUNDS = ((at.Ge, "ge", "≥"), (at.Gt, "gt", ">"), (at.Le, "le", "≤"), (at.Lt, "lt", "<"))
ROLE = re.compile(r":\w+:`(~?)\.?([^`]+)`")
SPELLINGS = "†"
DRIVER_FILE_FIELDS = (
    ("name", "the display name: the result's `driver` and part of the result file's name"),
    ("driver", "the installed driver that reads the rest of the file (or give `driverClass`)"),
    ("driverClass", "OMB's driver class, mapped to the installed driver that declares it; "
     "with `driver` too, both must name the same driver"),
)  # fmt: skip


@dataclass(frozen=True)
class Row:
    """One field as a YAML author sees it."""

    path: str
    type: str
    default: str
    allowed: str
    description: str
    required: bool
    open: bool
    """True when the field takes keys no model lists (Java properties, its own syntax)."""


def field_rows(model: type[BaseModel], prefix: str = "") -> Iterator[Row]:
    """Every field of ``model`` in source order, a section's own fields right after it."""
    docs = attribute_docs(model)
    for name, info in model.model_fields.items():
        path = prefix + (info.alias or name)
        section, is_list = _nested_model(info.annotation)
        yield Row(
            path=path,
            type=_type_text(info.annotation) + (SPELLINGS if _reads_spellings(model, name) else ""),
            default=_default_text(info),
            allowed=_allowed_text(info),
            description=plain(info.description or docs.get(name, "")),
            required=_required(info),
            open=section is None and not _is_scalar(info.annotation),
        )
        if section is not None:
            yield from field_rows(section, f"{path}[]." if is_list else f"{path}.")


def attribute_docs(model: type) -> dict[str, str]:
    """``{field: docstring}`` from the string literal after each annotated field, bases first."""
    docs: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if not issubclass(cls, BaseModel) or cls is BaseModel:
            continue
        body = ast.parse(textwrap.dedent(inspect.getsource(cls))).body[0].body
        for field, after in itertools.pairwise(body):
            if (
                isinstance(field, ast.AnnAssign)
                and isinstance(field.target, ast.Name)
                and isinstance(after, ast.Expr)
                and isinstance(after.value, ast.Constant)
                and isinstance(after.value.value, str)
            ):
                docs[field.target.id] = after.value.value
    return docs


def plain(text: str) -> str:
    """A docstring as one Markdown table cell: reST literals and roles become code spans."""
    text = ROLE.sub(_role, text)
    return " ".join(text.replace("``", "`").split()).replace("|", "\\|")


def _role(match: re.Match[str]) -> str:
    """``:class:`~a.b.C``` → `` `C` ``; ``:mod:`.rate_profile``` → `` `rate_profile` ``."""
    target = match.group(2)
    return f"`{target.rsplit('.', 1)[-1] if match.group(1) else target}`"


def _options(annotation: Any) -> list[Any]:
    """The members of a Union (``X | None``), else the annotation itself, ``None`` left out."""
    if get_origin(annotation) in (Union, UnionType):
        return [arg for arg in get_args(annotation) if arg is not NoneType]
    return [annotation]


def _nested_model(annotation: Any) -> tuple[type[BaseModel] | None, bool]:
    """The section model a field holds (or a list of), unless that model reads its own syntax."""
    for option in _options(annotation):
        is_list = get_origin(option) in (list, tuple, Sequence)
        item = get_args(option)[0] if is_list else option
        if _is_model(item) and not _reads_own_shape(item):
            return item, is_list
    return None, False


def _is_model(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, BaseModel)


def _reads_own_shape(model: type[BaseModel]) -> bool:
    """A model whose "before" validator turns YAML of another form into its fields."""
    validators = model.__pydantic_decorators__.model_validators.values()
    return any(v.info.mode in ("before", "wrap") for v in validators)


def _reads_spellings(model: type[BaseModel], name: str) -> bool:
    """True when a field validator reads the raw value first (``10k``, ``5m``, text...)."""
    validators = model.__pydantic_decorators__.field_validators.values()
    return any(name in v.info.fields and v.info.mode != "after" for v in validators)


def _is_scalar(annotation: Any) -> bool:
    """A value, or a list of values: no mapping keys below it."""
    return all(_is_value(option) or _is_list_of_values(option) for option in _options(annotation))


def _is_value(annotation: Any) -> bool:
    return (
        annotation in (bool, int, float, str)
        or get_origin(annotation) is Literal
        or _is_enum(annotation)
    )


def _is_list_of_values(annotation: Any) -> bool:
    return get_origin(annotation) in (list, tuple) and all(
        _is_value(arg) for arg in get_args(annotation) if arg is not Ellipsis
    )


def _is_enum(annotation: Any) -> bool:
    return isinstance(annotation, type) and issubclass(annotation, Enum)


def _type_text(annotation: Any) -> str:
    names = {bool: "boolean", int: "integer", float: "number", str: "string"}
    texts = []
    for option in _options(annotation):
        origin = get_origin(option)
        if option in names:
            texts.append(names[option])
        elif origin is Literal or _is_enum(option):
            texts.append("string")
        elif origin in (list, tuple, Sequence):
            item = _type_text(get_args(option)[0])
            texts.append("list (own syntax)" if item == "own syntax" else f"list of {item}")
        elif origin in (dict, Mapping) or (_is_model(option) and not _reads_own_shape(option)):
            texts.append("mapping")
        else:
            texts.append("own syntax")
    return " or ".join(texts)


def _required(info: FieldInfo) -> bool:
    """Required, or a default the field's own bounds refuse (OMB's 0 that must be given)."""
    if info.is_required():
        return True
    if info.default_factory is not None or info.default is None:
        return False
    try:
        _adapter(info).validate_python(info.default)
    except ValidationError:
        return True
    return False


def _adapter(info: FieldInfo) -> TypeAdapter:
    if not info.metadata:
        return TypeAdapter(info.annotation)
    return TypeAdapter(Annotated[info.annotation, *info.metadata])


def _default_text(info: FieldInfo) -> str:
    if _required(info):
        return "required"
    if info.default_factory is not None:
        return ""
    value = info.default
    if value is None:
        return "unset"
    if isinstance(value, Enum):
        value = value.value
    if isinstance(value, bool):
        value = str(value).lower()
    return f"`{value}`"


def _allowed_text(info: FieldInfo) -> str:
    """Enum and Literal values, then bounds, as the YAML author writes them."""
    values = []
    for option in _options(info.annotation):
        if _is_enum(option):
            values += [member.value for member in option]
        elif get_origin(option) is Literal:
            values += list(get_args(option))
    bounds = [
        f"{sign} {getattr(item, attribute)}"
        for item in info.metadata
        for kind, attribute, sign in BOUNDS
        if isinstance(item, kind)
    ]
    bounds += [
        f"length ≥ {item.min_length}" for item in info.metadata if isinstance(item, at.MinLen)
    ]
    return ", ".join([*(f"`{value}`" for value in values), *bounds])


def table(rows: Sequence[Row]) -> str:
    """The rows as a Markdown table."""
    lines = ["| Field | Type | Default | Allowed | Description |", "|---|---|---|---|---|"]
    for row in rows:
        cells = (f"`{row.path}`", row.type, row.default, row.allowed, row.description)
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def load_model(reference: str) -> type[BaseModel]:
    """The class a driver's ``config_model`` names as ``"module:Class"``."""
    module, _, name = reference.partition(":")
    return getattr(import_module(module), name)


@cache
def installed_models() -> dict[str, tuple[str, type[BaseModel] | None]]:
    """``{kind: (display name, section model or None)}`` for every installed driver."""
    return {
        kind: (
            display_name(kind, driver),
            load_model(driver.config_model) if driver.config_model else None,
        )
        for kind, driver in sorted(driver_classes().items())
    }


def all_rows() -> dict[str, list[Row]]:
    """``{"workload": rows, kind: rows}``: what the checks of the pages resolve names against."""
    rows = {"workload": list(field_rows(Workload))}
    for kind, (_, model) in installed_models().items():
        rows[kind] = list(field_rows(model)) if model is not None else []
    return rows


def workload_section() -> str:
    return f"{plain(Workload.__doc__ or '')}\n\n{table(list(field_rows(Workload)))}\n"


def drivers_section(page_uri: str, docs_dir: str) -> str:
    """The fields every driver file has, then one table per installed driver."""
    kinds = ", ".join(f"`{kind}`" for kind in installed_models())
    classes = ", ".join(f"`{name}`" for name in sorted(omb_driver_classes()))
    allowed = {"name": "non-empty", "driver": kinds, "driverClass": classes}
    common = [
        Row(
            path=name,
            type="string",
            default="required" if name == "name" else "",
            allowed=allowed[name],
            description=text,
            required=name == "name",
            open=False,
        )
        for name, text in DRIVER_FILE_FIELDS
    ]
    parts = [
        "### Every driver file",
        "One of `driver` and `driverClass` is required.",
        table(common),
    ]
    for kind, (title, model) in installed_models().items():
        parts.append(f"### {title} (`driver: {kind}`)")
        parts.append(_driver_page_link(kind, page_uri, docs_dir))
        if model is None:
            parts.append("This driver declares no `config_model`: its page documents its fields.")
        else:
            parts += [plain(model.__doc__ or ""), table(list(field_rows(model)))]
    return "\n\n".join(part for part in parts if part) + "\n"


def _driver_page_link(kind: str, page_uri: str, docs_dir: str) -> str:
    target = f"drivers/{kind}.md"
    if not (Path(docs_dir) / target).is_file():
        return ""
    depth = len(PurePosixPath(page_uri).parent.parts)
    return f"How the driver uses them: [the {kind} page]({'../' * depth}{target})."


def render(markdown: str, page_uri: str = "reference/fields.md", docs_dir: str = "docs") -> str:
    """``markdown`` with each ``<!-- fields: ... -->`` line replaced by its tables."""

    def section(match: re.Match[str]) -> str:
        what = match.group(1)
        if what == "workload":
            return workload_section()
        if what == "drivers":
            return drivers_section(page_uri, docs_dir)
        raise ValueError(f"{page_uri}: unknown field reference {what!r} (workload or drivers)")

    if not MARKER.search(markdown):
        return markdown
    note = (
        f"{SPELLINGS}: the field also reads other spellings before its type is checked (rates "
        "like `10k`, sizes like `4KiB`, durations like `5m`, properties text, enum names in any "
        "case): the field's page says which."
    )
    return MARKER.sub(section, markdown) + f"\n{note}\n"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    """The mkdocs hook: every page passes through; only one with a marker changes."""
    return render(markdown, page.file.src_uri, config["docs_dir"])
