"""The numbers the C engine and the Python share are written in both: each C source's
``#define`` and each built module's constant must equal the Python's."""

import ast
import re
from pathlib import Path
from types import ModuleType

import pytest

from loadgen.driver_api import stamp
from loadgen.engine import accounting
from loadgen.engine import burst as bursts
from loadgen.engine import recorder as recorders

ENGINE = Path(accounting.__file__).parent
PYTHON = {
    "SEQ_BITS": accounting.SEQ_BITS,
    "PARTITION_LIMIT": accounting.PARTITION_LIMIT,
    "PREFIX_MARK": stamp.PREFIX_MARK,
    "PREFIX_BYTES": stamp.PREFIX_BYTES,
    "UNSTAMPED_BELOW": recorders.UNSTAMPED_BELOW,
}


def defined(name: str) -> object:
    """The literal value of ``#define name value`` in the engine's C sources (one of them)."""
    found = [
        value
        for source in sorted(ENGINE.glob("_*.[ch]"))
        for value in re.findall(rf"^#define {name} (\S+)", source.read_text(), re.MULTILINE)
    ]
    assert len(found) == 1, f"{name} is defined {len(found)} times in {ENGINE}"
    value = ast.literal_eval(found[0])
    return value.encode("ascii") if isinstance(value, str) else value


@pytest.mark.parametrize("name", ["SEQ_BITS", "PREFIX_MARK", "PREFIX_BYTES"])
def test_the_c_sources_define_what_the_python_does(name):
    assert defined(name) == PYTHON[name]


MODULES = {
    "_hotpath": (recorders._hotpath, list(PYTHON)),
    "_burst": (bursts._burst, ["PREFIX_MARK", "PREFIX_BYTES"]),
}


@pytest.mark.parametrize("module", list(MODULES))
def test_the_built_modules_hold_what_the_python_does(module):
    built, names = MODULES[module]
    if not isinstance(built, ModuleType):
        pytest.skip(f"loadgen.engine.{module} is not built")
    assert {name: getattr(built, name) for name in names} == {name: PYTHON[name] for name in names}
