"""What the engine learns from the installed driver classes, without connecting or importing
any broker client."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

from loadgen.base.errors import ConfigError
from loadgen.driver_api import BaseDriver, driver_classes
from loadgen.driver_api.driver_file import omb_driver_classes

CLIENT_MODULES = ("confluent_kafka", "pika", "pulsar", "pravega_client")


def test_finding_the_driver_of_a_url_or_an_omb_class_imports_no_broker_client():
    code = (
        "import sys\n"
        "from loadgen.running import probe\n"
        "from loadgen.driver_api.driver_file import omb_driver_classes\n"
        "probe.driver_for_url('kafka://127.0.0.1:1')\n"
        "omb_driver_classes()\n"
        f"print([m for m in {CLIENT_MODULES!r} if m in sys.modules])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=True
    )
    assert done.stdout.strip() == "[]"


def test_every_driver_config_model_loads_without_any_broker_client():
    """The field reference (``docs/field_reference.py``) reads every ``config_model`` where only
    the docs extra is installed: a model module imports its client where it connects, not at
    the top."""
    code = (
        "import sys\n"
        f"sys.modules.update(dict.fromkeys({(*CLIENT_MODULES, 'grpc')!r}))  # not installed\n"
        "from importlib import import_module\n"
        "from loadgen.driver_api import driver_classes\n"
        "for kind, driver in sorted(driver_classes().items()):\n"
        "    module, _, name = (driver.config_model or ':').partition(':')\n"
        "    print(kind, getattr(import_module(module), name).__name__ if module else None)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "rabbitmq RabbitMqConfig" in done.stdout.splitlines()


def test_every_built_in_driver_declares_its_broker():
    classes = driver_classes()
    for kind in ("kafka", "rabbitmq", "pulsar", "pravega"):
        assert issubclass(classes[kind], BaseDriver)
        assert classes[kind].url_schemes and classes[kind].client_distributions
    assert (
        omb_driver_classes()["io.openmessaging.benchmark.driver.rabbitmq.RabbitMqBenchmarkDriver"]
        == "rabbitmq"
    )


class Unfinished(BaseDriver):
    """A driver class with the classmethods only: the defaults hold, the rest is missing."""

    @classmethod
    def validate_config(cls, spec):
        return None

    @classmethod
    def from_config(cls, spec):
        return cls()


def test_a_driver_that_declares_no_url_scheme_takes_no_url():
    assert Unfinished.url_schemes == ()
    with pytest.raises(ConfigError, match="the Unfinished driver takes no URL"):
        Unfinished.config_from_url("quiet://h:1", {})


def test_a_driver_missing_a_required_method_cannot_be_made():
    with pytest.raises(TypeError, match="abstract"):
        Unfinished.from_config(None)


def test_a_driver_that_neither_validates_nor_hands_over_says_what_it_lacks():
    class Bare(BaseDriver):
        pass

    with pytest.raises(NotImplementedError, match="Bare must define validate_config"):
        Bare.validate_config(None)
    with pytest.raises(NotImplementedError, match="Bare must define from_config"):
        Bare.from_config(None)


def test_a_driver_package_that_fails_to_load_leaves_the_others_working(tmp_path):
    info = tmp_path / "loadgen_broken-0.1.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: loadgen-broken\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text("[loadgen.drivers]\nbroken = no_such_module:Driver\n")
    code = (
        "from loadgen.running import probe\n"
        "from loadgen.driver_api import driver_classes\n"
        "print(probe.driver_for_url('amqp://127.0.0.1:1').kind, 'broken' in driver_classes())\n"
    )
    source = Path(__file__).resolve().parents[2] / "src"
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        timeout=60,
        env={**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), str(source)])},
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["rabbitmq", "False"]
    assert "driver 'broken' (no_such_module:Driver) cannot be loaded" in done.stderr


REPO = Path(__file__).resolve().parents[2]


@pytest.mark.parametrize(
    "args",
    [
        ["validate", str(REPO / "configs" / "drivers" / "rabbitmq-local.yaml")],
        ["brokers", "up", "rabbitmq", "--port", "1"],
    ],
    ids=["validate", "brokers-up"],
)
def test_without_pika_rabbitmq_names_the_extra_that_brings_it(args, tmp_path):
    """pika comes with the ``rabbitmq`` extra, not the base install: where it is missing, the
    driver and the local broker say how to install it from the clone (exit 2), before anything
    starts."""
    code = (
        "import sys\n"
        "sys.modules['pika'] = None  # as if not installed\n"
        "from loadgen.cli.main import main\n"
        f"sys.argv = ['loadgen', *{args!r}]\n"
        "main()\n"
    )
    env = {**os.environ, "LOADGEN_STATE_DIR": str(tmp_path)}
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, env=env
    )
    assert done.returncode == 2, done.stderr
    assert "pip install -e '.[rabbitmq]'" in done.stderr
