"""Which Python Spark's workers run, and a failure of theirs told in one line."""

import sys

import pytest

from loadgen.pipeline.spark import executor_python_problem, workers_python

MISSING = """An error occurred while calling o93.collectToPython.
: org.apache.spark.SparkException: Job aborted due to stage failure: Task 0 in stage 3.0 failed 1
times, most recent failure: Lost task 0.0 in stage 3.0 (TID 6) (127.0.0.1 executor driver):
org.apache.spark.api.python.PythonException: [PYTHON_EXCEPTION] An exception was thrown from the
Python worker: Traceback (most recent call last):
  File ".../pyspark.zip/pyspark/worker.py", line 4207, in invoke_udf
    import pyarrow as pa
ModuleNotFoundError: No module named 'pyarrow'
 SQLSTATE: 38000
\tat org.apache.spark.api.python.BasePythonRunner$ReaderIterator.handlePythonException(...)
"""
NOT_STARTED = """: org.apache.spark.SparkException: Job aborted due to stage failure: ...
java.io.IOException: Cannot run program "/opt/venv/bin/python": error=2, No such file or directory
\tat java.base/java.lang.ProcessBuilder.start(ProcessBuilder.java:1143)
"""


@pytest.mark.parametrize("master", ["local", "local[*]", "local[2]"])
def test_a_local_masters_workers_run_this_python(master):
    assert workers_python(master, {"PATH": "/usr/bin"}) == sys.executable


def test_pyspark_python_chooses_the_workers_python():
    assert workers_python("local[*]", {"PYSPARK_PYTHON": "/opt/py/bin/python"}) is None


@pytest.mark.parametrize("master", ["spark://127.0.0.1:7077", "yarn", "k8s://https://k:443"])
def test_a_clusters_executors_keep_sparks_choice(master):
    """This interpreter's path need not exist on a cluster's executors."""
    assert workers_python(master, {}) is None


def test_a_module_missing_in_the_executors_python_is_one_line_with_what_to_install():
    line = executor_python_problem(MISSING, "python3")
    assert line == (
        "the executors' Python (python3) has no module 'pyarrow': install the job's task "
        "packages there (pip install numpy pyarrow pandas), or set PYSPARK_PYTHON to a Python "
        "that has them"
    )


def test_an_executors_python_that_does_not_start_is_one_line():
    line = executor_python_problem(NOT_STARTED, "/opt/venv/bin/python")
    assert line is not None and "\n" not in line
    assert "(/opt/venv/bin/python: No such file or directory)" in line
    assert "PYSPARK_PYTHON" in line and "numpy, pyarrow, pandas" in line


def test_any_other_failure_is_left_as_spark_said_it():
    assert executor_python_problem("AnalysisException: no such table", "python3") is None
