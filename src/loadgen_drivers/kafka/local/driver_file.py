"""The driver file a local Kafka endpoint prints: OMB's Kafka driver YAML, written as a Java
user would write it (``sasl.jaas.config``, a PEM truststore), so it runs as printed."""

from __future__ import annotations

from pathlib import Path
from typing import Any

SCRAM_MECHANISM = "SCRAM-SHA-512"


def sasl_ssl_settings(ca: Path, user: str, password: str) -> dict[str, str]:
    """The client's SASL_SSL properties: SCRAM-SHA-512 as ``user``, trusting ``ca``."""
    jaas = (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        f'username="{jaas_quoted(user)}" password="{jaas_quoted(password)}";'
    )
    return {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": SCRAM_MECHANISM,
        "sasl.jaas.config": jaas,
        "ssl.truststore.location": str(ca),
        "ssl.truststore.type": "PEM",
    }


def properties(settings: dict[str, Any]) -> str:
    """A properties block (``commonConfig`` and its siblings), one ``key=value`` a line."""
    return "\n".join(f"{key}={value}" for key, value in settings.items())


def driver_yaml(name: str, config: dict[str, Any]) -> str:
    """An OMB driver file: properties blocks as YAML literal blocks, like the ones in configs/."""
    lines = [f"name: {name}", "driver: kafka"]
    for key, value in config.items():
        if key.endswith("Config"):
            lines.append(f"{key}: |")
            lines += [f"  {line}" for line in value.splitlines()]
        else:
            lines.append(f"{key}: {value}")
    return "\n".join(lines) + "\n"


def jaas_quoted(value: str) -> str:
    """``value`` inside a JAAS double-quoted string."""
    return value.replace("\\", "\\\\").replace('"', '\\"')
