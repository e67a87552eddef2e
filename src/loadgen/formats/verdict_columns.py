"""A result's ``verdicts`` flattened for tables: the CSV summary row, sweep points, matrix rows.

Each verdict becomes one field, ``true``, ``false`` or ``null`` (not judged):
``rateHeld``, ``consumersKeptUp``, ``drainCompleted`` on a catch-up run only, and
``faultsRecovered`` on a run with faults. A result
written before verdicts existed has none of them, and a table shows empty cells for it.
A text table shows them as one word (:func:`mark`): ``ok``, or what failed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from loadgen.formats.run_verdicts import ANSWERS

FIELDS = tuple((block + key[0].upper() + key[1:], block, key) for block, key in ANSWERS)
"""(flat field, block of ``verdicts``, its answer) in the order tables show them."""
NAMES = tuple(name for name, _, _ in FIELDS)
FAILED = {
    "rateHeld": "rate",
    "consumersKeptUp": "behind",
    "drainCompleted": "drain",
    "faultsRecovered": "fault",
}
"""The word a text table shows for each verdict that failed."""


def flat_verdicts(verdicts: Mapping[str, Any] | None) -> dict[str, bool | None]:
    """The answers of a result's ``verdicts`` block by flat field; empty without one."""
    if not verdicts:
        return {}
    return {name: verdicts[block][answer] for name, block, answer in FIELDS if block in verdicts}


def mark(fields: Mapping[str, Any]) -> str:
    """One word for the verdicts among ``fields``: ``ok`` when none failed; the failed ones
    (``rate``, ``behind``, ``drain``, ``fault``, comma-separated); ``n/a`` when none was
    judged; empty when there are none (a run that wrote no result)."""
    answers = [(name, fields[name]) for name in NAMES if name in fields]
    if not answers:
        return ""
    failed = [FAILED[name] for name, answer in answers if answer is False]
    if failed:
        return ",".join(failed)
    return "ok" if any(answer for _, answer in answers) else "n/a"


def csv_cell(answer: bool | None) -> str:
    """``true``, ``false``, or empty (not judged, or no verdict)."""
    return "" if answer is None else str(answer).lower()
