"""Fixtures shared by the e2e modules."""

import pytest

from loadgen.errors import LoadgenError
from loadgen.testing.require import unavailable


@pytest.fixture(scope="module")
def pipeline_spark(request):
    """One embedded Spark (local[2]) for the module (a start costs ~10 s)."""
    from loadgen.pipeline.spark import start_session

    try:
        spark = start_session("local[2]", f"loadgen {request.module.__name__}")
    except LoadgenError as error:  # no Java, no pyspark
        unavailable(f"no embedded Spark here: {error}")
    yield spark
    spark.stop()
