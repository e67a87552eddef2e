"""Every workload OMB ships must load with its values (tests/fixtures/omb_workloads.yaml).

The fixture holds the values of OMB's files; set OMB_WORKLOADS_DIR to an OMB checkout's
workloads/ folder to also load the originals.
"""

import os
from pathlib import Path

import pytest
import yaml

from loadgen.spec import load_workload

SHIPPED = yaml.safe_load(
    (Path(__file__).resolve().parents[1] / "fixtures" / "omb_workloads.yaml").read_text()
)


def test_the_fixture_holds_all_130_shipped_workloads():
    assert len(SHIPPED) == 130
    assert all(name == document["name"] for name, document in SHIPPED.items())


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_omb_workload_loads_with_its_values(name, tmp_path):
    document = SHIPPED[name]
    path = tmp_path / f"{name}.yaml"
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
