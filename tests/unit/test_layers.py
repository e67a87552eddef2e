"""The package's layers: a module may import its own layer and the ones below, never above.

Lowest first: the engine (spec, driver, worker, cluster, stats, results, report, pipeline,
metrics, the run request and its listeners...), the scenarios that drive a worker through a
run, the runner that turns a request into a result file (and the probe, which drives a
scenario itself), the studies that call the runner many times (sweep, matrix), and the
interfaces on top (the CLI, the Python API, the pytest plugin). Imports are read with ``ast``,
nothing is imported; imports inside functions and under ``TYPE_CHECKING`` count as well.
docs/design/architecture.md explains each layer.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[2] / "src"

LAYERS = ("engine", "scenarios", "runner", "studies", "interface")
PLACED = {
    "loadgen.scenarios": "scenarios",
    "loadgen.runner": "runner",
    "loadgen.probe": "runner",
    "loadgen.studies": "studies",
    "loadgen.__main__": "interface",
    "loadgen.api": "interface",
    "loadgen.cli": "interface",
    "loadgen.cli_env": "interface",
    "loadgen.cli_options": "interface",
    "loadgen.cli_output": "interface",
    "loadgen.testing.benchmark": "interface",
    "loadgen.testing.pytest_plugin": "interface",
}
"""Modules and packages above the engine (the longest matching name wins); the rest is engine,
but for the package itself (``loadgen/__init__.py``), which re-exports the API: interface."""
VERSION_ONLY = {"loadgen"}
"""Imported from below for ``loadgen.__version__`` alone: Python runs the package's
``__init__`` before any of its modules anyway, so this adds no dependency."""


def layer_of(module: str) -> str:
    if module == "loadgen":
        return "interface"
    parts = module.split(".")
    for end in range(len(parts), 1, -1):
        placed = PLACED.get(".".join(parts[:end]))
        if placed is not None:
            return placed
    return "engine"


def module_name(path: Path, root: Path) -> str:
    parts = list(path.relative_to(root).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def imported_modules(path: Path, root: Path) -> set[str]:
    """Every ``loadgen`` module ``path`` imports, resolved to a module where a name is one."""
    name = module_name(path, root)
    package = name if path.name == "__init__.py" else name.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:  # relative: from the package, up level - 1
                anchor = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                base = ".".join([*anchor, *([base] if base else [])])
            for alias in node.names:
                candidate = f"{base}.{alias.name}"
                is_module = (root / Path(*candidate.split("."))).with_suffix(".py").exists() or (
                    root / Path(*candidate.split(".")) / "__init__.py"
                ).exists()
                found.add(candidate if is_module else base)
    return {module for module in found if module.split(".")[0] in ("loadgen", "drivers")}


def violations(root: Path) -> list[str]:
    """One line per import of a higher layer (or of a driver package) under ``root/loadgen``."""
    found = []
    for path in sorted((root / "loadgen").rglob("*.py")):
        importer = module_name(path, root)
        for imported in sorted(imported_modules(path, root)):
            if imported.split(".")[0] == "drivers":
                found.append(f"{importer} imports {imported}: loadgen never imports a driver")
                continue
            if imported in VERSION_ONLY:
                continue
            below, above = layer_of(importer), layer_of(imported)
            if LAYERS.index(above) > LAYERS.index(below):
                found.append(f"{importer} ({below}) imports {imported} ({above}), a higher layer")
    return found


def test_no_module_imports_a_higher_layer():
    assert violations(SOURCE) == []


def test_every_placed_name_exists():
    """A renamed module must not leave its layer entry behind (and so drop to the engine)."""
    missing = [
        name
        for name in PLACED
        if not (SOURCE / Path(*name.split("."))).with_suffix(".py").exists()
        and not (SOURCE / Path(*name.split("."))).is_dir()
    ]
    assert missing == []


@pytest.mark.parametrize(
    ("module", "layer"),
    [
        ("loadgen.stats", "engine"),
        ("loadgen.request", "engine"),
        ("loadgen.scenarios.tailing", "scenarios"),
        ("loadgen.runner", "runner"),
        ("loadgen.studies.sweep", "studies"),
        ("loadgen.cli", "interface"),
        ("loadgen.testing.tansu", "engine"),
        ("loadgen", "interface"),
    ],
)
def test_layer_of(module, layer):
    assert layer_of(module) == layer


def test_an_engine_module_importing_the_runner_is_named_with_both_layers(tmp_path):
    package = tmp_path / "loadgen"
    (package / "scenarios").mkdir(parents=True)
    (package / "__init__.py").write_text("")
    (package / "runner.py").write_text("")
    (package / "scenarios" / "__init__.py").write_text("")
    (package / "scenarios" / "tailing.py").write_text("from .. import runner\n")
    (package / "stats.py").write_text("def later():\n    from loadgen.scenarios import tailing\n")
    assert violations(tmp_path) == [
        "loadgen.scenarios.tailing (scenarios) imports loadgen.runner (runner), a higher layer",
        "loadgen.stats (engine) imports loadgen.scenarios.tailing (scenarios), a higher layer",
    ]
