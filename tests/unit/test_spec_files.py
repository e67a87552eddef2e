"""Every way a YAML file can be unusable is a ConfigError (exit 2) that names the file."""

import pytest

from loadgen.base.errors import ConfigError
from loadgen.spec import load_yaml


def error_for(path):
    with pytest.raises(ConfigError) as caught:
        load_yaml(path)
    assert caught.value.exit_code == 2 and caught.value.file == str(path)
    return str(caught.value)


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        (b"name: w\ntopics: [1\n", "invalid YAML at line 3, column 1"),
        (b"name: w\n  topics: 1\n", "invalid YAML at line 2, column 9"),
        (b"", "the file is empty"),
        (b"# only a comment\n", "the file is empty"),
        (b"- a\n- b\n", "expected a mapping of fields at the top level, got list"),
        (b"just text\n", "got str"),
        (b"name: \xff\xfe\n", "not UTF-8 text (byte 6)"),
        (b"topics: 1\nname: a\ntopics: 2\n", "line 3, column 1: the key 'topics' is given twice"),
    ],
)
def test_unusable_content_is_reported_with_its_location(tmp_path, content, fragment):
    path = tmp_path / "w.yaml"
    path.write_bytes(content)
    assert fragment in error_for(path)


def test_missing_file(tmp_path):
    assert "file not found" in error_for(tmp_path / "nope.yaml")


def test_a_directory_is_not_readable_as_a_file(tmp_path):
    assert "cannot read the file" in error_for(tmp_path)


def test_merge_keys_may_override_merged_values(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_text("base: &b {x: 1, y: 2}\nd:\n  <<: *b\n  x: 3\n")
    assert load_yaml(path)["d"] == {"x": 3, "y": 2}


def test_utf8_with_a_byte_order_mark_loads(tmp_path):
    path = tmp_path / "w.yaml"
    path.write_bytes("\ufeffname: «ünïcode»\n".encode())
    assert load_yaml(path) == {"name": "«ünïcode»"}
