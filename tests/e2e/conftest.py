"""Fixtures shared by the e2e modules."""

import pytest

from loadgen.base.errors import LoadgenError
from loadgen.pytest_plugin.require import unavailable


@pytest.fixture(scope="package")
def pipeline_spark():
    """One embedded Spark (local[2]) for the e2e tests that drive the job in-process: a start,
    with its Python workers' first batch, costs ~30 s."""
    from loadgen.pipeline.spark import start_session

    try:
        spark = start_session("local[2]", "loadgen e2e tests")
    except LoadgenError as error:  # no Java, no pyspark
        unavailable(f"no embedded Spark here: {error}")
    yield spark
    spark.stop()
