"""The README stays a short front page whose links work on GitHub, with the two set-up commands."""

from __future__ import annotations

import re
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
README = REPO / "README.md"
LINK = re.compile(r"\]\(([^)\s]+)\)")
EXTERNAL = re.compile(r"^[a-z][a-z0-9+.-]*:", re.IGNORECASE)  # http:, https:, mailto:, ...


def relative_links(text: str) -> list[str]:
    """Link targets that point into the repository, without their ``#anchor``."""
    targets = (target.split("#", 1)[0] for target in LINK.findall(text))
    return [target for target in targets if target and not EXTERNAL.match(target)]


def test_readme_is_at_most_250_lines() -> None:
    lines = README.read_text().count("\n")
    assert lines <= 250, f"README.md has {lines} lines; the details belong in docs/"


def test_every_relative_link_in_the_readme_points_to_a_file() -> None:
    links = relative_links(README.read_text())
    assert links, "the README links into docs/"
    missing = [link for link in links if not (README.parent / link).exists()]
    assert not missing, f"README.md links to files that do not exist: {missing}"


def test_readme_keeps_the_two_setup_commands() -> None:
    """The first makes and activates a venv: Debian's and Ubuntu's pip refuse installs outside
    one (PEP 668); the second runs in it."""
    text = README.read_text()
    assert (
        "python3 -m venv .venv && . .venv/bin/activate && pip install -e . && "
        "loadgen run configs/workloads/quickstart.yaml"
    ) in text
    assert "pip install -e '.[test]' && python -m pytest" in text


def test_relative_links_leave_out_urls_and_anchors() -> None:
    text = "[a](docs/a.md#x) [b](https://example.org/b) [c](#top) [d](LICENSE)"
    assert relative_links(text) == ["docs/a.md", "LICENSE"]
