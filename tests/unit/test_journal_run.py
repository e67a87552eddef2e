"""A real run's journal (memory broker) rebuilds the result the run wrote, but for its end."""

import json

from tests.unit.test_report import MEMORY, workload

from loadgen.formats.journal import journal_path, result_from_journal
from loadgen.running.request import RunOptions, RunRequest
from loadgen.running.runner import execute, result_path

OPTIONS = RunOptions(duration_s=2, warmup_s=1, stats_interval_s=0.5)

AT_THE_END = {
    "incomplete": "the journal's run never ended: true",
    "stopReason": "unfinished",
    "totalMessagesSent": "adds the probe's messages, counted outside the intervals",
    "totalMessagesReceived": "adds the probe's messages, counted outside the intervals",
    "totalDuplicates": "delivery accounting: done once every message is in",
    "totalLost": "delivery accounting",
    "totalOutOfOrder": "delivery accounting",
    "lossDetected": "delivery accounting",
    "deliveryAccounting": "delivery accounting",
    "totalAbortedRead": "delivery accounting",
    "outages": "a scenario's own field, added to the outcome at its end",
    "verdicts": "consumers kept up: judged on the backlog when the producers stopped",
}
"""Result fields only the run's end knows, and why (everything else must be equal)."""
RUN_AT_THE_END = {
    "stopDetail": "says why the run stopped",
    "endedAt": "the run's end, after drain and teardown, not its last interval's",
    "drain": "the drain's length and what it left",
    "phaseSeconds": "each phase's length, known when it ends",
    "topics": "the topics' names, in the outcome only",
    "workers": "where it ran, as the worker tells the outcome",
    "clockOffsetsMs": "the workers' clocks, as the worker tells the outcome",
    "recorderEngines": "the workers' recorder engines, as the worker tells the outcome",
}
"""The same for the ``run`` block."""


def without(document, fields, run_fields):
    document = json.loads(json.dumps(document))  # as written to disk
    run = {k: v for k, v in document.pop("run").items() if k not in run_fields}
    return {k: v for k, v in document.items() if k not in fields} | {"run": run}


def test_a_runs_journal_rebuilds_its_result_but_for_what_only_the_end_knows(tmp_path):
    request = RunRequest(workload(), MEMORY, OPTIONS, out_dir=tmp_path)
    _, result, outcome = execute(request)  # run_one would remove the journal
    rebuilt = result_from_journal(journal_path(result_path(tmp_path, request, outcome.started_ms)))
    assert len(rebuilt["publishRate"]) >= 3 and any(s.warmup for s in outcome.intervals)
    assert without(rebuilt, AT_THE_END, RUN_AT_THE_END) == without(
        result, AT_THE_END, RUN_AT_THE_END
    )
    assert rebuilt["incomplete"] is True and rebuilt["stopReason"] == "unfinished"
    assert result["incomplete"] is False
