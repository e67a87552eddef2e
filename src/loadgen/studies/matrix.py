"""Matrix runs: one base workload and driver files, run at every combination of listed values.

A plan (YAML, ours) names the base workload, the driver files, and either ``matrix`` (the cross
product of value lists) or ``points`` (an explicit list). Keys are workload fields (OMB's
names) or ``driver.<dotted path>`` into the driver file. Every point is expanded and validated
before the first run, so a typo in the eleventh point does not surface after ten runs.

Each point-run has a stable key: a hash of the base workload and driver file contents and the
point's values, plus the repeat number.
The matrix document (``<plan>.matrix.json``) records every key with its outcome and result file
and is rewritten after each run; running the same plan into the same directory again skips
every key whose result is complete and on disk. A changed plan makes changed points new keys:
nothing measured under other values (or other file contents) is mixed in.
"""

from __future__ import annotations

import copy
import hashlib
import itertools
import json
import logging
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from loadgen.base.errors import ConfigError, LoadgenError, RunAborted
from loadgen.base.files import write_json_atomic
from loadgen.driver_api import load_driver_class
from loadgen.driver_api.driver_file import spec_from_dict
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.engine.outcome import SavedRun
from loadgen.result_files.compare import load_result
from loadgen.spec import Workload, load_yaml, parse_model
from loadgen.spec.model import field_names
from loadgen.studies.sweep import point_from_result

log = logging.getLogger("loadgen.matrix")

DRIVER_PREFIX = "driver."
DRIVER_KEY = "driver"
"""In an explicit point: which of the plan's driver files it runs on (all of them if absent)."""


class Plan(BaseModel):
    """The plan file."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)

    name: str | None = None
    workload: str
    drivers: list[str] = Field(min_length=1)
    matrix: dict[str, list[Any]] = Field(default_factory=dict)
    points: list[dict[str, Any]] | None = None
    repeat: int = Field(default=1, ge=1)
    before_run: list[str] = Field(default_factory=list, alias="beforeRun")
    after_run: list[str] = Field(default_factory=list, alias="afterRun")


@dataclass(frozen=True)
class Point:
    """One run of the matrix: what it runs, and the values that make it this point."""

    key: str
    repeat: int
    values: Mapping[str, Any]
    """The plan's values for this point, ``driver`` (the driver file's stem) first."""
    workload: Workload
    spec: DriverSpec


@dataclass(frozen=True)
class Matrix:
    name: str
    plan_path: Path
    workload_path: Path
    before_run: tuple[str, ...]
    after_run: tuple[str, ...]
    points: tuple[Point, ...]
    varied: tuple[str, ...]
    """The fields that take more than one value (``driver`` when there are several files)."""


def load_matrix(path: Path, repeat: int | None = None, *, lenient: bool = False) -> Matrix:
    """Read the plan at ``path`` and expand and check every point; nothing runs."""
    source = str(path)
    plan = parse_model(Plan, load_yaml(path), file=source)
    if plan.points is not None and plan.matrix:
        raise ConfigError(
            "give either matrix (a cross product) or points (a list), not both",
            file=source,
            path="matrix/points",
            allowed="one of them",
        )
    base_path = path.parent / plan.workload
    base = _yaml(base_path, source, "workload")
    drivers = {}
    for index, name in enumerate(plan.drivers):
        file = path.parent / name
        drivers[name] = (file, _yaml(file, source, f"drivers[{index}]"))
    combos = _combinations(plan, source)
    refused = _refused_driver_fields(combos, drivers, source)
    points, keys = [], set()
    for where, values in combos:
        chosen = [values[DRIVER_KEY]] if DRIVER_KEY in values else plan.drivers
        for name in chosen:
            if name not in drivers:
                raise ConfigError(
                    "a point names a driver file the plan does not list",
                    file=source,
                    path=f"{where}.{DRIVER_KEY}",
                    value=name,
                    allowed=plan.drivers,
                )
            skip = {DRIVER_KEY} | (refused.get(name, set()) if DRIVER_KEY not in values else set())
            own = {key: value for key, value in values.items() if key not in skip}
            workload, spec = _point(own, base, drivers[name], source, where, lenient)
            labelled = {DRIVER_KEY: drivers[name][0].stem, **own}
            identity = {"workload": base, "driver": drivers[name][1], "values": own}
            for number in range(1, (repeat or plan.repeat) + 1):
                key = f"{_digest(identity)}-r{number}"
                if key in keys:  # a driver field this driver does not have made no difference
                    continue
                keys.add(key)
                named = workload.model_copy(update={"name": f"{_title(base, base_path)} {key}"})
                points.append(Point(key, number, labelled, named, spec))
    varied = _varied([point.values for point in points])
    return Matrix(
        plan.name or path.stem,
        path,
        base_path,
        tuple(plan.before_run),
        tuple(plan.after_run),
        tuple(points),
        varied,
    )


def _refused_driver_fields(
    combos: Sequence[tuple[str, Mapping[str, Any]]],
    drivers: Mapping[str, tuple[Path, dict[str, Any]]],
    source: str,
) -> dict[str, set[str]]:
    """Per driver file, the ``driver.`` fields its driver does not have (they are not applied to
    it, so a batching setting can be varied for Pulsar in a plan that also runs Kafka). A field
    no driver of the plan has is an error: a typo must not vary nothing."""
    samples: dict[str, tuple[str, Any]] = {}
    for where, values in combos:
        for key, value in values.items():
            if key.startswith(DRIVER_PREFIX):
                samples.setdefault(key, (where, value))
    refused = {
        name: {key for key in samples if not _has_field(driver, key, samples[key][1])}
        for name, driver in drivers.items()
    }
    for key, (where, _) in samples.items():
        if all(key in fields for fields in refused.values()):
            raise ConfigError(
                "no driver file of the plan has this field",
                file=source,
                path=f"{where}.{key}",
                allowed=f"a field of one of {sorted(drivers)}",
            )
    return refused


def _has_field(driver: tuple[Path, dict[str, Any]], key: str, value: Any) -> bool:
    """Whether ``driver`` knows ``key`` (a bad value for a known field still counts as known)."""
    file, data = driver
    data = copy.deepcopy(data)
    _set_dotted(data, key[len(DRIVER_PREFIX) :], value)
    try:
        _check_driver(spec_from_dict(data, source=str(file)))
    except ConfigError as error:
        return not str(error.args[0]).startswith("unknown field")
    return True


def _check_driver(spec: DriverSpec) -> None:
    load_driver_class(spec).validate_config(spec)


def _yaml(file: Path, plan: str, field: str) -> dict[str, Any]:
    if not file.is_file():
        raise ConfigError(
            "file not found (paths are relative to the plan)",
            file=plan,
            path=field,
            value=str(file),
            allowed="an existing YAML file",
        )
    return load_yaml(file)


def _combinations(plan: Plan, source: str) -> list[tuple[str, dict[str, Any]]]:
    """(where in the plan, values) for each combination, in plan order."""
    if plan.points is not None:
        return [(f"points[{i}]", dict(point)) for i, point in enumerate(plan.points)]
    for key, values in plan.matrix.items():
        if not values:
            raise ConfigError(
                "a matrix field needs at least one value",
                file=source,
                path=f"matrix.{key}",
                value=values,
                allowed="a non-empty list",
            )
    keys = list(plan.matrix)
    product = itertools.product(*(plan.matrix[key] for key in keys))
    return [("matrix", dict(zip(keys, values, strict=True))) for values in product]


def _point(
    values: Mapping[str, Any],
    base: dict[str, Any],
    driver: tuple[Path, dict[str, Any]],
    source: str,
    where: str,
    lenient: bool,
) -> tuple[Workload, DriverSpec]:
    """The workload and driver spec of one point, checked as a run would check them."""
    fields = dict(base)
    driver_file, driver_data = driver
    driver_data = copy.deepcopy(driver_data)
    allowed = field_names(Workload)
    for key, value in values.items():
        if key.startswith(DRIVER_PREFIX):
            _set_dotted(driver_data, key[len(DRIVER_PREFIX) :], value)
        elif key in allowed:
            fields[key] = value  # the workload reads 10k and 4KiB itself
        else:
            raise ConfigError(
                "neither a workload field nor driver.<path>",
                file=source,
                path=f"{where}.{key}",
                allowed=[*allowed, "driver.<field path in the driver file>"],
            )
    workload = parse_model(Workload, fields, file=source, path_prefix=where, lenient=lenient)
    spec = spec_from_dict(driver_data, source=str(driver_file), lenient=lenient)
    try:
        _check_driver(spec)
    except ConfigError as error:
        raise ConfigError(
            f"{error.args[0]} (with the values of {where}: {dict(values)})",
            file=error.file,
            path=error.path,
            value=error.value,
            allowed=error.allowed,
        ) from None
    return workload, spec


def _set_dotted(data: dict[str, Any], path: str, value: Any) -> None:
    """``data['a']['b'] = value`` for ``a.b``, creating the mappings on the way."""
    *parents, last = path.split(".")
    for part in parents:
        data = data.setdefault(part, {})
    data[last] = value


def _digest(values: Mapping[str, Any]) -> str:
    text = json.dumps(values, sort_keys=True, default=str)
    return hashlib.sha256(text.encode()).hexdigest()[:10]


def _title(base: Mapping[str, Any], base_path: Path) -> str:
    name = base.get("name")
    return name if isinstance(name, str) and name else base_path.stem


def _varied(all_values: Sequence[Mapping[str, Any]]) -> tuple[str, ...]:
    keys = dict.fromkeys(key for values in all_values for key in values)
    return tuple(
        key
        for key in keys
        if len({json.dumps(values.get(key), default=str) for values in all_values}) > 1
    )


# -- running ------------------------------------------------------------------------------------
RunPoint = Callable[[Point], SavedRun]


def document_path(out_dir: Path, matrix: Matrix) -> Path:
    return out_dir / f"{_file_safe(matrix.name)}.matrix.json"


def _file_safe(name: str) -> str:
    return "".join(c if c.isalnum() or c in "-_." else "-" for c in name).strip("-") or "matrix"


def finished_keys(document: Mapping[str, Any], out_dir: Path) -> set[str]:
    """Keys whose result is complete and still on disk: a resumed matrix skips them."""
    return {
        entry["key"]
        for entry in document.get("points", ())
        if entry.get("status") == "complete" and (out_dir / entry.get("result", "")).is_file()
    }


def read_document(path: Path) -> dict[str, Any]:
    if not path.is_file():
        return {}
    try:
        return json.loads(path.read_text())
    except json.JSONDecodeError as error:
        raise ConfigError(
            f"the matrix document is not JSON ({error}); move it away to start over",
            file=str(path),
        ) from None


def run_matrix(
    matrix: Matrix, out_dir: Path, run_point: RunPoint, on_skip: Callable[[int], None]
) -> dict[str, Any]:
    """Run every point not finished before, in order; the matrix document after each run.

    A point that fails (a broker error) is recorded and the matrix goes on; Ctrl-C records the
    point as incomplete, writes the document and raises (re-running resumes).
    """
    path = document_path(out_dir, matrix)
    previous = read_document(path)
    done = finished_keys(previous, out_dir)
    entries = {entry["key"]: entry for entry in previous.get("points", ()) if entry["key"] in done}
    on_skip(sum(point.key in done for point in matrix.points))

    def save() -> dict[str, Any]:
        document = matrix_document(
            matrix, [entries[p.key] for p in matrix.points if p.key in entries]
        )
        try:
            write_json_atomic(path, document)
        except OSError as error:  # the runs' results are the record; this is their index
            log.warning("the matrix document %s was not saved: %s", path, error)
        return document

    for point in matrix.points:
        if point.key in done:
            continue
        try:
            saved = run_point(point)
        except RunAborted as aborted:
            entries[point.key] = _entry(point, out_dir, None, aborted)
            save()
            if aborted.reason == "interrupted":
                raise
            continue
        except LoadgenError as error:  # the point could not run (broker unreachable, hook)
            entries[point.key] = _entry(point, out_dir, None, error)
            save()
            continue
        except KeyboardInterrupt:  # before or after the measurement: nothing of it to keep
            save()
            raise
        entries[point.key] = _entry(point, out_dir, saved, None)
        save()
    return save()


def _entry(
    point: Point, out_dir: Path, saved: SavedRun | None, error: LoadgenError | None
) -> dict[str, Any]:
    entry: dict[str, Any] = {"key": point.key, "repeat": point.repeat, "values": dict(point.values)}
    result_file = saved.path if saved is not None else _partial(error)
    if result_file is not None:
        result = load_result(Path(result_file)) if saved is None else saved.result
        figures = point_from_result(point.workload.producer_rate, str(result_file), result)
        entry.update(figures.to_json())
        written = Path(result_file)  # a fallback directory when the disk of out_dir failed
        entry["result"] = str(
            written.relative_to(out_dir) if written.is_relative_to(out_dir) else written
        )
    entry["status"] = "complete" if error is None else ("incomplete" if result_file else "failed")
    if error is not None:
        entry["error"] = str(error)
    return entry


def _partial(error: LoadgenError | None) -> str | None:
    return error.result_path if isinstance(error, RunAborted) else None


def matrix_document(matrix: Matrix, entries: Sequence[Mapping[str, Any]]) -> dict[str, Any]:
    """The matrix document: the plan's name and varied fields, and one entry per point-run."""
    return {
        "matrix": matrix.name,
        "plan": str(matrix.plan_path),
        "workload": str(matrix.workload_path),
        "varied": list(matrix.varied),
        "planned": len(matrix.points),
        "points": list(entries),
    }
