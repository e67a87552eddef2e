"""Java's ``sasl.jaas.config`` value, parsed: ``<LoginModule class> <flag> key="value" ...;``.

librdkafka has no JAAS: it takes ``sasl.username`` / ``sasl.password``. Parsing the string
properly (quoted values with backslash escapes, an optional ``;``) is what lets a password that
contains spaces, quotes or ``;`` come through intact. Errors never quote the input: it holds a
password.
"""

from __future__ import annotations

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
        """A double-quoted value with ``\\`` escapes, or a bare word."""
        self._skip_space()
        if self.text[self.position : self.position + 1] != '"':
            return self.word("a value")
        start = self.position
        self.position += 1
        chars = []
        while self.position < len(self.text):
            char = self.text[self.position]
            if char == "\\" and self.position + 1 < len(self.text):
                chars.append(self.text[self.position + 1])
                self.position += 2
                continue
            self.position += 1
            if char == '"':
                return "".join(chars)
            chars.append(char)
        raise JaasSyntaxError(f"quoted value opened at character {start} is never closed")
