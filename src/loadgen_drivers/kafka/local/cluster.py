"""An Apache Kafka cluster on one host, in KRaft mode: which node does what, on which ports,
and each node's ``server.properties``.

One node is a combined broker and controller. From three nodes on, the first three are combined
nodes forming the controller quorum (a majority survives one node's failure) and the rest are
brokers only; internal topics are then replicated three times and need two in-sync replicas.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from loadgen_drivers.kafka.local.driver_file import jaas_quoted

MAX_NODES = 5
QUORUM = 3
"""Controllers once there are enough nodes for a quorum that outlives one failure."""
CLIENT_LISTENER = "CLIENT"
CONTROLLER_LISTENER = "CONTROLLER"
SASL_MECHANISMS = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
INTER_BROKER_USER = "broker"


@dataclass(frozen=True)
class Node:
    node_id: int
    host: str
    port: int
    """The client listener, also used between brokers."""
    controller_port: int | None
    """The controller listener; None for a broker-only node."""
    folder: Path
    advertised_port: int | None = None
    """The port clients are told to connect to (a proxy in front of the node); its own if
    None."""

    @property
    def address(self) -> str:
        return f"{self.host}:{self.port}"

    @property
    def advertised_address(self) -> str:
        return f"{self.host}:{self.advertised_port or self.port}"


@dataclass(frozen=True)
class Secured:
    """What a SASL_SSL client listener needs: the keystore (key and certificate chain, PEM),
    the CA clients and brokers trust, and the PLAIN users (the brokers' own among them)."""

    keystore: Path
    ca: Path
    plain_users: dict[str, str]


def controllers(count: int) -> int:
    return QUORUM if count >= QUORUM else 1


def replication(count: int) -> int:
    """The replication factor of internal topics, and of the topics runs create."""
    return min(count, QUORUM)


def voters(nodes: list[Node]) -> str:
    return ",".join(
        f"{node.node_id}@{node.host}:{node.controller_port}"
        for node in nodes
        if node.controller_port is not None
    )


def server_properties(node: Node, nodes: list[Node], secured: Secured | None) -> str:
    """``node``'s configuration: listeners on its host, its data in its folder, sized for a
    small host (2 network and 4 I/O threads), and no wait before a new group's first rebalance
    (runs measure from their start)."""
    count = len(nodes)
    protocol = "SASL_SSL" if secured else "PLAINTEXT"
    listeners = [f"{CLIENT_LISTENER}://{node.address}"]
    roles = "broker"
    if node.controller_port is not None:
        listeners.append(f"{CONTROLLER_LISTENER}://{node.host}:{node.controller_port}")
        roles = "broker,controller"
    settings = {
        "process.roles": roles,
        "node.id": node.node_id,
        "controller.quorum.voters": voters(nodes),
        "listeners": ",".join(listeners),
        "advertised.listeners": f"{CLIENT_LISTENER}://{node.advertised_address}",
        "listener.security.protocol.map": (
            f"{CLIENT_LISTENER}:{protocol},{CONTROLLER_LISTENER}:PLAINTEXT"
        ),
        "inter.broker.listener.name": CLIENT_LISTENER,
        "controller.listener.names": CONTROLLER_LISTENER,
        "log.dirs": node.folder / "data",
        "num.partitions": 1,
        "num.network.threads": 2,
        "num.io.threads": 4,
        "offsets.topic.replication.factor": replication(count),
        "transaction.state.log.replication.factor": replication(count),
        "transaction.state.log.min.isr": min(2, replication(count)),
        "group.initial.rebalance.delay.ms": 0,
        **(_sasl_ssl(secured) if secured else {}),
    }
    return "".join(f"{key}={value}\n" for key, value in settings.items())


def written_node(folder: Path) -> Node:
    """The node whose configuration :func:`server_properties` wrote in ``folder``."""
    text = (folder / "server.properties").read_text()
    settings = dict(line.partition("=")[::2] for line in text.splitlines())
    listeners = dict(listener.split("://", 1) for listener in settings["listeners"].split(","))
    host, _, port = listeners[CLIENT_LISTENER].rpartition(":")
    controller = listeners.get(CONTROLLER_LISTENER)
    advertised = int(settings["advertised.listeners"].rpartition(":")[2])
    return Node(
        node_id=int(settings["node.id"]),
        host=host,
        port=int(port),
        controller_port=int(controller.rpartition(":")[2]) if controller else None,
        folder=folder,
        advertised_port=advertised if advertised != int(port) else None,
    )


def _sasl_ssl(secured: Secured) -> dict[str, object]:
    """PLAIN users from the listener's JAAS line (brokers log in to each other with PLAIN);
    SCRAM users from the cluster metadata, added when the storage is formatted."""
    prefix = f"listener.name.{CLIENT_LISTENER.lower()}"
    password = secured.plain_users[INTER_BROKER_USER]
    users = " ".join(
        f'user_{user}="{jaas_quoted(secret)}"' for user, secret in secured.plain_users.items()
    )
    return {
        "sasl.enabled.mechanisms": ",".join(SASL_MECHANISMS),
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        f"{prefix}.plain.sasl.jaas.config": (
            "org.apache.kafka.common.security.plain.PlainLoginModule required "
            f'username="{INTER_BROKER_USER}" password="{jaas_quoted(password)}" {users};'
        ),
        **{
            f"{prefix}.{mechanism.lower()}.sasl.jaas.config": (
                "org.apache.kafka.common.security.scram.ScramLoginModule required;"
            )
            for mechanism in SASL_MECHANISMS[1:]
        },
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": secured.keystore,
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": secured.ca,
        "ssl.client.auth": "none",
    }
