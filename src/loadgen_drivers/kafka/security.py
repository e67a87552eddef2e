"""Java's Kafka security properties, as librdkafka takes them.

An OMB driver file for a secured cluster carries the Java client's settings; librdkafka names
or shapes most of them differently:

=========================================  ==================================================
Java (driver file)                         librdkafka
=========================================  ==================================================
``sasl.jaas.config`` Plain/ScramLoginModule ``sasl.username`` + ``sasl.password``
``sasl.jaas.config`` OAuthBearer / Krb5     refused: set ``sasl.oauthbearer.*`` /
                                            ``sasl.kerberos.*`` instead
``sasl.mechanism``                          ``sasl.mechanisms``
``ssl.truststore.*`` PKCS12                 ``ssl.ca.pem`` (its certificates, read in memory)
``ssl.truststore.*`` PEM file               ``ssl.ca.location``
``ssl.truststore.certificates`` (PEM text)  ``ssl.ca.pem``
``ssl.keystore.*`` PKCS12                   ``ssl.certificate.pem`` + ``ssl.key.pem``
``ssl.keystore.*`` PEM file                 ``ssl.certificate.location`` + ``ssl.key.location``
``ssl.keystore.certificate.chain`` / key    ``ssl.certificate.pem`` / ``ssl.key.pem``
``ssl.endpoint.identification.algorithm=``  ``none`` (Java's empty value turns the check off)
JKS stores (either)                         refused with the ``keytool`` command to convert
=========================================  ==================================================

A store's format is read from its first bytes (JKS starts with 0xFEEDFEED), not only from its
``type``: Java 9+ keytool writes PKCS12 whatever a file is called. No error quotes a password,
a JAAS text or a key.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from cryptography.hazmat.primitives.asymmetric.types import PrivateKeyTypes
from cryptography.hazmat.primitives.serialization import Encoding, NoEncryption, PrivateFormat
from cryptography.hazmat.primitives.serialization.pkcs12 import load_key_and_certificates
from cryptography.x509 import Certificate

from loadgen.base.errors import ConfigError
from loadgen_drivers.kafka.jaas import JaasSyntaxError, parse_jaas

JKS_MAGICS = {b"\xfe\xed\xfe\xed": "JKS", b"\xce\xce\xce\xce": "JCEKS"}
SASL_MODULES = {
    "PlainLoginModule": ("PLAIN",),
    "ScramLoginModule": ("SCRAM-SHA-256", "SCRAM-SHA-512"),
}
"""JAAS login modules librdkafka can stand in for, and the mechanisms each serves."""
UNSUPPORTED_MODULES = {
    "OAuthBearerLoginModule": (
        "sasl.mechanism=OAUTHBEARER with librdkafka's sasl.oauthbearer.method=oidc, "
        "sasl.oauthbearer.client.id, sasl.oauthbearer.client.secret, "
        "sasl.oauthbearer.token.endpoint.url (and sasl.oauthbearer.scope) instead"
    ),
    "Krb5LoginModule": (
        "sasl.mechanism=GSSAPI with librdkafka's sasl.kerberos.service.name, "
        "sasl.kerberos.principal, sasl.kerberos.keytab (and sasl.kerberos.kinit.cmd) instead"
    ),
}
STORE_KEYS = ("location", "password", "type")
SECURITY_KEYS = {
    "sasl.jaas.config",
    "sasl.mechanism",
    "ssl.key.password",
    "ssl.truststore.certificates",
    "ssl.keystore.key",
    "ssl.keystore.certificate.chain",
    *(f"ssl.{store}.{key}" for store in ("truststore", "keystore") for key in STORE_KEYS),
}


def translate_security(
    section: str, properties: Mapping[str, str], source: str | None
) -> dict[str, str]:
    """The security part of one properties block, in librdkafka's terms (empty when none)."""
    where = _Where(section, source)
    found = {key: properties[key] for key in SECURITY_KEYS if key in properties}
    translated: dict[str, str] = {}
    if "sasl.mechanism" in found:
        translated["sasl.mechanisms"] = found["sasl.mechanism"]
    if "sasl.jaas.config" in found:
        translated |= _jaas(found["sasl.jaas.config"], found.get("sasl.mechanism"), where)
    if "ssl.truststore.certificates" in found:
        translated["ssl.ca.pem"] = found["ssl.truststore.certificates"]
    if "ssl.truststore.location" in found:
        translated |= _truststore(found, where)
    if "ssl.keystore.certificate.chain" in found:
        translated["ssl.certificate.pem"] = found["ssl.keystore.certificate.chain"]
    if "ssl.keystore.key" in found:
        translated["ssl.key.pem"] = found["ssl.keystore.key"]
    if "ssl.key.password" in found:
        translated["ssl.key.password"] = found["ssl.key.password"]
    if "ssl.keystore.location" in found:
        keystore = _keystore(found, where)
        if "ssl.key.pem" in keystore:  # decrypted here: librdkafka must not decrypt it again
            translated.pop("ssl.key.password", None)
        translated |= keystore
    if properties.get("ssl.endpoint.identification.algorithm") == "":
        translated["ssl.endpoint.identification.algorithm"] = "none"
    return translated


class _Where:
    """Names the file and field of an error."""

    def __init__(self, section: str, source: str | None) -> None:
        self.section = section
        self.source = source

    def error(self, message: str, key: str, value: object, allowed: object) -> ConfigError:
        return ConfigError(
            message, file=self.source, path=f"{self.section}.{key}", value=value, allowed=allowed
        )


def _jaas(text: str, mechanism: str | None, where: _Where) -> dict[str, str]:
    try:
        entry = parse_jaas(text)
    except JaasSyntaxError as error:
        raise where.error(
            f"malformed JAAS text: {error}",
            "sasl.jaas.config",
            None,
            '<LoginModule class> required username="..." password="...";',
        ) from None
    name = entry.module_name
    if name in UNSUPPORTED_MODULES:
        raise where.error(
            f"{name} has no librdkafka equivalent in sasl.jaas.config; set "
            f"{UNSUPPORTED_MODULES[name]}",
            "sasl.jaas.config",
            entry.login_module,
            list(SASL_MODULES),
        )
    if name not in SASL_MODULES:
        raise where.error(
            f"unsupported login module {entry.login_module}",
            "sasl.jaas.config",
            entry.login_module,
            list(SASL_MODULES),
        )
    if mechanism is not None and mechanism.upper() not in SASL_MODULES[name]:
        raise where.error(
            f"{name} does not serve sasl.mechanism {mechanism}",
            "sasl.mechanism",
            mechanism,
            list(SASL_MODULES[name]),
        )
    missing = [option for option in ("username", "password") if option not in entry.options]
    if missing:
        raise where.error(
            f"{name} needs {' and '.join(missing)}",
            "sasl.jaas.config",
            None,
            f'{name} required username="..." password="...";',
        )
    return {"sasl.username": entry.options["username"], "sasl.password": entry.options["password"]}


def _truststore(found: Mapping[str, str], where: _Where) -> dict[str, str]:
    location = found["ssl.truststore.location"]
    kind = _store_kind("truststore", location, found.get("ssl.truststore.type"), where)
    if kind == "PEM":
        return {"ssl.ca.location": location}
    _, cert, extra = _load_pkcs12("truststore", location, found, where)
    certs = [c for c in (cert, *extra) if c is not None]
    if not certs:
        raise where.error(
            "the truststore holds no certificate", "ssl.truststore.location", location, None
        )
    return {"ssl.ca.pem": _pem(certs)}


def _keystore(found: Mapping[str, str], where: _Where) -> dict[str, str]:
    location = found["ssl.keystore.location"]
    kind = _store_kind("keystore", location, found.get("ssl.keystore.type"), where)
    if kind == "PEM":
        return {"ssl.certificate.location": location, "ssl.key.location": location}
    key, cert, extra = _load_pkcs12("keystore", location, found, where)
    if key is None or cert is None:
        raise where.error(
            "the keystore holds no private key with its certificate",
            "ssl.keystore.location",
            location,
            "a PKCS12 keystore with one key entry",
        )
    key_pem = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption()).decode()
    return {"ssl.certificate.pem": _pem([cert, *extra]), "ssl.key.pem": key_pem}


def _store_kind(store: str, location: str, declared: str | None, where: _Where) -> str:
    """``PEM`` or ``PKCS12``, from the file's first bytes; JKS is refused with how to convert."""
    try:
        head = Path(location).read_bytes()[:11]
    except OSError as error:
        raise where.error(
            f"cannot read the {store}: {error.strerror}",
            f"ssl.{store}.location",
            location,
            "a readable PKCS12 or PEM file",
        ) from None
    if head[:4] in JKS_MAGICS:
        target = str(Path(location).with_suffix(".p12"))
        raise where.error(
            f"{location} is a {JKS_MAGICS[head[:4]]} keystore, which loadgen does not read (no "
            "maintained Python library does); convert it once with: keytool -importkeystore "
            f"-srckeystore {location} -srcstoretype {JKS_MAGICS[head[:4]]} -destkeystore {target} "
            f"-deststoretype PKCS12, then set ssl.{store}.location={target} and "
            f"ssl.{store}.type=PKCS12",
            f"ssl.{store}.location",
            None,
            ["PKCS12", "PEM"],
        )
    if head.startswith(b"-----BEGIN"):
        return "PEM"
    if (declared or "").upper() == "PEM":
        raise where.error(
            f"ssl.{store}.type is PEM but {location} is not PEM text",
            f"ssl.{store}.type",
            declared,
            ["PKCS12", "JKS (converted)"],
        )
    return "PKCS12"


def _load_pkcs12(
    store: str, location: str, found: Mapping[str, str], where: _Where
) -> tuple[PrivateKeyTypes | None, Certificate | None, list[Certificate]]:
    # Java's PKCS12 keystores have one password; a key written with its own takes ssl.key.password
    passwords = [found.get(f"ssl.{store}.password")]
    if store == "keystore":
        passwords.append(found.get("ssl.key.password"))
    for candidate in [p for p in passwords if p is not None] or [None]:
        try:
            return load_key_and_certificates(
                Path(location).read_bytes(), candidate.encode() if candidate else None
            )
        except ValueError:
            continue
    raise where.error(
        f"cannot open {location} as PKCS12: wrong password, or not a PKCS12 file",
        f"ssl.{store}.password",
        None,
        f"the password {location} was written with",
    )


def _pem(certs: list[Certificate]) -> str:
    return "".join(cert.public_bytes(Encoding.PEM).decode() for cert in certs)
