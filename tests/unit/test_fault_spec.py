"""faults: every accepted form from YAML and from --fault, every refusal naming the fault and
its key, and faults that must be over before the measured phase ends."""

import pytest
from pydantic import BaseModel, ConfigDict

from loadgen.base.errors import ConfigError
from loadgen.spec.faults import (
    Fault,
    FaultTarget,
    check_faults_within,
    fault_to_json,
    faults_from_options,
    option_path,
    parse_fault_option,
)
from loadgen.spec.model import parse_model


class Plan(BaseModel):
    """A stand-in for the workload: just its ``faults`` list."""

    model_config = ConfigDict(extra="forbid")

    faults: tuple[Fault, ...] = ()


def parsed(*faults):
    return parse_model(Plan, {"faults": list(faults)}, file="w.yaml").faults


def refusal(fault):
    with pytest.raises(ConfigError) as error:
        parsed({"at": 1, "action": "restart", "target": "leader"}, fault)  # the second is bad
    assert error.value.file == "w.yaml"
    return error.value


@pytest.mark.parametrize(
    "raw, expected",
    [
        (
            {"at": "20s", "action": "kill", "target": "broker:2", "for": "15s"},
            Fault(at_s=20, action="kill", target=FaultTarget(2), for_s=15),
        ),
        (
            {"at": 1.5, "action": "pause", "target": "leader", "for": 0.25},
            Fault(at_s=1.5, action="pause", target=FaultTarget(None), for_s=0.25),
        ),
        (
            {"at": "1m30s", "action": "stop", "target": "broker:12", "for": "2m"},
            Fault(at_s=90, action="stop", target=FaultTarget(12), for_s=120),
        ),
        (
            {"at": "250ms", "action": "restart", "target": "broker:1"},
            Fault(at_s=0.25, action="restart", target=FaultTarget(1)),
        ),
        (
            {"at": 30, "action": "command", "command": "sync"},
            Fault(at_s=30, action="command", command="sync"),
        ),
        (
            {"at": 30, "action": "command", "command": "a", "for": "10s"},
            Fault(at_s=30, action="command", command="a", for_s=10),
        ),
        (
            {"at": 30, "action": "command", "command": "a", "undo": "b", "for": 10},
            Fault(at_s=30, action="command", command="a", undo="b", for_s=10),
        ),
    ],
)
def test_each_action_parses_from_yaml_with_seconds_or_duration_texts(raw, expected):
    (fault,) = parsed(raw)
    assert fault == expected
    assert fault_to_json(fault).keys() == raw.keys()
    assert parsed(fault_to_json(fault)) == (fault,)


def test_a_target_is_a_node_number_or_the_leader():
    faults = parsed(
        {"at": 1, "action": "restart", "target": "broker:3"},
        {"at": 2, "action": "restart", "target": "leader"},
    )
    node, leader = (fault.target for fault in faults)
    assert (node.node, node.is_leader, str(node)) == (3, False, "broker:3")
    assert (leader.node, leader.is_leader, str(leader)) == (None, True, "leader")


def test_the_echo_leaves_unset_keys_out_and_reads_back_as_the_same_fault():
    faults = parsed(
        {"at": "20s", "action": "kill", "target": "broker:2", "for": "15s"},
        {"at": "40s", "action": "command", "command": "tc qdisc add dev lo root netem"},
    )
    echoed = [fault_to_json(f) for f in faults]
    assert echoed == [
        {"at": 20.0, "action": "kill", "target": "broker:2", "for": 15.0},
        {"at": 40.0, "action": "command", "command": "tc qdisc add dev lo root netem"},
    ]
    assert parsed(*echoed) == faults
    dumped = Plan(faults=faults).model_dump(by_alias=True)  # as the workload is dumped
    assert parse_model(Plan, dumped, file=None).faults == faults


@pytest.mark.parametrize(
    "fault, key, allowed",
    [
        ({"at": 1, "action": "kill", "target": "leader", "for": 1, "when": 3}, "when", None),
        ({"at": 1, "action": "crash", "target": "leader", "for": 1}, "action", None),
        ({"action": "kill", "target": "leader", "for": 1}, "at", None),
        ({"at": 1, "target": "leader", "for": 1}, "action", None),
        ({"at": "soon", "action": "kill", "target": "leader", "for": 1}, "at", None),
        ({"at": "-5s", "action": "kill", "target": "leader", "for": 1}, "at", None),
        ({"at": 0, "action": "kill", "target": "leader", "for": 1}, "at", "> 0"),
        ({"at": "0s", "action": "kill", "target": "leader", "for": 1}, "at", "> 0"),
        ({"at": True, "action": "kill", "target": "leader", "for": 1}, "at", None),
        ({"at": float("inf"), "action": "kill", "target": "leader", "for": 1}, "at", None),
        ({"at": 1, "action": "kill", "for": 1}, "target", None),
        ({"at": 1, "action": "restart"}, "target", None),
        ({"at": 1, "action": "kill", "target": "broker:0", "for": 1}, "target", "target"),
        ({"at": 1, "action": "kill", "target": "broker:-1", "for": 1}, "target", "target"),
        ({"at": 1, "action": "kill", "target": "broker", "for": 1}, "target", "target"),
        ({"at": 1, "action": "kill", "target": "node:1", "for": 1}, "target", "target"),
        ({"at": 1, "action": "kill", "target": 2, "for": 1}, "target", "target"),
        ({"at": 1, "action": "command", "command": "x", "target": "leader"}, "target", None),
        ({"at": 1, "action": "kill", "target": "leader"}, "for", None),
        ({"at": 1, "action": "pause", "target": "leader"}, "for", None),
        ({"at": 1, "action": "stop", "target": "leader"}, "for", None),
        ({"at": 1, "action": "restart", "target": "leader", "for": 5}, "for", None),
        ({"at": 1, "action": "kill", "target": "leader", "for": 0}, "for", "> 0"),
        ({"at": 1, "action": "kill", "target": "leader", "for": "ever"}, "for", None),
        ({"at": 1, "action": "command"}, "command", None),
        ({"at": 1, "action": "command", "command": " "}, "command", None),
        ({"at": 1, "action": "command", "command": ["tc", "qdisc"]}, "command", None),
        (
            {"at": 1, "action": "kill", "target": "leader", "for": 1, "command": "x"},
            "command",
            None,
        ),
        ({"at": 1, "action": "restart", "target": "leader", "undo": "x"}, "undo", None),
        ({"at": 1, "action": "command", "command": "x", "undo": "y"}, "undo", None),
    ],
)
def test_a_bad_fault_names_its_item_and_key(fault, key, allowed):
    error = refusal(fault)
    assert error.path == f"faults.1.{key}"
    if allowed == "target":
        assert error.allowed == "broker:N (N >= 1) or leader"
    elif allowed is not None:
        assert error.allowed == allowed


def test_a_bad_action_lists_the_actions_and_an_unknown_key_the_keys():
    assert refusal({"at": 1, "action": "crash"}).allowed == [
        "kill",
        "pause",
        "stop",
        "restart",
        "command",
    ]
    unknown = refusal({"at": 1, "action": "kill", "target": "leader", "for": 1, "when": 3})
    assert unknown.allowed == ["at", "action", "target", "for", "command", "undo"]


def test_refusals_say_why():
    assert "no for" in str(refusal({"at": 1, "action": "restart", "target": "leader", "for": 5}))
    undo = refusal({"at": 1, "action": "command", "command": "x", "undo": "y"})
    assert "give for too" in str(undo)
    misplaced = refusal({"at": 1, "action": "stop", "target": "leader", "for": 1, "undo": "y"})
    assert "action: command only" in str(misplaced)
    assert "not a duration" in str(refusal({"at": "soon", "action": "restart"}))


# --fault


def test_a_fault_option_is_key_value_pairs_with_the_yaml_keys():
    assert parse_fault_option("at=20s action=kill target=broker:2 for=15s", 0) == {
        "at": "20s",
        "action": "kill",
        "target": "broker:2",
        "for": "15s",
    }
    assert faults_from_options(
        ["at=20s action=kill target=broker:2 for=15s", "at=1m action=restart target=leader"]
    ) == (
        Fault(at_s=20, action="kill", target=FaultTarget(2), for_s=15),
        Fault(at_s=60, action="restart", target=FaultTarget(None)),
    )
    assert faults_from_options([]) == ()


def test_a_quoted_command_keeps_its_spaces_and_equals_signs():
    (fault,) = faults_from_options(
        [
            "at=5 action=command command='tc qdisc add dev lo root netem delay 50ms' "
            'for=10s undo="tc qdisc del dev lo root" '
        ]
    )
    assert fault.command == "tc qdisc add dev lo root netem delay 50ms"
    assert fault.undo == "tc qdisc del dev lo root"
    (fault,) = faults_from_options(["at=5 action=command 'command=env A=1 B=2 run'"])
    assert fault.command == "env A=1 B=2 run"


@pytest.mark.parametrize(
    "text, path",
    [
        ("", "--fault 2"),
        ("at 20s", "--fault 2"),
        ("=20s action=kill", "--fault 2"),
        ("at=20s command='tc qdisc", "--fault 2"),
        ("at= action=kill", "--fault 2 at"),
        ("at=1 at=2 action=restart target=leader", "--fault 2 at"),
    ],
)
def test_an_option_that_is_no_list_of_pairs_names_the_option(text, path):
    with pytest.raises(ConfigError) as error:
        faults_from_options(["at=1 action=restart target=leader", text])
    assert error.value.path == path
    assert error.value.allowed is not None


@pytest.mark.parametrize(
    "text, key",
    [
        ("at=1 action=kill target=leader for=1 when=2", "when"),
        ("at=1 action=crash target=leader", "action"),
        ("at=soon action=restart target=leader", "at"),
        ("at=0 action=restart target=leader", "at"),
        ("at=1 action=kill target=broker:0 for=1", "target"),
        ("at=1 action=kill target=leader", "for"),
        ("at=1 action=restart target=leader for=1", "for"),
        ("at=1 action=command", "command"),
        ("at=1 action=command command=x undo=y", "undo"),
    ],
)
def test_a_bad_option_names_the_option_and_the_key(text, key):
    with pytest.raises(ConfigError) as error:
        faults_from_options(["at=1 action=restart target=leader", text])
    assert error.value.path == f"--fault 2 {key}"
    assert str(error.value).startswith(f"--fault 2 {key}: ")


def test_a_bad_option_target_says_what_is_allowed():
    with pytest.raises(ConfigError) as error:
        faults_from_options(["at=1 action=kill target=broker:x for=1"])
    assert error.value.allowed == "broker:N (N >= 1) or leader"


# within the measured phase


def test_faults_must_be_over_before_the_measured_phase_ends():
    faults = parsed(
        {"at": "10s", "action": "kill", "target": "broker:1", "for": "15s"},
        {"at": "50s", "action": "restart", "target": "leader"},
        {"at": "5s", "action": "command", "command": "x"},
    )
    check_faults_within(faults, 60)
    with pytest.raises(ConfigError) as error:
        check_faults_within(faults, 25)  # 10 s + 15 s ends with the phase: too late
    assert (error.value.path, error.value.value, error.value.allowed) == (
        "faults.0.for",
        15,
        "below 15 s",
    )
    with pytest.raises(ConfigError) as error:
        check_faults_within(faults, 50)
    assert (error.value.path, error.value.value, error.value.allowed) == (
        "faults.1.at",
        50,
        "below 50 s",
    )


def test_a_fault_starting_after_the_end_names_at_not_for():
    faults = parsed({"at": "2m", "action": "pause", "target": "leader", "for": "5s"})
    with pytest.raises(ConfigError) as error:
        check_faults_within(faults, 60)
    assert error.value.path == "faults.0.at"


def test_option_faults_past_the_end_name_the_option():
    faults = faults_from_options(["at=30s action=stop target=broker:1 for=40s"])
    with pytest.raises(ConfigError) as error:
        check_faults_within(faults, 60, path=option_path)
    assert error.value.path == "--fault 1 for"
    assert "below 30 s" in str(error.value)
