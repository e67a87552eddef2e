"""docs/pipeline.md documents every column of every table, with the type the job writes."""

import re
from pathlib import Path

import pytest

from loadgen.pipeline.tasks.records import TABLES

DOC = Path(__file__).resolve().parents[2] / "docs" / "pipeline.md"


def documented(table: str) -> list[tuple[str, str]]:
    section = DOC.read_text().split(f"### {table} ")[1].split("###")[0]
    return re.findall(r"^\| (\w+) \| ([A-Z]+) \|", section, flags=re.MULTILINE)


@pytest.mark.parametrize("table", list(TABLES))
def test_the_docs_list_each_tables_columns_in_order_with_their_types(table):
    assert documented(table) == TABLES[table]
