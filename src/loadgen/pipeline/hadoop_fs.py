"""The few file operations the job's driver makes under ``OUT``, through Hadoop's FileSystem.

Spark reads and writes ``OUT`` through Hadoop's file systems, so ``OUT`` can be a local path, a
shared mount, ``hdfs://``, ``s3a://`` or ``abfss://`` (with the connector on Spark's class
path). The driver's own steps — finding the last merge state, replacing a re-run batch's
files, recording each batch's files, copying quarantined files aside, listing and archiving
landing files that are not local — go through the same API (over py4j), so they work wherever
Spark's writer does.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from pyspark.sql import SparkSession


class HadoopFiles:
    """Hadoop FileSystem calls for one Spark session; paths are URIs or local paths."""

    def __init__(self, spark: SparkSession) -> None:
        self._jvm = spark.sparkContext._jvm
        self._conf = spark.sparkContext._jsc.hadoopConfiguration()

    def _path(self, uri: str) -> tuple[Any, Any]:
        path = self._jvm.org.apache.hadoop.fs.Path(uri)
        return path.getFileSystem(self._conf), path

    def exists(self, uri: str) -> bool:
        fs, path = self._path(uri)
        return bool(fs.exists(path))

    def size(self, uri: str) -> int | None:
        """The file's length in bytes; None when it is not there."""
        fs, path = self._path(uri)
        if not fs.exists(path):
            return None
        return int(fs.getFileStatus(path).getLen())

    def names(self, uri: str) -> list[str]:
        """The names in directory ``uri`` ([] when it is not there)."""
        fs, path = self._path(uri)
        if not fs.exists(path):
            return []
        return [status.getPath().getName() for status in fs.listStatus(path)]

    def files(self, uri: str) -> list[tuple[str, float]]:
        """The files in directory ``uri`` as (URI, modification time in s); [] when it is not
        there."""
        fs, path = self._path(uri)
        if not fs.exists(path):
            return []
        return [
            (status.getPath().toString(), status.getModificationTime() / 1000)
            for status in fs.listStatus(path)
            if status.isFile()
        ]

    def move(self, source: str, target: str) -> None:
        """Move file ``source`` to ``target``, replacing it, across file systems too (a source
        that is not there is left alone); OSError if it fails."""
        source_fs, source_path = self._path(source)
        target_fs, target_path = self._path(target)
        if not source_fs.exists(source_path):
            return
        target_fs.mkdirs(target_path.getParent())
        target_fs.delete(target_path, False)
        if source_fs.getUri().equals(target_fs.getUri()):
            moved = source_fs.rename(source_path, target_path)
        else:
            moved = self._jvm.org.apache.hadoop.fs.FileUtil.copy(
                source_fs, source_path, target_fs, target_path, True, True, self._conf
            )
        if not moved:
            raise OSError(f"could not move {source} to {target}")

    def delete_matching(self, pattern: str) -> int:
        """Delete every path matching the glob ``pattern`` (recursively); how many there were."""
        fs, path = self._path(pattern)
        found = fs.globStatus(path) or []
        for status in found:
            fs.delete(status.getPath(), True)
        return len(found)

    def read_text(self, uri: str) -> str:
        fs, path = self._path(uri)
        stream = fs.open(path)
        try:
            # as a Java string: py4j hands a byte[] over element by element (~0.2 s a MB)
            return str(self._jvm.org.apache.commons.io.IOUtils.toString(stream, "UTF-8"))
        finally:
            stream.close()

    def write_text(self, uri: str, text: str) -> None:
        fs, path = self._path(uri)
        stream = fs.create(path, True)
        try:
            stream.write(bytearray(text.encode()))
        finally:
            stream.close()

    def copy(self, source: str, target: str) -> None:
        """Copy file ``source`` to ``target`` (any two file systems); OSError if it fails."""
        from py4j.protocol import Py4JJavaError

        source_fs, source_path = self._path(source)
        target_fs, target_path = self._path(target)
        try:
            self._jvm.org.apache.hadoop.fs.FileUtil.copy(
                source_fs, source_path, target_fs, target_path, False, True, self._conf
            )
        except Py4JJavaError as error:
            raise OSError(str(error.java_exception)) from None


def is_uri(path: str) -> bool:
    """A URI of some file system (``hdfs://``, ``s3a://``, ``file://``...), not a local path."""
    return "://" in path


def file_name(uri: str) -> str:
    """The last part of a URI or a path, as written there (quoted in a URI)."""
    return uri.rstrip("/").rsplit("/", 1)[-1]


def join(base: str, *parts: str) -> str:
    """``base/part/...`` for a URI or a local path."""
    return "/".join([base.rstrip("/"), *parts])
