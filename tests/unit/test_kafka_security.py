"""OMB/Java security settings in a Kafka driver file, read for librdkafka (no network)."""

import shutil
import subprocess
import sys

import pytest
import yaml

from loadgen.base.errors import ConfigError
from loadgen_drivers.kafka.config import check_with_librdkafka, to_librdkafka
from loadgen_drivers.kafka.jaas import JaasSyntaxError, parse_jaas

SECRET = 'pa ss"w;o\\rd'
"""A password with a space, a quote, a ';' and a backslash: each is where a naive split breaks."""
JAAS_SECRET = SECRET.replace("\\", "\\\\").replace('"', '\\"')
SCRAM = "org.apache.kafka.common.security.scram.ScramLoginModule"
PLAIN = "org.apache.kafka.common.security.plain.PlainLoginModule"


def translate(**properties):
    return to_librdkafka("commonConfig", properties, "k.yaml")


def config_error(**properties) -> str:
    with pytest.raises(ConfigError) as caught:
        translate(**properties)
    text = str(caught.value)
    assert "k.yaml" in text and SECRET not in text and "p4ss" not in text
    return text


def test_jaas_values_keep_quotes_escapes_and_semicolons():
    entry = parse_jaas(f'{SCRAM} required username="alice" password="{JAAS_SECRET}";')
    assert entry.module_name == "ScramLoginModule" and entry.flag == "required"
    assert entry.options == {"username": "alice", "password": SECRET}
    bare = parse_jaas(f"  {PLAIN}  REQUIRED username=bob password=x  ")
    assert bare.options == {"username": "bob", "password": "x"}


@pytest.mark.parametrize(
    ("written", "read"),
    [
        (r'"a\nb\tc"', "a\nb\tc"),
        (r'"\a\b\f\r\v"', "\a\b\f\r\v"),
        (r'"\101\0x"', "A\0x"),
        (r'"\477"', "'7"),  # three octal digits only from 0-3: \47, then 7
        (r'"\q\\\""', 'q\\"'),
        ("'it\"s'", 'it"s'),
    ],
    ids=["newline and tab", "control letters", "octal", "octal above 377", "others", "single"],
)
def test_jaas_quoted_values_unescape_as_javas_stream_tokenizer_does(written, read):
    """Kafka's JaasConfig reads the value with Java's StreamTokenizer: the same password must
    log in from Java and from loadgen."""
    assert parse_jaas(f"{SCRAM} required password={written};").options["password"] == read


@pytest.mark.parametrize(
    "text",
    [
        f'{SCRAM} required username="u" password="p4ss',
        f'{SCRAM} required username="u" password',
        f'{SCRAM} usually username="u" password="p4ss";',
        f'{SCRAM} required username="u"; password="p4ss"',
        "",
    ],
    ids=["unclosed quote", "no value", "bad flag", "text after ;", "empty"],
)
def test_malformed_jaas_names_the_problem_and_never_the_password(text):
    with pytest.raises(JaasSyntaxError) as caught:
        parse_jaas(text)
    assert "p4ss" not in str(caught.value)
    message = config_error(**{"sasl.jaas.config": text})
    assert "commonConfig.sasl.jaas.config" in message and "malformed" in message


@pytest.mark.parametrize(
    "module, mechanism", [(PLAIN, "PLAIN"), (SCRAM, "SCRAM-SHA-256"), (SCRAM, "SCRAM-SHA-512")]
)
def test_sasl_jaas_becomes_librdkafka_username_and_password(module, mechanism):
    translated = translate(**{
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": mechanism,
        "sasl.jaas.config": f'{module} required username="alice" password="{JAAS_SECRET}";',
    })  # fmt: skip
    assert translated == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanisms": mechanism,
        "sasl.username": "alice",
        "sasl.password": SECRET,
    }
    check_with_librdkafka("commonConfig", translated, "k.yaml")  # librdkafka takes it


def test_a_login_module_that_does_not_serve_the_mechanism_is_refused():
    jaas = f'{PLAIN} required username="u" password="p4ss";'
    text = config_error(**{"sasl.mechanism": "SCRAM-SHA-256", "sasl.jaas.config": jaas})
    assert "commonConfig.sasl.mechanism" in text and "PLAIN" in text


@pytest.mark.parametrize(
    "module, instead",
    [
        ("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule", "sasl.oauthbearer"),
        ("com.sun.security.auth.module.Krb5LoginModule", "sasl.kerberos"),
    ],
)
def test_oauthbearer_and_kerberos_jaas_say_what_to_set_instead(module, instead):
    text = config_error(**{"sasl.jaas.config": f'{module} required password="p4ss";'})
    assert instead in text and "sasl.jaas.config" in text


def test_pkcs12_stores_become_pem_in_memory(test_certs):
    keystore = test_certs.pkcs12(test_certs.client, "kspw", "client-ks")
    truststore = test_certs.truststore("tspw")
    translated = translate(**{
        "security.protocol": "SSL",
        "ssl.truststore.location": str(truststore),
        "ssl.truststore.password": "tspw",
        "ssl.truststore.type": "PKCS12",
        "ssl.keystore.location": str(keystore),
        "ssl.keystore.password": "kspw",
        "ssl.keystore.type": "PKCS12",
        "ssl.key.password": "kspw",
    })  # fmt: skip
    assert translated["ssl.ca.pem"] == test_certs.ca.read_text()
    chain = translated["ssl.certificate.pem"]
    assert chain.startswith(test_certs.client.cert.read_text()) and chain.count("BEGIN CERT") == 2
    assert "BEGIN PRIVATE KEY" in translated["ssl.key.pem"]
    assert not any("password" in key or "store" in key for key in translated)
    check_with_librdkafka("commonConfig", translated, "k.yaml")  # librdkafka loads the PEMs


def test_a_wrong_store_password_names_the_field_not_the_password(test_certs):
    keystore = test_certs.pkcs12(test_certs.client, "kspw", "client-wrong")
    wrong = "p4ss-wrong"
    with pytest.raises(ConfigError) as caught:
        translate(**{"ssl.keystore.location": str(keystore), "ssl.keystore.password": wrong})
    assert "commonConfig.ssl.keystore.password" in str(caught.value)
    assert wrong not in str(caught.value)


def test_pem_stores_are_passed_as_locations(test_certs):
    translated = translate(**{
        "ssl.truststore.location": str(test_certs.ca),
        "ssl.truststore.type": "PEM",
        "ssl.keystore.location": str(test_certs.client.cert),
        "ssl.keystore.type": "PEM",
        "ssl.endpoint.identification.algorithm": "",
    })  # fmt: skip
    assert translated == {
        "ssl.ca.location": str(test_certs.ca),
        "ssl.certificate.location": str(test_certs.client.cert),
        "ssl.key.location": str(test_certs.client.cert),
        "ssl.endpoint.identification.algorithm": "none",
    }


@pytest.mark.parametrize("declared", ["JKS", "PKCS12"])
def test_jks_is_found_by_its_magic_and_refused_with_the_keytool_command(tmp_path, declared):
    store = tmp_path / "client.truststore"
    store.write_bytes(b"\xfe\xed\xfe\xed\x00\x00\x00\x02" + bytes(64))
    text = config_error(**{
        "ssl.truststore.location": str(store),
        "ssl.truststore.type": declared,
        "ssl.truststore.password": "p4ss",
    })  # fmt: skip
    assert "is a JKS keystore" in text
    assert (
        f"keytool -importkeystore -srckeystore {store} -srcstoretype JKS "
        f"-destkeystore {tmp_path / 'client.p12'} -deststoretype PKCS12" in text
    )


def needs_keytool():
    if shutil.which("keytool") is None:
        pytest.skip("keytool (a JDK) is not installed")


def test_a_java_made_pkcs12_truststore_is_read(test_certs, tmp_path):
    """keytool stores a CA as a trusted-certificate entry (no key), unlike openssl."""
    needs_keytool()
    truststore = tmp_path / "java-truststore.p12"
    subprocess.run(
        ["keytool", "-importcert", "-noprompt", "-alias", "ca", "-file", str(test_certs.ca),
         "-keystore", str(truststore), "-storetype", "PKCS12", "-storepass", "tspass"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    settings = {"ssl.truststore.location": str(truststore), "ssl.truststore.password": "tspass"}
    assert translate(**settings) == {"ssl.ca.pem": test_certs.ca.read_text()}


def test_the_keytool_command_turns_a_real_jks_into_a_store_loadgen_reads(test_certs, tmp_path):
    needs_keytool()
    source = test_certs.pkcs12(test_certs.client, "kspass", "from-openssl")
    jks = tmp_path / "client.jks"
    subprocess.run(
        ["keytool", "-importkeystore", "-srckeystore", str(source), "-srcstoretype", "PKCS12",
         "-srcstorepass", "kspass", "-destkeystore", str(jks), "-deststoretype", "JKS",
         "-deststorepass", "kspass", "-noprompt"],
        check=True, capture_output=True, timeout=60,
    )  # fmt: skip
    settings = {"ssl.keystore.location": str(jks), "ssl.keystore.password": "kspass"}
    text = config_error(**settings)  # declared type absent: found by content
    command = text[text.index("keytool -importkeystore") : text.index(", then")].split()
    subprocess.run(
        [*command, "-srcstorepass", "kspass", "-deststorepass", "kspass", "-noprompt"],
        check=True,
        capture_output=True,
        timeout=60,
    )
    converted = translate(**settings | {"ssl.keystore.location": str(tmp_path / "client.p12")})
    assert "BEGIN PRIVATE KEY" in converted["ssl.key.pem"]


def test_validate_accepts_an_omb_sasl_ssl_file_and_never_prints_the_password(tmp_path, test_certs):
    truststore = test_certs.truststore("tspw", "validate-ts")
    common = (
        "bootstrap.servers=127.0.0.1:9093\nsecurity.protocol=SASL_SSL\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        f'sasl.jaas.config={SCRAM} required username="alice" password="{JAAS_SECRET}";\n'
        f"ssl.truststore.location={truststore}\nssl.truststore.password=tspw\n"
    )
    driver = {
        "name": "Kafka", "driver": "kafka", "replicationFactor": 1, "commonConfig": common,
        "producerConfig": "acks=all\n", "consumerConfig": "auto.offset.reset=earliest\n",
    }  # fmt: skip
    (tmp_path / "driver.yaml").write_text(yaml.safe_dump(driver))

    def validate():
        return subprocess.run(
            [sys.executable, "-m", "loadgen", "-vv", "validate", "driver.yaml"],
            cwd=tmp_path, capture_output=True, text=True, timeout=60,
        )  # fmt: skip

    accepted = validate()
    assert accepted.returncode == 0, accepted.stderr
    driver["commonConfig"] = common.replace(f'{JAAS_SECRET}";', JAAS_SECRET)
    (tmp_path / "driver.yaml").write_text(yaml.safe_dump(driver))
    refused = validate()
    assert refused.returncode == 2
    assert "driver.yaml" in refused.stderr and "sasl.jaas.config" in refused.stderr
    for output in (accepted, refused):
        assert SECRET not in output.stdout + output.stderr
        assert "tspw" not in output.stdout + output.stderr
