"""Faults inside a run on a three-node Apache Kafka (replication factor 3, min.insync.replicas 2,
acks=all, idempotence on): the partition leader killed with SIGKILL and started again, a node
paused as a long GC pause would, and a user's command; each run ends by itself with exit 0,
nothing lost or duplicated, and its unavailability and recovery measured. And the leader killed
under acks=1 with unclean leader election: whatever it alone had is counted lost, and named.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from loadgen.local_brokers import catalogue

pytestmark = pytest.mark.upstream

WORKLOAD = dict(
    name="faults", topics=1, partitionsPerTopic=6, messageSize=512, producersPerTopic=1,
    producerRate=5000, subscriptionsPerTopic=1, consumerPerSubscription=1, testDurationMinutes=1,
)  # fmt: skip


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    state = tmp_path_factory.mktemp("state")
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("LOADGEN_STATE_DIR", str(state))
        broker, _ = catalogue.up("kafka", upstream=True, nodes=3)
        try:
            yield broker, {**os.environ, "LOADGEN_STATE_DIR": str(state)}
        finally:
            catalogue.down("kafka")


def run(
    cluster,
    folder: Path,
    *faults: str,
    slo: tuple[str, ...] = (),
    report: bool = False,
    **changes: str,
) -> tuple[int, dict, str]:
    """``loadgen run`` with ``faults`` on the printed driver file, idempotence on, and
    ``changes`` (``producerConfig=...``, ``topicConfig=...``) replacing its fields; the HTML
    report only when asked."""
    broker, env = cluster
    config = yaml.safe_load(Path(broker.driver_file).read_text())
    config["producerConfig"] += "\nenable.idempotence=true"
    config.update(changes)
    driver = folder / "driver.yaml"
    driver.write_text(yaml.safe_dump(config))
    workload = folder / "workload.yaml"
    workload.write_text(yaml.safe_dump(WORKLOAD))
    arguments = [arg for fault in faults for arg in ("--fault", fault)]
    arguments += [arg for limit in slo for arg in ("--slo", limit)]
    done = subprocess.run(
        [sys.executable, "-m", "loadgen", "run", "-d", str(driver), str(workload),
         "--warmup", "3s", "--duration", "36s", "-o", str(folder / "out"),
         *([] if report else ["--no-report"]), *arguments],
        capture_output=True, text=True, timeout=240, env=env,
    )  # fmt: skip
    found = list((folder / "out").glob("*.json"))
    return done.returncode, json.loads(found[0].read_text()) if found else {}, done.stderr


def survived(code: int, result: dict, stderr: str) -> dict:
    assert code == 0, stderr[-3000:]
    [fault] = result["faults"]
    assert fault["error"] is None and fault["node"] in (1, 2, 3)
    assert result["totalLost"] == 0 and result["totalDuplicates"] == 0
    assert fault["lost"] == 0 and fault["duplicated"] == 0
    assert isinstance(fault["unavailableSeconds"], float)
    assert isinstance(fault["recoverySeconds"], float), fault["recoveryReason"]
    assert result["verdicts"]["faults"]["recovered"] is True
    assert fault["endedAt"] - fault["startedAt"] > 0
    assert result["run"]["options"]["stats_interval_s"] == 1.0  # 1-s intervals with faults
    return fault


def test_the_leader_killed_and_started_again_loses_nothing_and_recovers(cluster, tmp_path):
    code, result, stderr = run(
        cluster, tmp_path, "at=8s action=kill target=leader for=8s",
        slo=("fault.lost==0", "fault.recovery<30s", "faults.recovered"), report=True,
    )  # fmt: skip
    fault = survived(code, result, stderr)
    [page] = (tmp_path / "out").glob("*.html")
    assert 'id="fault-band-throughput' in page.read_text()  # the report shades the fault
    assert fault["endedAt"] - fault["startedAt"] >= 8000  # down 8 s, then started again
    assert "fault: kill node" in stderr and "Fault 1: kill node" in stderr
    assert [check["passed"] for check in result["slo"]["checks"]] == [True, True, True]
    windows = fault["windows"]
    assert windows["before"]["intervals"] >= 5 and windows["after"]["intervals"] >= 5


ACKS_1 = dict(
    producerConfig="acks=1\nlinger.ms=1\nbatch.size=131072",  # no idempotence: it needs acks=all
    topicConfig="min.insync.replicas=1\nunclean.leader.election.enable=true",
)
"""A leader that acknowledges what no follower has yet, and a topic that takes any replica as
its next leader: killing the leader may lose what it alone had acknowledged."""


def test_with_acks_1_what_the_killed_leader_alone_had_is_counted_lost_against_the_fault(
    cluster, tmp_path
):
    """It may lose nothing in a given run (the followers fetch within milliseconds); the
    counts must add up and be attributed all the same, and a loss named only when there was
    one."""
    code, result, stderr = run(
        cluster, tmp_path, "at=8s action=kill target=leader for=8s", **ACKS_1
    )
    assert code == 0, stderr[-3000:]  # losses are reported, not an error (no --slo asked)
    [fault] = result["faults"]
    assert fault["error"] is None and fault["node"] in (1, 2, 3)
    lost, windows = result["totalLost"], fault["windows"]
    by_window = [windows[name]["lost"] for name in ("before", "during", "after")]
    sent, received = result["totalMessagesSent"], result["totalMessagesReceived"]
    outage, recovery = fault["unavailableSeconds"], fault["recoverySeconds"]
    print(
        f"acks=1 leader kill: lost {lost} of {sent} (fault {fault['lost']}, by window "
        f"{by_window}), duplicated {result['totalDuplicates']}, unavailable {outage} s, "
        f"recovery {recovery} s"
    )
    unread = result["totalUnread"] or 0
    assert received == sent - lost - unread + result["totalDuplicates"]  # it adds up
    assert isinstance(outage, float) and isinstance(recovery, float), fault["recoveryReason"]
    # named: the delivery warning when there was a loss, and nothing of one otherwise; the
    # fault's line with the fault's own count
    assert (f"{lost:,} lost" in stderr) == (lost > 0), stderr[-3000:]
    summary = f"Fault 1: kill node {fault['node']} at 8s for 8s: unavailable"
    [line] = [line for line in stderr.splitlines() if line.startswith(summary)]
    assert line.endswith(f"lost {fault['lost']:,}, duplicated {fault['duplicated']:,}"), line
    # every loss is in one of the fault's windows, and all are the fault's own: what only the
    # killed leader had, it acknowledged just before it died (the last interval before it)
    assert sum(by_window) == lost and fault["lost"] == lost, by_window


def test_a_node_paused_like_a_long_gc_pause_loses_nothing(cluster, tmp_path):
    survived(*run(cluster, tmp_path, "at=8s action=pause target=broker:2 for=6s"))


def test_a_command_fault_and_its_undo_run_and_are_recorded(cluster, tmp_path):
    pid = catalogue.status("kafka", upstream=True).node_pids[-1]  # node 3, as now (restarted?)
    code, result, stderr = run(
        cluster, tmp_path,
        f"at=8s action=command command='kill -STOP {pid}' undo='kill -CONT {pid}' for=5s",
    )  # fmt: skip
    assert code == 0, stderr[-3000:]
    [fault] = result["faults"]
    assert [(c["phase"], c["exitCode"]) for c in fault["commands"]] == [
        ("fault", 0),
        ("fault_undo", 0),
    ]
    assert fault["lost"] == 0 and result["totalLost"] == 0


def test_a_bad_fault_is_exit_2_naming_its_key_with_nothing_started(cluster, tmp_path):
    code, _, stderr = run(cluster, tmp_path, "at=8s action=explode target=leader for=5s")
    assert code == 2 and "--fault 1 action" in stderr
    code, _, stderr = run(cluster, tmp_path, "at=8s action=kill target=broker:4 for=5s")
    assert code == 2 and "faults.0.target" in stderr and "3 node(s)" in stderr
    assert not (tmp_path / "out").exists() or not list((tmp_path / "out").iterdir())
