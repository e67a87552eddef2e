"""The repository holds sources, not builds: a compiled module or archive that git tracks shadows
the one an install builds (an editable checkout whose optional build fails would import it)."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
BUILT_SUFFIXES = (".so", ".pyd", ".dylib", ".dll", ".o", ".a", ".pyc", ".jar", ".class", ".whl")


def tracked_files() -> list[str]:
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        pytest.skip("not a git checkout: nothing is tracked")
    listed = subprocess.run(
        ["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True
    ).stdout
    return [name for name in listed.decode().split("\0") if name]


def built(name: str) -> bool:
    """A build product by its name, or a file whose first 8 KiB hold a NUL byte (a binary)."""
    if name.endswith(BUILT_SUFFIXES) or ".so." in name:
        return True
    path = ROOT / name
    return path.is_file() and path.suffix != ".png" and b"\0" in path.read_bytes()[:8192]


def test_no_binary_is_tracked():
    assert [name for name in tracked_files() if built(name)] == []


def test_a_compiled_module_counts_as_built():
    assert built("src/loadgen/engine/_hotpath.cpython-311-x86_64-linux-gnu.so")
    assert not built("src/loadgen/engine/_hotpath.c")
