"""Running the examples of examples/ as a user would: their documented command, in a tmp dir.

Commands name the example files by absolute path and write under the test's tmp dir; `loadgen`
and `python3` resolve to this interpreter's environment, and the LOADGEN_* option variables of
the calling shell are dropped, so a developer's settings cannot change what an example does.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]
# the suite's own switches, not options of a command: these reach the examples unchanged
KEPT = {
    "LOADGEN_REQUIRE_BROKERS",
    "LOADGEN_PURE_PYTHON",
    "LOADGEN_STATE_DIR",
    "LOADGEN_CALIBRATION",
}


class Example:
    """One test's view of examples/: paths, a command runner in its tmp dir, its results."""

    repo = REPO
    examples = REPO / "examples"
    memory = REPO / "configs" / "drivers" / "memory.yaml"

    def __init__(self, cwd: Path) -> None:
        self.cwd = cwd

    def run(
        self, *command: object, timeout: float = 60, env: dict[str, str] | None = None
    ) -> subprocess.CompletedProcess:
        base = {k: v for k, v in os.environ.items() if not k.startswith("LOADGEN_") or k in KEPT}
        base["PATH"] = f"{Path(sys.executable).parent}{os.pathsep}{base.get('PATH', '')}"
        return subprocess.run(
            [str(part) for part in command],
            cwd=self.cwd,
            capture_output=True,
            text=True,
            timeout=timeout,
            env={**base, **(env or {})},
        )

    def results(self, folder: str, pattern: str = "*.json") -> list[dict]:
        """The run results in ``folder`` (under the tmp dir); sweep or matrix summaries aside."""
        paths = sorted((self.cwd / folder).glob(pattern))
        docs = [json.loads(path.read_text()) for path in paths]
        return [doc for doc in docs if "totalMessagesSent" in doc]

    @staticmethod
    def exact(doc: dict) -> bool:
        """Every message sent arrived once, as on a healthy memory-driver run."""
        return (
            doc["totalMessagesSent"] == doc["totalMessagesReceived"] > 0
            and doc["totalLost"] == 0
            and doc["totalDuplicates"] == 0
        )


@pytest.fixture
def example(tmp_path: Path) -> Example:
    return Example(tmp_path)
