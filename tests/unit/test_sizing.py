"""The default process count: sized to the rate asked, the CPUs usable and the split."""

import pytest

from loadgen.distributed.placement import Placement
from loadgen.distributed.sizing import (
    asked_rate,
    busy_processes,
    cgroup_cpu_limit,
    default_process_count,
    whole_cpus,
)
from loadgen.distributed.split import BY_TOPIC, OMB
from loadgen.driver_api.driver_spec import DriverSpec
from loadgen.spec import Workload, parse_model

CAPACITY = 88_000.0  # messages sent + received per CPU second: a round figure for the arithmetic


def workload(**changes) -> Workload:
    fields = {
        "name": "w",
        "topics": 1,
        "partitionsPerTopic": 16,
        "messageSize": 1024,
        "subscriptionsPerTopic": 1,
        "consumerPerSubscription": 1,
        "producersPerTopic": 1,
        "producerRate": 10_000,
        "testDurationMinutes": 1,
        **changes,
    }
    return parse_model(Workload, fields, file="w.yaml")


def test_10k_msg_s_on_two_cores_runs_in_one_process():
    chosen = default_process_count(OMB, workload(), CAPACITY, 2, "kafka")
    assert chosen.count == 1
    assert chosen.chosen_by == "workload"
    assert "20,000 msg/s" in chosen.reason and "1 needed" in chosen.reason


def test_a_rate_past_half_a_process_gets_more_up_to_the_cpus():
    # 30k sent + 30k received = 60k, at 44k per process: 2
    assert default_process_count(OMB, workload(producerRate=30_000), CAPACITY, 8, "k").count == 2
    # 200k msg/s would need 10; one producer and one consumer keep 2 busy
    two = default_process_count(OMB, workload(producerRate=200_000), CAPACITY, 8, "k")
    assert two.count == 2 and "10 needed" in two.reason
    many = workload(producerRate=200_000, producersPerTopic=4, consumerPerSubscription=4)
    assert default_process_count(OMB, many, CAPACITY, 8, "k").count == 8
    assert default_process_count(OMB, many, CAPACITY, 3, "k").count == 3


def test_a_run_without_a_fixed_rate_gets_every_cpu_the_split_keeps_busy():
    discovery = workload(producerRate=0)
    assert asked_rate(discovery) is None
    assert default_process_count(OMB, discovery, CAPACITY, 2, "k").count == 2
    catch_up = workload(consumerBacklogSizeGB=1)
    assert default_process_count(OMB, catch_up, CAPACITY, 4, "k").count == 2
    # the memory driver splits by topic: one topic keeps one process busy
    assert default_process_count(BY_TOPIC, discovery, 1.4e6, 2, "memory").count == 1


def test_a_driver_without_a_measured_capacity_gets_one_process_at_a_fixed_rate():
    chosen = default_process_count(OMB, workload(producerRate=500_000), None, 8, "pravega")
    assert chosen.count == 1 and "no calibrated capacity" in chosen.reason


def test_the_rate_counts_every_subscription_and_the_profile_s_highest_step():
    assert asked_rate(workload(subscriptionsPerTopic=3)) == 40_000
    assert asked_rate(workload(subscriptionsPerTopic=0, consumerPerSubscription=0)) == 10_000
    profile = [{"rate": 5_000, "duration": "10s"}, {"rate": 30_000, "duration": "10s"}]
    assert asked_rate(workload(producerRateProfile=profile)) == 60_000


@pytest.mark.parametrize(
    ("producers", "consumers", "most", "busy"),
    [
        (1, 1, 8, 2),
        (2, 1, 8, 2),
        (1, 3, 8, 3),
        (3, 3, 8, 6),
        (3, 3, 4, 4),
        (1, 0, 8, 1),
        (4, 0, 8, 4),
    ],
)
def test_omb_s_split_keeps_this_many_busy(producers, consumers, most, busy):
    chosen = workload(
        producersPerTopic=producers,
        consumerPerSubscription=consumers,
        subscriptionsPerTopic=1 if consumers else 0,
    )
    assert busy_processes(OMB, chosen, most) == busy


def test_a_quota_of_one_and_a_half_cpus_is_one():
    assert whole_cpus(8, 1.5) == 1
    assert whole_cpus(2, None) == 2
    assert whole_cpus(4, 16.0) == 4
    assert whole_cpus(4, 0.5) == 1


def test_cgroup_v2_quota_is_read_from_the_cgroup_and_its_parents(tmp_path):
    (tmp_path / "self").write_text("0::/a/b\n")
    root = tmp_path / "fs"
    (root / "a" / "b").mkdir(parents=True)
    (root / "a" / "b" / "cpu.max").write_text("max 100000\n")
    (root / "a" / "cpu.max").write_text("250000 100000\n")
    assert cgroup_cpu_limit(tmp_path / "self", root) == 2.5
    (root / "a" / "cpu.max").write_text("max 100000\n")
    assert cgroup_cpu_limit(tmp_path / "self", root) is None


def test_cgroup_v1_quota_is_read_from_the_cpu_hierarchy(tmp_path):
    (tmp_path / "self").write_text("4:memory:/x\n3:cpu,cpuacct:/docker/c1\n0::/\n")
    folder = tmp_path / "fs" / "cpu,cpuacct" / "docker" / "c1"
    folder.mkdir(parents=True)
    (folder / "cpu.cfs_quota_us").write_text("150000\n")
    (folder / "cpu.cfs_period_us").write_text("100000\n")
    assert cgroup_cpu_limit(tmp_path / "self", tmp_path / "fs") == 1.5
    (folder / "cpu.cfs_quota_us").write_text("-1\n")
    assert cgroup_cpu_limit(tmp_path / "self", tmp_path / "fs") is None
    assert cgroup_cpu_limit(tmp_path / "missing", tmp_path / "fs") is None


def test_an_asked_count_wins_and_the_placement_says_why():
    kafka = DriverSpec(name="k", kind="kafka", config={})
    asked = Placement(processes=3).sized(kafka, workload())
    assert asked.processes == 3 and asked.chosen.chosen_by == "--processes"
    sized = Placement(processes=None).sized(kafka, workload())
    assert sized.processes == 1 and sized.chosen.chosen_by == "workload"
    described = sized.describe()
    assert described["processes"] == 1
    assert described["processesChosen"]["chosenBy"] == "workload"
    workers = Placement(workers=("http://a:1", "http://b:1")).sized(kafka, workload())
    assert workers.chosen.count == 2 and workers.chosen.chosen_by == "--workers"
