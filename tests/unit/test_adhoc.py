"""``loadgen run URL`` flags → the workload and driver a YAML pair would give, without a broker."""

import pytest

from loadgen.base.errors import ConfigError
from loadgen.driver_api import urls
from loadgen.driver_api.driver_file import load_driver_spec
from loadgen.running import adhoc
from loadgen.spec import Workload, load_workload

NOTHING = dict.fromkeys(adhoc.FLAGS)


def given(**flags):
    return NOTHING | {f"--{name.replace('_', '-')}": value for name, value in flags.items()}


def test_flags_set_the_omb_fields_and_the_rest_take_the_documented_defaults():
    workload, spec = adhoc.plan(
        ("kafka://127.0.0.1:19092",),
        (),
        given(rate=10_000.0, size=4096, partitions=16, consumers=2, duration=30.0),
        dry_run=False,
    )
    assert isinstance(workload, Workload)
    assert (workload.producer_rate, workload.message_size) == (10_000.0, 4096)
    assert (workload.topics, workload.partitions_per_topic) == (1, 16)
    assert (workload.producers_per_topic, workload.subscriptions_per_topic) == (1, 1)
    assert workload.consumer_per_subscription == 2
    assert (workload.test_duration_s, workload.warmup_duration_s) == (30.0, 0.0)
    assert workload.key_distributor == "NO_KEY"
    assert workload.name == "adhoc-1-topic-16-partition-4096b-10000"
    assert spec.kind == "kafka"
    assert spec.config["commonConfig"] == "bootstrap.servers=127.0.0.1:19092\n"
    assert spec.config["producerConfig"] == {"acks": "all"}  # OMB's files say the same


def test_dry_run_yaml_loads_back_as_the_same_workload_and_driver(tmp_path):
    workload, spec = adhoc.plan(
        ("pulsar://127.0.0.1:6650",),
        (),
        given(rate=1500.0, topics=2, subscriptions=3, key_distributor="KEY_ROUND_ROBIN"),
        dry_run=True,
    )
    workload_text, driver_text = adhoc.as_yaml(workload, spec).split("\n---\n")
    (tmp_path / "w.yaml").write_text(workload_text)
    (tmp_path / "d.yaml").write_text(driver_text)
    assert load_workload(tmp_path / "w.yaml") == workload
    loaded = load_driver_spec(tmp_path / "d.yaml")
    assert (loaded.name, loaded.kind, dict(loaded.config)) == (spec.name, spec.kind, spec.config)


def test_dry_run_redacts_the_urls_and_the_driver_files_secrets(tmp_path):
    settings = tmp_path / "kafka.yaml"
    settings.write_text(
        "name: K\ndriver: kafka\ncommonConfig: |\n  sasl.password=hunter2\n"
        "producerConfig: {}\nconsumerConfig: {}\n"
    )
    printed = adhoc.as_yaml(*adhoc.plan(("kafka://h:1",), (settings,), NOTHING, True))
    assert "hunter2" not in printed and "sasl.password=<redacted>" in printed
    rabbit = adhoc.as_yaml(*adhoc.plan(("amqp://user:pw@h:5672/%2F",), (), NOTHING, True))
    assert "pw" not in rabbit and "amqp://<redacted>@h:5672/%2F" in rabbit


def test_a_url_with_workload_files_or_a_second_url_exits_2_naming_both():
    for arguments in (("kafka://h:1", "w.yaml"), ("kafka://h:1", "kafka://h:2")):
        with pytest.raises(ConfigError, match="one URL") as raised:
            adhoc.plan(arguments, (), NOTHING, False)
        assert raised.value.exit_code == 2
        assert " ".join(arguments) in str(raised.value)


@pytest.mark.parametrize(("flags", "named"), [(given(rate=5.0), "--rate"), (NOTHING, "--dry-run")])
def test_url_only_flags_with_workload_files_are_refused_not_ignored(flags, named):
    with pytest.raises(ConfigError, match=f"{named}.*from a URL"):
        adhoc.plan(("w.yaml",), (), flags, dry_run=named == "--dry-run")


def test_workload_files_may_still_take_duration_and_warmup():
    assert adhoc.plan(("w.yaml",), (), given(duration=5.0, warmup=1.0), False) is None


def test_a_bad_value_names_the_flag_not_the_yaml_field():
    with pytest.raises(ConfigError, match=r"--partitions") as raised:
        adhoc.adhoc_workload(given(topics=10_000, partitions=10_000))
    assert "partitionsPerTopic" not in str(raised.value).split(":")[0]


def test_one_driver_file_at_most_with_a_url(tmp_path):
    with pytest.raises(ConfigError, match="at most one -d"):
        adhoc.adhoc_driver("kafka://h:1", (tmp_path / "a.yaml", tmp_path / "b.yaml"))


def test_a_plug_in_driver_declares_its_scheme():
    # the memory driver registers through the same entry-point group as any plug-in
    spec = urls.driver_for_url("memory://")
    assert (spec.kind, spec.name, dict(spec.config)) == ("memory", "Memory", {})


def test_an_unknown_scheme_lists_the_built_in_and_plug_in_ones():
    with pytest.raises(ConfigError) as raised:
        urls.driver_for_url("mqtt://h:1883")
    message = str(raised.value)
    assert "mqtt://h:1883" in message
    assert "kafka://host:port" in message and "memory://host:port" in message
