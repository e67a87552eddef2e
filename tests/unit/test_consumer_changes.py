"""consumerChanges: validated like every other field, made on time by the measurement loop,
refused where they cannot be made (consumers split over workers)."""

import pytest
from tests.unit.test_report import MEMORY, workload

from loadgen.base.errors import ConfigError, ConsumerChangesNeedOneWorker
from loadgen.distributed.placement import Placement, open_worker
from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.runner import execute
from loadgen.spec import Workload
from loadgen.spec.model import parse_model


def changed(*changes, **fields):
    base = workload(consumerPerSubscription=2, **fields).model_dump(by_alias=True)
    return parse_model(Workload, base | {"consumerChanges": list(changes)}, file="w.yaml")


@pytest.mark.parametrize(
    "change, path",
    [
        ({"at": "5s", "join": 1, "leave": 1}, "consumerChanges.0"),
        ({"at": "5s"}, "consumerChanges.0"),
        ({"at": "soon", "join": 1}, "consumerChanges.0.at"),
        ({"at": 0, "join": 1}, "consumerChanges.0.at"),
        ({"at": "5s", "join": 1, "when": 3}, "consumerChanges.0.when"),
        ({"at": "5s", "leave": 2}, "consumerChanges.0.leave"),
        ({"at": "2m", "join": 1}, "consumerChanges.0.at"),
    ],
)
def test_a_bad_change_names_its_item_and_field(change, path):
    with pytest.raises(ConfigError) as error:
        changed(change)
    assert error.value.path == path and error.value.file == "w.yaml"


def test_leaves_are_counted_in_time_order_and_catch_up_runs_refuse_changes():
    kept = changed({"at": "20s", "leave": 2}, {"at": "10s", "join": 1})  # 2 + 1 - 2 = 1
    assert [c.at_s for c in kept.consumer_changes] == [20, 10]
    with pytest.raises(ConfigError) as error:
        changed({"at": "5s", "join": 1}, consumerBacklogSizeGB=0.01)
    assert error.value.path == "consumerChanges"


def test_changes_are_made_on_time_with_every_message_read_once(tmp_path):
    chosen = changed({"at": 0.5, "join": 2}, {"at": 1.2, "leave": 3})
    options = RunOptions(duration_s=2, warmup_s=0, stats_interval_s=0.5)
    _, result, _ = execute(RunRequest(chosen, MEMORY, options, out_dir=tmp_path))
    made = result["consumerChanges"]
    assert [(c["join"], c["leave"], c["consumersPerSubscription"]) for c in made] == [
        (2, 0, 4),
        (0, 3, 1),
    ]
    assert made[1]["timeMs"] - made[0]["timeMs"] == pytest.approx(700, abs=300)
    assert 0 < result["totalMessagesSent"] == result["totalMessagesReceived"]
    assert result["totalLost"] == result["totalDuplicates"] == 0


def test_a_change_past_the_duration_given_on_the_command_line_is_refused(tmp_path):
    chosen = changed({"at": "30s", "join": 1})
    with pytest.raises(ConfigError) as error:
        execute(RunRequest(chosen, MEMORY, RunOptions(duration_s=10), out_dir=tmp_path))
    assert error.value.path == "consumerChanges.0.at" and error.value.value == 30


def test_changes_are_refused_before_any_worker_process_starts():
    chosen = changed({"at": "5s", "join": 1}, topics=2)  # a topic per process
    with (
        pytest.raises(ConsumerChangesNeedOneWorker) as error,
        open_worker(MEMORY, chosen, Placement(processes=2)),
    ):
        pass
    assert error.value.exit_code == 2 and "2 workers or processes" in str(error.value)
