"""One plain line per interval and a closing aggregate, readable in a terminal or a CI log."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from loadgen.base import hdr
from loadgen.engine.outcome import WHAT_STOPPED, describe_drain
from loadgen.engine.stats import (
    END_TO_END,
    END_TO_END_FROM_INTENDED,
    PUBLISH,
    PUBLISH_DELAY,
    PUBLISH_FROM_INTENDED,
    IntervalStats,
)
from loadgen.formats.fault_windows import recovered
from loadgen.formats.json_lines import MB


def _ms(micros: float) -> str:
    return f"{micros / 1000:.3f}"


def _points(histogram: hdr.Histogram, percentiles: tuple[float, ...]) -> str:
    values = [_ms(hdr.value_at_percentile(histogram, p)) for p in percentiles]
    return "/".join([*values, _ms(histogram.max)])


def format_interval(stats: IntervalStats, backlog: int, phase: str) -> str:
    """``[measure] pub N msg/s X MB/s | cons ... | backlog B | err E | pub ms ... | e2e ms ...``"""
    seconds = stats.seconds
    sent_mb, received_mb = stats.bytes_sent / MB / seconds, stats.bytes_received / MB / seconds
    return (
        f"[{phase:7}] pub {stats.sent / seconds:9.0f} msg/s {sent_mb:7.1f} MB/s"
        f" | cons {stats.received / seconds:9.0f} msg/s {received_mb:7.1f} MB/s"
        f" | backlog {backlog:>8}"
        f" | err {stats.send_errors:>5}"
        f" | pub ms p50/p99/p99.9/max {_points(stats.histogram(PUBLISH), (50, 99, 99.9))}"
        f" | e2e ms p50/p99/p99.9/max {_points(stats.histogram(END_TO_END), (50, 99, 99.9))}"
    )


def _aggregate_line(label: str, histogram: hdr.Histogram, scale: float, unit: str) -> str:
    summary = hdr.summary(histogram)
    numbers = [summary.mean, summary.p50, summary.p99, summary.p999, summary.p9999, summary.max]
    shown = " ".join(f"{value / scale:.3f}" for value in numbers)
    return f"{label:<26} ({unit}) avg/p50/p99/p99.9/p99.99/max {shown}"


def format_aggregate(stats: IntervalStats) -> str:
    """The measured phase in five lines: publish, publish delay, publish from intended, end to
    end, end to end from intended."""
    return "\n".join(
        [
            _aggregate_line("Aggregated publish", stats.histogram(PUBLISH), 1000, "ms"),
            _aggregate_line("Aggregated publish delay", stats.histogram(PUBLISH_DELAY), 1, "us"),
            _aggregate_line(
                "Aggregated from intended", stats.histogram(PUBLISH_FROM_INTENDED), 1000, "ms"
            ),
            _aggregate_line("Aggregated end-to-end", stats.histogram(END_TO_END), 1000, "ms"),
            _aggregate_line(
                "Aggregated e2e from intended",
                stats.histogram(END_TO_END_FROM_INTENDED),
                1000,
                "ms",
            ),
        ]
    )


def delivery_warning(result: dict[str, Any]) -> str | None:
    """One warning line when the result counts lost or duplicated messages, else ``None``."""
    counts = (
        (result.get("totalLost"), "lost"),
        (result.get("totalDuplicates"), "duplicated"),
        (result.get("totalAbortedRead"), "read though their transaction aborted"),
    )
    found = [f"{count:,} {what}" for count, what in counts if count]
    if not found:
        return None
    return (
        f"WARNING: messages not delivered exactly once: {', '.join(found)} "
        "(lost: acknowledged, never received; see deliveryAccounting in the result)"
    )


def format_faults(result: dict[str, Any]) -> str | None:
    """A line per fault of the result's ``faults`` block: what it cost, or why it was not
    made; ``None`` without faults."""
    faults = result.get("faults")
    if not faults:
        return None
    lines = []
    for number, fault in enumerate(faults, start=1):
        on = "" if fault["node"] is None else f" node {fault['node']}"
        lasting = "" if fault["for"] is None else f" for {fault['for']:g}s"
        head = f"Fault {number}: {fault['action']}{on} at {fault['at']:g}s{lasting}"
        if fault.get("error"):
            lines.append(f"{head}: NOT MADE ({fault['error']})")
            continue
        judged = recovered(fault)
        if judged:
            recovery = f"recovered {fault['recoverySeconds']:.1f} s after it ended"
        else:
            shown = "NOT recovered" if judged is False else "recovery not judged"
            recovery = f"{shown} ({fault.get('recoveryReason')})"
        lines.append(
            f"{head}: unavailable {fault.get('unavailableSeconds', 0):.1f} s, {recovery}; "
            f"lost {count_text(fault.get('lost'))}, "
            f"duplicated {count_text(fault.get('duplicated'))}"
        )
    return "\n".join(lines)


def count_text(value: int | None) -> str:
    """A count for a console line: ``n/a`` when it could not be taken."""
    return "n/a" if value is None else f"{value:,}"


def format_transactions(result: dict[str, Any]) -> str | None:
    """The result's ``transactions`` block in a line, or ``None`` when there is none."""
    block = result.get("transactions")
    if not block:
        return None
    commit, abort = block["commitLatency"], block["abortLatency"]
    read = block["abortedMessagesRead"]
    aborted = f"{block['aborted']:,} aborted"
    if block["aborted"]:
        aborted += f" (abort p50 {abort['50pct']:.3f} ms)"
    return (
        f"Transactions: {block['committed']:,} committed (commit p50 {commit['50pct']:.3f} ms, "
        f"p99 {commit['99pct']:.3f} ms), {aborted}; {block['messagesWithdrawn']:,} messages "
        f"withdrawn, {'n/a' if read is None else format(read, ',')} of them read"
    )


def format_topic_scaling(result: dict[str, Any]) -> str | None:
    """A line per topic the broker re-partitioned during the run (``topicScaling``), or
    ``None`` when none was (or the driver cannot say)."""
    scaled = [topic for topic in result.get("topicScaling", ()) if topic["scalings"]]
    if not scaled:
        return None
    return "\n".join(
        f"scaled: {topic['topic']} went from {topic['partitionsCreated']} to "
        f"{topic['partitionsAtEnd']} partitions in {topic['scalings']} scaling"
        f"{'' if topic['scalings'] == 1 else 's'}"
        for topic in scaled
    )


def unread_note(result: dict[str, Any]) -> str | None:
    """One line when the broker still held messages the run did not read, else ``None``."""
    unread = result.get("totalUnread")
    if not unread:
        return None
    return (
        f"unread: {unread:,} messages were still in the broker at the end (acknowledged, not "
        "yet read; not counted as lost)"
    )


def format_clock_correction(result: dict[str, Any]) -> str | None:
    """What the workers' clock offsets did to end-to-end latency, with a warning when the
    correction's bound exceeds the corrected p50; ``None`` when nothing was corrected."""
    correction = result.get("run", {}).get("clockCorrection")
    if not correction or not correction["applied"]:
        return None
    p50, bound = result["aggregatedEndToEndLatency50pct"], correction["boundMs"]
    uncorrected = result.get("aggregatedEndToEndLatencyUncorrected50pct")  # none if none measured
    lines = [
        f"Clock correction: end-to-end shifted by the workers' clock offsets, up to "
        f"{correction['maxShiftMs']:.3f} ms over {len(correction['pairs'])} worker pair(s), "
        f"bound +/-{bound:.3f} ms; e2e p50 {p50:.3f} ms"
        + ("" if uncorrected is None else f" (uncorrected {uncorrected:.3f} ms)")
    ]
    if bound > p50:
        lines.append(
            f"WARNING: the clock correction's bound ({bound:.3f} ms) exceeds the corrected "
            f"end-to-end p50 ({p50:.3f} ms): end-to-end figures are uncertain by more than "
            "their median"
        )
    return "\n".join(lines)


def host_busy_note(result: dict[str, Any]) -> str | None:
    """A warning when the run's threads waited for a CPU so much that its figures measure the
    host as well as the broker (the result's ``clientCpu``); ``None`` otherwise."""
    block = result.get("clientCpu")
    if not block or not block["hostBusy"]:
        return None
    return (
        f"WARNING: this host was busy: loadgen's threads waited for a CPU "
        f"{block['runQueueWaitShare']:.0%} of the time they could run "
        f"({block['runQueueWaitSeconds']:.1f} s waiting, {block['cpuSeconds']:.1f} s on a CPU, "
        f"{block['runQueueWaitPerSliceMicros']:,.0f} µs a wait); its rates and latencies measure "
        "the host as well as the broker"
    )


def format_outages(outages: list[dict[str, Any]]) -> str | None:
    """The result's ``outages`` (:mod:`loadgen.running.scenarios.outages`) in a line each, or
    ``None``."""
    if not outages:
        return None
    lines = [f"WARNING: {len(outages)} outage(s) during the run:"]
    for outage in outages:
        when = datetime.fromtimestamp(outage["startMs"] / 1000, UTC).strftime("%H:%M:%S.%f")[:-3]
        ended = "" if outage["recovered"] else ", not recovered by the end"
        lines.append(
            f"  no {WHAT_STOPPED[outage['role']]} from {when} UTC for {outage['seconds']:.1f} s"
            f" ({outage['publishErrors']:,} publish errors{ended})"
        )
    return "\n".join(lines)


def format_catch_up(block: dict) -> str:
    """The result's ``catchUp`` block in a line or two: backlog built, drained, how fast."""
    if block["backlogMessages"] is None:
        return "Catch-up: the backlog was still building when the run ended"
    reached = "" if block["targetReached"] else " (target not reached)"
    lines = [
        f"Catch-up: backlog {block['backlogMessages']:,} messages "
        f"({block['backlogBytes'] / MB:,.1f} MB){reached} built in {block['buildSeconds']:.1f} s"
    ]
    drain = block["phases"]["drain"]
    if block["drained"]:
        lines.append(
            f"          drained in {block['drainSeconds']:.1f} s at {block['drainRate']:,.0f} msg/s"
        )
    else:
        lines.append(
            f"          NOT drained below {block['drainedBelowMessages']:,} messages"
            + (f" (read {drain['catchUpReadRate']:,.0f} msg/s)" if drain else "")
        )
    if drain and "endToEndTailing" in drain:
        tailing = [block["phases"][name] for name in ("build", "drain", "steady")]
        p99s = "/".join(
            f"{phase['endToEndTailing']['99pct']:.3f}"
            if phase and "endToEndTailing" in phase
            else "-"
            for phase in tailing
        )
        lines.append(f"          tailing e2e p99 (ms) build/drain/steady {p99s}")
    return "\n".join(lines)


def _rate_line(block: dict[str, Any]) -> str:
    if block["held"] is None:
        return f"rate: not judged ({block['reason']})"
    shown = (
        f"{block['publishRate']:,.0f} of {block['askedRate']:,.0f} msg/s asked "
        f"({block['ratio']:.2%}, tolerance {block['tolerance']:.0%})"
    )
    return f"rate: held, {shown}" if block["held"] else f"rate: NOT HELD, {shown}"


def _consumers_line(block: dict[str, Any]) -> str:
    if "growth" not in block:
        verdict = "not judged" if block["keptUp"] is None else "FALLING BEHIND"
        return f"consumers: {verdict} ({block['reason']})"
    shown = (
        f"backlog {block['backlogAtStart']:,} -> {block['backlogAtEnd']:,} over "
        f"{block['seconds']:.0f} s, trend {block['trend']:+,.0f} msg/s"
    )
    if block["keptUp"]:
        return f"consumers: kept up, {shown}"
    return f"consumers: FALLING BEHIND, {shown} (allowance {block['allowance']:,.0f} messages)"


def format_verdicts(result: dict[str, Any]) -> str | None:
    """The result's ``verdicts`` in a line each: rate held, consumers kept up, the drain, the
    faults."""
    verdicts = result.get("verdicts")
    if verdicts is None:
        return None
    lines = [_rate_line(verdicts["rate"]), _consumers_line(verdicts["consumers"])]
    drain = verdicts.get("drain")
    if drain is not None:
        subscriptions = result.get("catchUp", {}).get("catchUpSubscriptionsPerTopic", 1)
        state = "completed" if drain["completed"] else "NOT COMPLETED"
        lines.append(f"drain: {state}, {describe_drain(drain, subscriptions)}")
    faults = verdicts.get("faults")
    if faults is not None:
        if faults["recovered"]:
            lines.append(f"faults: recovered, the slowest {faults['seconds']:.1f} s after it ended")
        else:
            state = "NOT recovered" if faults["recovered"] is False else "recovery not judged"
            lines.append(f"faults: {state}, {faults['reason']}")
    return "\n".join(lines)
