"""``loadgen run URL --rate 10k ...``: a workload from flags, as the perf tools' users expect.

The flags build the same :class:`Workload` a YAML file would (so the run, its results and its
report are those of ``loadgen run -d driver.yaml workload.yaml``), and ``--dry-run`` prints that
pair of files, so a quick try becomes a file. Flags left out take the values below.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

import yaml

from loadgen.base.errors import ConfigError
from loadgen.base.redaction import redact
from loadgen.driver_api import urls
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.spec import Workload, parse_model

SOURCE = "<command line>"
FLAGS = {
    "--rate": ("producerRate", 1000.0),
    "--size": ("messageSize", 1024),
    "--topics": ("topics", 1),
    "--partitions": ("partitionsPerTopic", 1),
    "--producers": ("producersPerTopic", 1),
    "--subscriptions": ("subscriptionsPerTopic", 1),
    "--consumers": ("consumerPerSubscription", 1),
    "--key-distributor": ("keyDistributor", "NO_KEY"),
    "--duration": ("testDurationMinutes", 60.0),
    "--warmup": ("warmupDurationMinutes", 0.0),
}
"""Each ad-hoc flag → (the workload field it sets, its default). Durations are in seconds here."""
DURATIONS = ("--duration", "--warmup")
"""Seconds on the command line, minutes in the workload; they also override a workload file's
fields, while the other flags make sense with a URL only."""


def is_url(argument: str) -> bool:
    return "://" in argument


def plan(
    arguments: tuple[str, ...],
    driver_files: tuple[Path, ...],
    given: Mapping[str, Any],
    dry_run: bool,
) -> tuple[Workload, DriverSpec] | None:
    """The ad-hoc run that ``arguments`` ask for, or ``None`` when they are workload files
    (then no ad-hoc flag may be given: it would be silently ignored)."""
    addresses = [argument for argument in arguments if is_url(argument)]
    if not addresses:
        extra = [flag for flag, value in given.items() if value is not None]
        extra = [flag for flag in extra if flag not in DURATIONS] + ["--dry-run"] * dry_run
        if extra:
            raise ConfigError(
                "describes a run from a URL, not from workload files",
                path=extra[0],
                value=" ".join(arguments),
                allowed=f"{extra[0]} with a broker URL (kafka://host:port ...)",
            )
        return None
    if len(arguments) > 1:
        raise ConfigError(
            "a URL run takes no workload files and one URL",
            path="URL",
            value=" ".join(arguments),
            allowed="one URL with flags, or workload files",
        )
    return adhoc_workload(given), adhoc_driver(addresses[0], driver_files)


def adhoc_workload(given: Mapping[str, Any]) -> Workload:
    """The workload the flags in ``given`` (flag → value, ``None`` = left out) describe."""
    values = {flag: default for flag, (_, default) in FLAGS.items()}
    values |= {flag: value for flag, value in given.items() if value is not None}
    fields: dict[str, Any] = {
        FLAGS[flag][0]: value / 60 if flag in DURATIONS else value for flag, value in values.items()
    }
    rate, size = values["--rate"], values["--size"]
    fields["name"] = (
        f"adhoc-{values['--topics']}-topic-{values['--partitions']}-partition-{size}b-{rate:g}"
    )
    try:
        return parse_model(Workload, fields, file=SOURCE)
    except ConfigError as error:  # name the flag, not the YAML field it became
        flag = next((f for f, (field, _) in FLAGS.items() if field == error.path), error.path)
        raise ConfigError(
            error.args[0], path=flag, value=error.value, allowed=error.allowed
        ) from None


def adhoc_driver(url: str, driver_files: tuple[Path, ...]) -> DriverSpec:
    """The driver for ``url``, with client settings from at most one ``-d`` file."""
    if len(driver_files) > 1:
        raise ConfigError(
            "a URL run takes its client settings from one driver file",
            path="-d",
            value=", ".join(map(str, driver_files)),
            allowed="at most one -d with a URL",
        )
    driver_file = driver_files[0] if driver_files else None
    return urls.driver_for_url(url, driver_file, lambda driver: driver.run_defaults)


def as_yaml(workload: Workload, spec: DriverSpec) -> str:
    """The workload and driver as two YAML documents ``loadgen run -d D W`` accepts; secrets
    are redacted, so a secured cluster's file needs them put back (or its env variables)."""
    workload_doc = workload.model_dump(by_alias=True, mode="json", exclude_none=True)
    driver_doc = {"name": spec.name, "driver": spec.kind, **redact(dict(spec.config))}
    dump = {"sort_keys": False, "default_flow_style": False}
    return (
        f"# workload.yaml\n{yaml.safe_dump(workload_doc, **dump)}"
        f"---\n# driver.yaml\n{yaml.safe_dump(driver_doc, **dump)}"
    )
