"""Java's ``sasl.jaas.config`` value, parsed: ``<LoginModule class> <flag> key="value" ...;``.

librdkafka has no JAAS: it takes ``sasl.username`` / ``sasl.password``. Parsing the string
properly (quoted values with the backslash escapes Java's StreamTokenizer reads, an optional
``;``) is what lets a password that contains spaces, quotes or ``;`` come through intact.
Errors never quote the input: it holds a password.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

FLAGS = ("required", "requisite", "sufficient", "optional")


class JaasSyntaxError(ValueError):
    """What is wrong, never the text itself."""


@dataclass(frozen=True)
class JaasEntry:
    login_module: str
    flag: str
    options: dict[str, str]

    @property
    def module_name(self) -> str:
        """The class name without its package (``PlainLoginModule``)."""
        return self.login_module.rsplit(".", 1)[-1]


def parse_jaas(text: str) -> JaasEntry:
    """One login-module entry; ``JaasSyntaxError`` names the problem and its position."""
    reader = _Reader(text)
    module = reader.word("a LoginModule class name")
    flag = reader.word(f"a control flag ({'/'.join(FLAGS)})")
    if flag.lower() not in FLAGS:
        raise JaasSyntaxError(f"control flag at {reader.flag_at} is not one of {'/'.join(FLAGS)}")
    options = {}
    while not reader.at_end():
        key = reader.word("an option name")
        reader.expect("=")
        options[key] = reader.value()
    return JaasEntry(module, flag.lower(), options)


class _Reader:
    """A cursor over the JAAS text; ``;`` ends it, and only whitespace may follow."""

    def __init__(self, text: str) -> None:
        self.text = text.strip()
        self.position = 0
        self.flag_at = 0

    def _skip_space(self) -> None:
        while self.position < len(self.text) and self.text[self.position].isspace():
            self.position += 1

    def at_end(self) -> bool:
        self._skip_space()
        if self.text[self.position : self.position + 1] == ";":
            self.position += 1
            self._skip_space()
            if self.position < len(self.text):
                raise JaasSyntaxError(f"text after ';' at character {self.position}")
            return True
        return self.position >= len(self.text)

    def word(self, what: str) -> str:
        self._skip_space()
        self.flag_at = self.position
        start = self.position
        while self.position < len(self.text) and (
            self.text[self.position].isalnum() or self.text[self.position] in "._-$"
        ):
            self.position += 1
        if self.position == start:
            raise JaasSyntaxError(f"expected {what} at character {start}")
        return self.text[start : self.position]

    def expect(self, char: str) -> None:
        self._skip_space()
        if self.text[self.position : self.position + 1] != char:
            raise JaasSyntaxError(f"expected '{char}' at character {self.position}")
        self.position += 1

    def value(self) -> str:
        """A value in double or single quotes, with Java's escapes (:func:`_unescaped`), or a
        bare word."""
        self._skip_space()
        quote = self.text[self.position : self.position + 1]
        if quote not in ('"', "'"):
            return self.word("a value")
        start = self.position
        end = self.position + 1
        while end < len(self.text) and self.text[end] != quote:
            end += 2 if self.text[end] == "\\" else 1
        if end >= len(self.text):
            raise JaasSyntaxError(f"quoted value opened at character {start} is never closed")
        self.position = end + 1
        return _unescaped(self.text[start + 1 : end])


ESCAPES = {"a": "\a", "b": "\b", "f": "\f", "n": "\n", "r": "\r", "t": "\t", "v": "\v"}
"""The letters Java's StreamTokenizer maps after a backslash; any other character stands for
itself."""
ESCAPE = re.compile(r"\\([0-3][0-7]{0,2}|[4-7][0-7]?|.)", re.DOTALL)
"""A backslash and what it escapes: up to three octal digits (``\\377`` at most, so ``\\477``
is ``\\47`` then ``7``), or one character."""


def _unescaped(quoted: str) -> str:
    """A quoted value's text as Kafka's JaasConfig (Java's StreamTokenizer) reads it."""

    def one(escape: re.Match[str]) -> str:
        text = escape[1]
        if text[0] in "01234567":
            return chr(int(text, 8))
        return ESCAPES.get(text, text)

    return ESCAPE.sub(one, quoted)
