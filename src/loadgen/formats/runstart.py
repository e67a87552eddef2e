"""What a run's result says that is fixed when the run starts, and the one builder of the result.

The runner and the journal reader (:mod:`loadgen.formats.journal`) both build the TestResult
through :func:`result_document`, from a :class:`RunStart` and an outcome, so a result rebuilt
from a journal cannot drift from the one a run writes.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any

from loadgen.engine.outcome import RunOutcome
from loadgen.engine.stats import IntervalStats
from loadgen.formats.result_json import ResultHeader, build_test_result

UNFINISHED = "unfinished"
UNFINISHED_DETAIL = (
    "rebuilt from the run's journal, written after every interval while the run was going; the "
    "process ended before the run did (killed or crashed), so this holds the intervals "
    "completed until then"
)


@dataclass(frozen=True)
class RunStart:
    """Everything of a result but its intervals and what the run's end tells: a journal's first
    record, JSON-ready (``options`` and ``placement`` as the result's ``run`` block shows them)."""

    header: ResultHeader
    run_id: str
    started_ms: int
    setup: dict[str, Any]
    options: dict[str, Any]
    placement: dict[str, Any]

    def to_json(self) -> dict[str, Any]:
        return {
            "header": asdict(self.header),
            "runId": self.run_id,
            "startedMs": self.started_ms,
            "setup": self.setup,
            "options": self.options,
            "placement": self.placement,
        }

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> RunStart:
        return cls(
            ResultHeader(**data["header"]),
            data["runId"],
            data["startedMs"],
            data["setup"],
            data["options"],
            data["placement"],
        )


def result_document(start: RunStart, outcome: RunOutcome) -> dict[str, Any]:
    """The TestResult document of ``outcome`` (finished, cut short or still going)."""
    return build_test_result(start.header, outcome, run_metadata(start, outcome))


def unfinished_outcome(start: RunStart, intervals: list[IntervalStats]) -> RunOutcome:
    """What a run that never ended measured: its completed ``intervals``, nothing of its end."""
    return RunOutcome(
        intervals=intervals,
        started_ms=start.started_ms,
        ended_ms=intervals[-1].end_ms if intervals else start.started_ms,
        incomplete=True,
        stop_reason=UNFINISHED,
        stop_detail=UNFINISHED_DETAIL,
    )


def run_metadata(start: RunStart, outcome: RunOutcome) -> dict[str, Any]:
    """The ``run`` block of the result: id, configuration, config echo, drain and clock facts.

    The start's ``setup`` is the run's :func:`configuration`, taken once when it started (the
    landing files carry the same); the workers, their clock offsets and roles come from the
    outcome (the worker that ran it).
    """
    return {
        "runId": start.run_id,
        **start.setup,
        "startedAt": datetime.fromtimestamp(outcome.started_ms / 1000, UTC).isoformat(),
        "endedAt": datetime.fromtimestamp(outcome.ended_ms / 1000, UTC).isoformat(),
        "options": start.options,
        "topics": outcome.topics,
        "drain": {
            "seconds": round(outcome.drain_seconds, 3),
            "unacknowledged": outcome.pending_acks,
            "undelivered": outcome.undelivered,
        },
        "phaseSeconds": {phase: round(t, 3) for phase, t in outcome.phase_seconds.items()},
        "stopDetail": outcome.stop_detail or None,
        "placement": start.placement,
        **outcome.placement,
    }
