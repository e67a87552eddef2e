"""Every workload OMB ships must load: rebuilt from the table in shared/reference/omb.md §14.

The OMB files themselves are not redistributed here; set OMB_WORKLOADS_DIR to an OMB checkout's
workloads/ folder to also load the originals.
"""

import os
from pathlib import Path

import pytest
import yaml

from loadgen.spec import load_workload

OMB_MD = Path(__file__).resolve().parents[3] / "shared" / "reference" / "omb.md"


def shipped_workloads():
    if not OMB_MD.exists():
        return []
    text = OMB_MD.read_text(encoding="utf-8")
    section = text.split("## 14. Shipped workloads", 1)[1]
    rows = []
    for line in section.splitlines():
        cells = [cell.strip() for cell in line.strip().strip("|").split("|")]
        if len(cells) != 12 or cells[0] in ("file", "---") or set(cells[0]) <= {"-"}:
            continue
        rows.append(cells)
    return rows


def to_omb_yaml(cells):
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


@pytest.mark.skipif(not ROWS, reason=f"{OMB_MD} not found (it sits beside the repository in CI)")
def test_the_reference_lists_all_130_shipped_workloads():
    assert len(ROWS) == 130


@pytest.mark.parametrize("cells", ROWS, ids=[row[0] for row in ROWS])
def test_shipped_omb_workload_loads_with_its_values(cells, tmp_path):
    document = to_omb_yaml(cells)
    path = tmp_path / f"{cells[0]}.yaml"
    path.write_text(yaml.safe_dump(document))
    workload = load_workload(path)
    assert workload.topics == document["topics"]
    assert workload.partitions_per_topic == document["partitionsPerTopic"]
    assert workload.message_size == document["messageSize"]
    assert workload.producer_rate == document["producerRate"]
    assert workload.consumer_backlog_size_gb == document["consumerBacklogSizeGB"]
    assert workload.test_duration_s == document["testDurationMinutes"] * 60
    assert workload.warmup_duration_s == 60  # OMB's default
    assert workload.use_randomized_payloads == ("useRandomizedPayloads" in document)


ORIGINALS = sorted(Path(os.environ.get("OMB_WORKLOADS_DIR", "/nonexistent")).glob("*.yaml"))


@pytest.mark.skipif(not ORIGINALS, reason="set OMB_WORKLOADS_DIR to an OMB checkout's workloads/")
@pytest.mark.parametrize("path", ORIGINALS, ids=[p.stem for p in ORIGINALS])
def test_original_omb_workload_file_loads(path):
    assert load_workload(path).topics >= 1
