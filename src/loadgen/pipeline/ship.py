"""The executor tasks' code, shipped with the job: a zip of :mod:`loadgen.pipeline.tasks` and
:mod:`loadgen.base.hdr_core`, added to the Spark session, so executors need only Python with numpy,
pyarrow and pandas (what PySpark's Arrow tasks need anyway), and no loadgen.

The zip holds a stub ``loadgen/__init__.py``: the real one imports the whole tool (and its
dependencies, hdrh, pydantic, the brokers' clients), which the tasks do not need. Spark puts
the zip ahead of site-packages on the executors' ``sys.path``, so tasks always run the driver's
own version of this code, whatever else an executor has installed.
"""

from __future__ import annotations

import sys
import tempfile
import zipfile
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

PACKAGE = Path(__file__).resolve().parents[1]
"""The ``loadgen`` package directory."""
SHIPPED = ("base/__init__.py", "base/hdr_core.py", "pipeline/__init__.py", "pipeline/tasks")
"""What the tasks import, relative to the package (folders with every ``.py`` in them)."""
STUB = '"""loadgen as shipped to Spark executors: only the pipeline tasks and what they use."""\n'
ARCHIVE = "loadgen_pipeline_tasks.zip"


def shipped_files() -> list[Path]:
    files = []
    for name in SHIPPED:
        path = PACKAGE / name
        files += sorted(path.glob("*.py")) if path.is_dir() else [path]
    return files


def build_archive(folder: Path) -> Path:
    """The zip of the tasks' modules under their own names, in ``folder``."""
    archive = folder / ARCHIVE
    with zipfile.ZipFile(archive, "w", zipfile.ZIP_DEFLATED) as bundle:
        bundle.writestr("loadgen/__init__.py", STUB)
        for path in shipped_files():
            bundle.write(path, f"loadgen/{path.relative_to(PACKAGE).as_posix()}")
    return archive


_SHIPPED: set[str] = set()
"""The Spark applications of this process that have the zip already."""


def ship_tasks(spark: SparkSession) -> None:
    """Add the tasks' zip to ``spark``: every executor's Python tasks import it first. Once per
    Spark application: the warm-up and every query on the same session share it."""
    application = spark.sparkContext.applicationId
    if application in _SHIPPED:
        return
    folder = Path(tempfile.mkdtemp(prefix="loadgen-tasks-"))
    before = list(sys.path)
    spark.sparkContext.addPyFile(str(build_archive(folder)))
    sys.path[:] = before  # PySpark puts the zip on the driver's path too, where its stub
    # loadgen would shadow the real one for every process this one spawns
    _SHIPPED.add(application)
