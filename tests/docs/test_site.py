"""The documentation site builds strictly, and its CLI reference covers every ``loadgen`` command.

``mkdocs build --strict`` fails on a broken link or anchor, a page missing from the nav and a
docstring mkdocstrings cannot render; the CLI page is generated from the click commands by
mkdocs-click, so a command added without reaching that page means the page points at the wrong
group. Needs the ``docs`` extra:
``pip install -e '.[docs]' && python -m pytest -m docs tests/docs``.
"""

from __future__ import annotations

import html
import importlib.util
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import click
import pytest

from loadgen.cli.main import cli
from loadgen.pytest_plugin.require import unavailable

pytestmark = [pytest.mark.docs, pytest.mark.timeout(300)]

REPO = Path(__file__).resolve().parents[2]
MKDOCS_YML = REPO / "mkdocs.yml"
HEADING = re.compile(r"<h[1-6][^>]*>(.*?)</h[1-6]>", re.DOTALL)
TAG = re.compile(r"<[^>]+>")
SPHINX_ROLE = re.compile(r":(?:class|meth|func|mod|data|attr|exc):<code>")


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The site built once for this module, as CI builds it."""
    missing = [m for m in ("mkdocs", "material", "mkdocstrings", "mkdocs_click") if not _has(m)]
    if missing:
        unavailable(f"{', '.join(missing)} not installed (pip install -e '.[docs]')")
    out = tmp_path_factory.mktemp("site")
    built = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "-f",
            str(MKDOCS_YML),
            "-d",
            str(out),
        ],
        cwd=REPO,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=240,
    )
    assert built.returncode == 0, f"mkdocs build --strict failed:\n{built.stderr[-4000:]}"
    return out


def _has(module: str) -> bool:
    return importlib.util.find_spec(module) is not None


def command_paths(group: click.Command, path: tuple[str, ...] = ("loadgen",)) -> Iterator[str]:
    """``loadgen``, ``loadgen run``, ``loadgen pipeline ingest``, ...: every visible command."""
    yield " ".join(path)
    if isinstance(group, click.Group):
        for name, command in group.commands.items():
            if not command.hidden:
                yield from command_paths(command, (*path, name))


def headings(page: Path) -> set[str]:
    texts = (html.unescape(TAG.sub("", h)) for h in HEADING.findall(page.read_text()))
    return {" ".join(text.replace("¶", "").split()) for text in texts}


def test_the_cli_page_documents_the_group_walked_here() -> None:
    source = (REPO / "docs" / "cli.md").read_text()
    assert ":module: loadgen.cli.main" in source and ":command: cli" in source


def test_every_loadgen_command_is_in_the_generated_cli_reference(site: Path) -> None:
    documented = headings(site / "cli" / "index.html")
    paths = list(command_paths(cli))
    assert "loadgen pipeline ingest" in paths  # the walk reaches nested groups
    missing = [path for path in paths if path not in documented]
    assert not missing, f"not in the CLI reference: {missing}; headings: {sorted(documented)}"


def test_the_api_reference_renders_the_public_names(site: Path) -> None:
    page = (site / "api" / "index.html").read_text()
    for name in (
        "loadgen.api.run",
        "loadgen.running.result.Result",
        "loadgen.running.slo.assert_slo",
    ):
        assert f'id="{name}"' in page, f"{name} is not rendered in the API reference"
    roles = SPHINX_ROLE.findall(page)
    assert not roles, f"Sphinx roles reached the page verbatim (docs/griffe_roles.py): {roles}"
