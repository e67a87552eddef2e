"""The upstream Kafka cluster's layout and files, and finding Java and Kafka's jars, without
starting a JVM (tests/upstream starts the real servers)."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from loadgen.base.errors import LocalBrokerSetupError
from loadgen.driver_api.local import java
from loadgen.local_brokers.launcher import Variant, variants
from loadgen_drivers.kafka.local import cluster, distribution
from loadgen_drivers.kafka.local.cluster import Node, Secured
from loadgen_drivers.kafka.local.upstream import _driver_config


def layout(count: int, folder: Path = Path("/data")) -> list[Node]:
    controllers = cluster.controllers(count)
    return [
        Node(i + 1, "127.0.0.1", 9000 + i, 9100 + i if i < controllers else None, folder / str(i))
        for i in range(count)
    ]


def settings(text: str) -> dict[str, str]:
    return dict(line.split("=", 1) for line in text.splitlines())


@pytest.mark.parametrize(
    ("count", "roles", "replicas", "min_isr"),
    [
        (1, ["broker,controller"], "1", "1"),
        (2, ["broker,controller", "broker"], "2", "2"),
        (3, ["broker,controller"] * 3, "3", "2"),
        (5, ["broker,controller"] * 3 + ["broker"] * 2, "3", "2"),
    ],
)
def test_three_controllers_from_three_nodes_on_and_internal_topics_replicated(
    count, roles, replicas, min_isr
):
    nodes = layout(count)
    written = [settings(cluster.server_properties(node, nodes, None)) for node in nodes]
    assert [node["process.roles"] for node in written] == roles
    voting = roles.count("broker,controller")
    quorum = ",".join(f"{n}@127.0.0.1:{9099 + n}" for n in range(1, voting + 1))
    assert {node["controller.quorum.voters"] for node in written} == {quorum}
    assert {node["offsets.topic.replication.factor"] for node in written} == {replicas}
    assert {node["transaction.state.log.min.isr"] for node in written} == {min_isr}
    assert [node["advertised.listeners"] for node in written] == [
        f"CLIENT://127.0.0.1:{9000 + i}" for i in range(count)
    ]
    assert all(node["log.dirs"] == f"/data/{i}/data" for i, node in enumerate(written))


def test_a_node_told_to_advertise_a_proxys_port_listens_on_its_own_and_reads_back_the_same(
    tmp_path,
):
    nodes = [Node(1, "127.0.0.1", 9000, 9100, tmp_path, advertised_port=9555)]
    written = cluster.server_properties(nodes[0], nodes, None)
    assert settings(written)["listeners"] == "CLIENT://127.0.0.1:9000,CONTROLLER://127.0.0.1:9100"
    assert settings(written)["advertised.listeners"] == "CLIENT://127.0.0.1:9555"
    (tmp_path / "server.properties").write_text(written)
    assert cluster.written_node(tmp_path) == nodes[0]
    broker_only = layout(5, tmp_path)[4]
    (tmp_path / "server.properties").write_text(
        cluster.server_properties(broker_only, layout(5, tmp_path), None)
    )
    assert cluster.written_node(tmp_path) == Node(5, "127.0.0.1", 9004, None, tmp_path)


def test_a_restart_that_finds_no_nodes_is_a_setup_error_naming_the_folder(tmp_path, monkeypatch):
    from loadgen_drivers.kafka.local import upstream

    monkeypatch.setattr(upstream, "java_binary", lambda kind: Path("/no/java"))
    found = java.ServerJars("4.4.0", (tmp_path / "x.jar",), "test")
    monkeypatch.setattr(upstream, "kafka_distribution", lambda: found)
    with pytest.raises(
        LocalBrokerSetupError, match=f"no Apache Kafka nodes to restart in {tmp_path}"
    ):
        upstream.start_upstream_kafka(None, tmp_path, keep_data=True)


def test_a_secured_listener_takes_plain_users_from_its_jaas_line_and_scram_from_metadata():
    secured = Secured(
        Path("/k/store.pem"), Path("/k/ca.pem"), {"broker": "b-secret", "loadgen": 'p"w'}
    )
    written = settings(cluster.server_properties(layout(1)[0], layout(1), secured))
    assert written["listener.security.protocol.map"] == "CLIENT:SASL_SSL,CONTROLLER:PLAINTEXT"
    assert written["sasl.enabled.mechanisms"] == "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512"
    plain = written["listener.name.client.plain.sasl.jaas.config"]
    assert 'username="broker" password="b-secret"' in plain
    assert 'user_loadgen="p\\"w"' in plain  # JAAS-quoted
    assert written["ssl.keystore.type"] == "PEM" and written["ssl.keystore.location"] == (
        "/k/store.pem"
    )


def test_the_driver_file_replicates_three_times_with_two_in_sync_from_three_nodes_on():
    one, three = _driver_config(layout(1), None, None), _driver_config(layout(3), None, None)
    assert one["replicationFactor"] == 1 and "topicConfig" not in one
    assert three["replicationFactor"] == 3 and three["topicConfig"] == "min.insync.replicas=2"
    assert "bootstrap.servers=127.0.0.1:9000,127.0.0.1:9001,127.0.0.1:9002" in three["commonConfig"]
    assert "fetch.wait.max.ms" not in three["consumerConfig"]  # none of tansu's settings


def test_every_variant_has_its_own_state_name_and_kafka_offers_all_four():
    assert [variant.name for variant in variants("kafka")] == [
        "kafka", "kafka-secure", "kafka-upstream", "kafka-upstream-secure",
    ]  # fmt: skip
    assert Variant("kafka", upstream=True, secure=True).shown == "kafka --upstream --secure"


def test_kafka_home_without_kafkas_jars_is_a_setup_error_naming_what_to_set(tmp_path):
    (tmp_path / "libs").mkdir()
    (tmp_path / "libs" / "kafka-clients-4.4.0.jar").touch()
    with pytest.raises(LocalBrokerSetupError) as caught:
        distribution.KAFKA.from_home(tmp_path)
    assert caught.value.exit_code == 2
    assert f"KAFKA_HOME={tmp_path} is not an unpacked Apache Kafka" in str(caught.value)
    (tmp_path / "libs" / "kafka_2.13-4.3.1.jar").touch()
    found = distribution.KAFKA.from_home(tmp_path)
    assert found.version == "4.3.1" and len(found.classpath) == 2


@pytest.mark.parametrize(
    ("shown", "major"),
    [('openjdk version "17.0.15" 2025-04-15', 17), ('java version "1.8.0_412"', 8),
     ('openjdk version "25" 2025-09-16', 25), ("no version here", 0)],
)  # fmt: skip
def test_the_java_feature_release_is_read_from_java_version(tmp_path, shown, major):
    fake = tmp_path / "java"
    fake.write_text(f"#!/bin/sh\necho '{shown}' >&2\n")
    fake.chmod(0o755)
    assert java.java_major_version(fake) == major


def test_a_java_home_without_java_or_too_old_is_refused_naming_java_home(tmp_path, monkeypatch):
    monkeypatch.setenv("JAVA_HOME", str(tmp_path))
    with pytest.raises(LocalBrokerSetupError, match=r"has no bin/java.*set JAVA_HOME"):
        java.java_binary("kafka")
    (tmp_path / "bin").mkdir()
    old = tmp_path / "bin" / "java"
    old.write_text("#!/bin/sh\necho 'java version \"1.8.0_412\"' >&2\n")
    old.chmod(0o755)
    with pytest.raises(LocalBrokerSetupError, match="is Java 8; it needs 17 or later"):
        java.java_binary("kafka")


def test_without_mvn_and_nothing_cached_the_error_says_to_install_maven(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(LocalBrokerSetupError, match=r"no mvn on PATH.*install Maven"):
        java.maven_classpath("kafka", "kafka-9.9.9", ["a:b:9.9.9"], print)


def test_a_cached_classpath_is_used_without_maven_while_every_jar_is_there(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))  # no mvn: only the cache can answer
    jar = tmp_path / "a.jar"
    jar.touch()
    cached = tmp_path / "loadgen" / "maven" / "kafka-9.9.9"
    cached.mkdir(parents=True)
    (cached / "classpath.txt").write_text(str(jar))
    said = []
    assert java.maven_classpath("kafka", "kafka-9.9.9", ["a:b:9.9.9"], said.append) == [jar]
    assert said == []
    jar.unlink()  # a jar gone from the Maven cache: resolve again (here: no mvn)
    with pytest.raises(LocalBrokerSetupError):
        java.maven_classpath("kafka", "kafka-9.9.9", ["a:b:9.9.9"], said.append)


def test_the_pom_depends_on_exactly_the_coordinates():
    pom = java._pom("kafka-4.4.0", distribution.COORDINATES)
    assert pom.count("<dependency>") == len(distribution.COORDINATES)
    assert "<artifactId>kafka_2.13</artifactId><version>4.4.0</version>" in pom


def test_node_files_with_passwords_are_their_owners_only(tmp_path):
    from loadgen_drivers.kafka.local import upstream

    nodes = layout(1, tmp_path)
    secured = Secured(tmp_path / "s.pem", tmp_path / "ca.pem", {"broker": "b", "loadgen": "p"})
    found = java.ServerJars("4.4.0", (tmp_path / "x.jar",), "test")
    upstream._write_node_files(nodes[0], nodes, secured, found)
    mode = stat.S_IMODE(os.stat(nodes[0].folder / "server.properties").st_mode)
    assert mode == 0o600
    assert (nodes[0].folder / "classpath.args").read_text() == f"-cp {tmp_path / 'x.jar'}\n"
