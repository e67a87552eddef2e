"""A griffe extension for the API reference: Sphinx roles in docstrings become code spans.

The docstrings use reST roles (``:class:`~loadgen.base.errors.ConfigError```) that Markdown shows
verbatim; this rewrites each as the code span a reader expects (`` `ConfigError` ``, the last
part when the target starts with ``~``), leaving the docstrings themselves as they are.
"""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:class|meth|func|mod|data|attr|exc|obj|const):`(~?)([^`]+)`")


def plain(text: str) -> str:
    """``:class:`~a.b.C``` → `` `C` ``; ``:func:`run``` → `` `run` ``."""

    def code(match: re.Match[str]) -> str:
        target = match.group(2)
        return f"`{target.rsplit('.', 1)[-1] if match.group(1) else target}`"

    return ROLE.sub(code, text)


class SphinxRoles(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = plain(obj.docstring.value)
