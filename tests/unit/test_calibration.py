"""The host's calibration: shipped figures, a user's own file over them, and the process count
a run gets from it."""

import json
import subprocess
import sys

import pytest

from loadgen.base import calibration
from loadgen.base.errors import ConfigError
from loadgen.distributed.placement import Placement
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.spec import Workload, parse_model

WORKLOAD = dict(
    name="w", topics=4, partitionsPerTopic=1, messageSize=100, producersPerTopic=1,
    subscriptionsPerTopic=1, consumerPerSubscription=1, producerRate=100_000,
    testDurationMinutes=1,
)  # fmt: skip


@pytest.fixture
def user_file(tmp_path, monkeypatch):
    path = tmp_path / "calibration.json"
    monkeypatch.setenv(calibration.ENVIRONMENT, str(path))
    calibration.current.cache_clear()
    yield path
    calibration.current.cache_clear()


def test_the_shipped_figures_say_where_they_come_from(user_file):
    shipped = calibration.current()
    assert set(shipped.process_capacity) == {"memory", "kafka", "pulsar", "rabbitmq"}
    assert all(capacity > 0 for capacity in shipped.process_capacity.values())
    assert "bench/process_capacity.py" in shipped.source


def test_a_users_file_overrides_the_drivers_it_measured_and_keeps_the_others(user_file):
    own = {"processCapacity": {"kafka": 1000}, "hostBusy": {"share": 0.7}, "source": "mine"}
    user_file.write_text(json.dumps(own))
    merged = calibration.current()
    shipped = calibration.read(calibration.SHIPPED)
    assert merged.process_capacity == {**shipped.process_capacity, "kafka": 1000.0}
    assert (merged.host_busy_share, merged.host_busy_wait_us) == (0.7, shipped.host_busy_wait_us)
    assert merged.source.startswith("mine; other drivers: shipped")


def test_a_broken_file_is_a_config_error_naming_it(user_file):
    user_file.write_text("{not json")
    with pytest.raises(ConfigError) as caught:
        calibration.current()
    assert caught.value.file == str(user_file)


def test_the_default_process_count_follows_the_calibrated_capacity(user_file, monkeypatch):
    monkeypatch.setattr("loadgen.distributed.placement.cpus_here", lambda: 4)
    workload = parse_model(Workload, WORKLOAD, file="t")
    spec = DriverSpec(name="Kafka", kind="kafka", config={})
    user_file.write_text(json.dumps({"processCapacity": {"kafka": 400_000}}))
    assert Placement(processes=None).sized(spec, workload).processes == 1  # 200k: half of 400k
    user_file.write_text(json.dumps({"processCapacity": {"kafka": 100_000}}))
    calibration.current.cache_clear()
    chosen = Placement(processes=None).sized(spec, workload).chosen
    assert chosen.count == 4 and "at 50,000 per process" in chosen.reason


def test_loadgen_calibrate_measures_a_driver_and_writes_the_file(tmp_path):
    out = tmp_path / "calibration.json"
    command = [sys.executable, "-m", "loadgen", "calibrate", "--drivers", "memory"]
    done = subprocess.run(
        [*command, "--rounds", "1", "--seconds", "1", "-o", str(out)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    written = calibration.read(out)
    assert written.process_capacity["memory"] > 10_000  # messages per CPU second, measured
    shipped = calibration.read(calibration.SHIPPED)
    assert written.process_capacity["kafka"] == shipped.process_capacity["kafka"]  # kept
    assert "loadgen calibrate --drivers memory --rounds 1 --seconds 1" in written.source
    assert "memory    median" in done.stdout


def test_loadgen_calibrate_refuses_an_unknown_driver(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "loadgen", "calibrate", "--drivers", "memroy"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "memroy" in done.stderr and "memory" in done.stderr
