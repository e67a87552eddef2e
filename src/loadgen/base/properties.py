"""Java ``.properties`` text in logical lines, as ``java.util.Properties.load`` reads it.

A logical line is one natural line, or several joined by a ``\\`` at the end of each but the
last (an odd number of them: ``\\\\`` is an escaped backslash). Every natural line's leading
whitespace is dropped. ``#`` and ``!`` start a comment line, which never continues. A property
is split at its first ``=`` or ``:``.

The parser (Kafka's driver) and redaction (:mod:`loadgen.base.redaction`) both read through
here, so that a secret property is redacted over exactly the lines the parser gives its value.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass

LINE_BREAK = re.compile(r"\r\n|\r|\n")
LEADING_SPACE = " \t\f"
"""What Java skips at the start of every natural line."""


@dataclass(frozen=True)
class LogicalLine:
    number: int
    """The number of its first natural line, from 1 (an error names it, never the text)."""
    natural: tuple[str, ...]
    """The natural lines it spans, as written."""

    @property
    def is_comment(self) -> bool:
        return _comment(self.natural[0])

    @property
    def is_blank(self) -> bool:
        return not self.text.strip()

    @property
    def text(self) -> str:
        """The natural lines joined as Java joins them: leading whitespace and each joining
        backslash dropped."""
        if self.is_comment:
            return self.natural[0].lstrip(LEADING_SPACE)
        parts = [line.lstrip(LEADING_SPACE) for line in self.natural]
        return "".join(part[:-1] if continues(part) else part for part in parts)

    def separator(self) -> int:
        """Where :attr:`text` splits into key and value (its first ``=`` or ``:`` after at least
        one character); -1 for a line that is no ``key=value``."""
        cuts = [i for i in (self.text.find("="), self.text.find(":")) if i > 0]
        return min(cuts) if cuts else -1


def continues(line: str) -> bool:
    """Whether a natural line ends in an odd number of backslashes: the next one continues it."""
    return (len(line) - len(line.rstrip("\\"))) % 2 == 1


def logical_lines(text: str) -> Iterator[LogicalLine]:
    """Every logical line of ``text``, blank and comment lines included, in order; a line break
    at the end ends the last line (no empty line follows it)."""
    natural = LINE_BREAK.split(text)
    if len(natural) > 1 and not natural[-1]:
        natural.pop()
    start = 0
    while start < len(natural):
        end = start + 1
        if not _comment(natural[start]):
            while end < len(natural) and continues(natural[end - 1]):
                end += 1
        yield LogicalLine(start + 1, tuple(natural[start:end]))
        start = end


def _comment(line: str) -> bool:
    return line.lstrip(LEADING_SPACE)[:1] in ("#", "!")
