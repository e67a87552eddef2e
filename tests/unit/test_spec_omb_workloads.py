"""Every workload OMB ships must load: rebuilt from the table in shared/reference/omb.md §14.

The OMB files themselves are not redistributed here; set OMB_WORKLOADS_DIR to an OMB checkout's
workloads/ folder to also load the originals.
"""

import os
from pathlib import Path

import pytest
import yaml

from loadgen.spec import load_workload

OMB_MD = Path(__file__).resolve().parents[2].parent / "shared" / "reference" / "omb.md"
HEADING = "## 14. Shipped workloads"
COLUMNS = 12


def shipped_workloads() -> list[list[str]]:
    """The rows of the markdown table after HEADING (header and separator rows left out)."""
    if not OMB_MD.exists():
        return []
    section = OMB_MD.read_text(encoding="utf-8").split(HEADING, 1)[1]
    rows = []
    for line in section.splitlines():
        if not line.startswith("|"):
            continue
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) == COLUMNS and cells[0] != "file" and set(cells[0]) != {"-"}:
            rows.append(cells)
    return rows


def to_omb_yaml(cells: list[str]) -> dict:
    (
        name,
        topics,
        partitions,
        size,
        payload,
        subs,
        consumers,
        producers,
        rate,
        backlog,
        minutes,
        other,
    ) = cells
    document = {
        "name": name,
        "topics": int(topics),
        "partitionsPerTopic": int(partitions),
        "messageSize": int(size),
        "subscriptionsPerTopic": int(subs),
        "consumerPerSubscription": int(consumers),
        "producersPerTopic": int(producers),
        "producerRate": int(rate),
        "consumerBacklogSizeGB": int(backlog),
        "testDurationMinutes": int(minutes),
    }
    if payload.startswith("rand "):
        ratio, pool = payload.removeprefix("rand ").split("/")
        document |= {
            "useRandomizedPayloads": True,
            "randomBytesRatio": float(ratio),
            "randomizedPayloadPoolSize": int(pool),
        }
    else:
        document["payloadFile"] = f"payload/{payload}"
    if other:
        key, value = other.split("=")
        document[key] = value
    return document


ROWS = shipped_workloads()
NOT_FOUND = f"{OMB_MD} not found (the reference sits beside the repository)"


@pytest.mark.skipif(not ROWS, reason=NOT_FOUND)
def test_the_reference_lists_all_130_shipped_workloads():
    assert len(ROWS) == 130
    assert len({row[0] for row in ROWS}) == 130


@pytest.mark.skipif(not ROWS, reason=NOT_FOUND)
@pytest.mark.parametrize("cells", ROWS or [None], ids=[row[0] for row in ROWS] or ["none"])
def test_shipped_omb_workload_loads_with_its_values(cells, tmp_path):
    document = to_omb_yaml(cells)
    path = tmp_path / f"{cells[0]}.yaml"
    path.write_text(yaml.safe_dump(document, sort_keys=False))
    workload = load_workload(path)
    loaded = workload.model_dump(by_alias=True)
    for key, value in document.items():
        assert loaded[key] == value, key
    assert workload.warmup_duration_s == 60  # OMB's default; no shipped file sets it
    assert workload.backlog_drain_ratio == 1.0
    assert workload.key_distributor == "NO_KEY"


ORIGINALS = sorted(Path(os.environ.get("OMB_WORKLOADS_DIR", "/nonexistent")).glob("*.yaml"))


@pytest.mark.skipif(not ORIGINALS, reason="set OMB_WORKLOADS_DIR to an OMB checkout's workloads/")
@pytest.mark.parametrize("path", ORIGINALS or [None], ids=[p.stem for p in ORIGINALS] or ["none"])
def test_original_omb_workload_file_loads(path):
    assert load_workload(path).topics >= 1
