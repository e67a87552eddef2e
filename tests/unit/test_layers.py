"""The package's layers, one folder each: a module may import its own layer and the ones below.

Lowest first: ``base`` (errors, HdrHistogram coding, file writes; ``spec``, the workload
files), the ``driver_api`` (the seam drivers implement, driver files, broker URLs), the
``engine`` (the worker, its producer loop and recorders; ``local_brokers``, which it can
start), the ``formats`` (what the engine's values become on disk and on the wire), the
outputs and their transport (``result_files``, ``report``, ``metrics``, ``pipeline``,
``distributed``), ``running`` (one run: the runner, its scenarios, the probe), ``studies``
(many runs: sweep, matrix, calibration) and the interfaces (``cli``, ``pytest_plugin``, and
the package's root: ``loadgen/__init__.py`` re-exporting ``api.py``). Folders of one layer
import each other without cycles. Imports are read with ``ast``, nothing is imported; imports
inside functions and under ``TYPE_CHECKING`` count as well. docs/design/architecture.md
explains each layer.

The drivers (``src/loadgen_drivers``, one folder per broker, its local brokers included) sit
beside the layers: a driver imports only ``loadgen.driver_api``, ``loadgen.spec``,
``loadgen.base`` and its own folder, so the seam is all a broker needs.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

SOURCE = Path(__file__).resolve().parents[2] / "src"

LAYERS = ("base", "driver_api", "engine", "formats", "outputs", "running", "studies", "interface")
FOLDERS = {
    "base": "base",
    "spec": "base",
    "driver_api": "driver_api",
    "engine": "engine",
    "local_brokers": "engine",
    "formats": "formats",
    "result_files": "outputs",
    "report": "outputs",
    "metrics": "outputs",
    "pipeline": "outputs",
    "distributed": "outputs",
    "running": "running",
    "studies": "studies",
    "cli": "interface",
    "pytest_plugin": "interface",
}
"""Each folder of ``src/loadgen`` and its layer."""
ROOT_MODULES = {"loadgen", "loadgen.__main__", "loadgen.api"}
"""The package's root holds the interface only: the re-exported API and ``python -m loadgen``."""


def folder_of(module: str) -> str:
    """``loadgen.engine.stats`` -> ``engine``; a root module is its own folder, ``""``."""
    return "" if module in ROOT_MODULES else module.split(".")[1]


def layer_of(module: str) -> str:
    return "interface" if module in ROOT_MODULES else FOLDERS[folder_of(module)]


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
    return {module for module in found if module.split(".")[0] in ("loadgen", "loadgen_drivers")}


def imports(root: Path, package: str = "loadgen") -> list[tuple[str, str]]:
    """Every (importer, imported) pair of ``loadgen`` modules under ``root/package``."""
    return [
        (module_name(path, root), imported)
        for path in sorted((root / package).rglob("*.py"))
        for imported in sorted(imported_modules(path, root))
    ]


DRIVER_MAY_IMPORT = ("loadgen.driver_api", "loadgen.spec", "loadgen.base")
"""What a driver may import of loadgen: the seam and what the seam stands on."""


def driver_violations(root: Path) -> list[str]:
    """One line per import a driver may not make: loadgen beyond the seam, or another driver."""
    found = []
    for importer, imported in imports(root, "loadgen_drivers"):
        own = ".".join(importer.split(".")[:2])
        allowed = (*DRIVER_MAY_IMPORT, own)
        if not any(imported == name or imported.startswith(name + ".") for name in allowed):
            found.append(f"{importer} imports {imported}: a driver imports only {allowed}")
    return found


def violations(root: Path) -> list[str]:
    """One line per import of a higher layer (or of a driver package) under ``root/loadgen``."""
    found = []
    for importer, imported in imports(root):
        if imported.split(".")[0] == "loadgen_drivers":
            found.append(f"{importer} imports {imported}: loadgen never imports a driver")
            continue
        below, above = layer_of(importer), layer_of(imported)
        if LAYERS.index(above) > LAYERS.index(below):
            found.append(f"{importer} ({below}) imports {imported} ({above}), a higher layer")
    return found


def folder_cycles(root: Path) -> list[list[str]]:
    """Cycles among folders: each as the folders in order, the first repeated at the end."""
    edges: dict[str, set[str]] = {}
    for importer, imported in imports(root):
        if imported.split(".")[0] == "loadgen" and folder_of(importer) != folder_of(imported):
            edges.setdefault(folder_of(importer), set()).add(folder_of(imported))
    cycles = []

    def walk(path: list[str]) -> None:
        for nxt in sorted(edges.get(path[-1], ())):
            if nxt == path[0]:
                cycles.append([*path, nxt])
            elif nxt not in path and nxt > path[0]:
                walk([*path, nxt])

    for start in sorted(edges):
        walk([start])
    return cycles


def test_no_module_imports_a_higher_layer():
    assert violations(SOURCE) == []


def test_drivers_import_only_the_seam_and_their_own_folder():
    assert driver_violations(SOURCE) == []


def test_a_driver_importing_the_engine_or_another_driver_is_named(tmp_path):
    root = package_with(
        tmp_path,
        {
            "loadgen/engine/stats.py": "",
            "loadgen/driver_api/__init__.py": "",
            "loadgen_drivers/kafka/local/tansu.py": "from loadgen.driver_api import local\n",
            "loadgen_drivers/kafka/driver.py": "from loadgen.engine import stats\n",
            "loadgen_drivers/pulsar/driver.py": "import loadgen_drivers.kafka.driver\n",
        },
    )
    assert [line.split(":")[0] for line in driver_violations(root)] == [
        "loadgen_drivers.kafka.driver imports loadgen.engine.stats",
        "loadgen_drivers.pulsar.driver imports loadgen_drivers.kafka.driver",
    ]


def test_folders_import_each_other_without_cycles():
    assert folder_cycles(SOURCE) == []


def test_every_folder_has_a_layer_and_the_root_only_the_interface():
    package = SOURCE / "loadgen"
    folders = {path.name for path in package.iterdir() if (path / "__init__.py").exists()}
    modules = {f"loadgen.{path.stem}" for path in package.glob("*.py")} - {"loadgen.__init__"}
    assert folders == set(FOLDERS)
    assert modules | {"loadgen"} == ROOT_MODULES


@pytest.mark.parametrize(
    ("module", "layer"),
    [
        ("loadgen.base.errors", "base"),
        ("loadgen.spec.workload", "base"),
        ("loadgen.driver_api", "driver_api"),
        ("loadgen.engine.stats", "engine"),
        ("loadgen.local_brokers.launcher", "engine"),
        ("loadgen.formats.result_json", "formats"),
        ("loadgen.distributed.server", "outputs"),
        ("loadgen.running.lifecycle", "running"),
        ("loadgen.studies.sweep", "studies"),
        ("loadgen.cli.main", "interface"),
        ("loadgen", "interface"),
        ("loadgen.api", "interface"),
    ],
)
def test_layer_of(module, layer):
    assert layer_of(module) == layer


def package_with(tmp_path: Path, files: dict[str, str]) -> Path:
    for name, text in {"loadgen/__init__.py": "", **files}.items():
        path = tmp_path / name
        path.parent.mkdir(parents=True, exist_ok=True)
        (path.parent / "__init__.py").touch()
        path.write_text(text)
    return tmp_path


def test_an_engine_module_importing_the_runner_is_named_with_both_layers(tmp_path):
    root = package_with(
        tmp_path,
        {
            "loadgen/running/runner.py": "",
            "loadgen/engine/stats.py": "def later():\n    from loadgen.running import runner\n",
            "loadgen/engine/driver.py": "import loadgen_drivers.kafka\n",
        },
    )
    assert violations(root) == [
        "loadgen.engine.driver imports loadgen_drivers.kafka: loadgen never imports a driver",
        "loadgen.engine.stats (engine) imports loadgen.running.runner (running), a higher layer",
    ]


def test_a_cycle_between_two_folders_of_one_layer_is_named(tmp_path):
    root = package_with(
        tmp_path,
        {
            "loadgen/report/html.py": "from loadgen.result_files import compare\n",
            "loadgen/result_files/compare.py": (
                "def later():\n    from loadgen.report import html\n"
            ),
        },
    )
    assert violations(root) == []
    assert folder_cycles(root) == [["report", "result_files", "report"]]
