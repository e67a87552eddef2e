"""The pages cannot drift from the code: the commands, files and field names they show must exist.

Over ``README.md`` and every ``docs/**/*.md`` (no network, no broker: the default suite runs it):

1. Commands. Every ``loadgen ...`` in a fenced shell block (``bash``, ``sh``, ``console`` or none;
   after ``$``, ``VAR=value``, ``&&`` or ``|`` too; ``\\`` and open quotes join lines) is resolved
   against the click objects: each subcommand exists, each option belongs to its command, a
   choice's value is one of its choices, no command gets more arguments than it takes. So is
   every ``loadgen ...`` code span in the prose, read as a synopsis: ``[optional]`` parts given,
   ``...`` dropped, each of ``up|down`` in turn, an UPPER-case word (``URL``) a placeholder; a
   line loadgen prints is shown in a ``text`` block, not as a span.
   Skipped: a line whose command name or option name is a ``<placeholder>``.
2. Whole files. Every ``yaml`` block that is a whole driver file (``name`` and ``driver`` or
   ``driverClass``) or a whole workload (at least two of its required fields) passes
   ``validate_file``, from the repository root (payload files) with dummy values for
   ``${NAME}`` and test certificates for absolute certificate paths missing here. A fragment on
   a driver's page (``docs/drivers/<kind>.md``) is merged into that driver's first file in
   ``configs/drivers`` and validated. Skipped: other fragments (the workload page's are checked
   by 3), blocks that are not a mapping, drivers that do not exist on ``docs/extending`` pages.
3. Field names. Each key of a workload or driver block (whole or fragment, as in 2) must be a
   field of that model at that level; so must each name in the first column of a table headed
   ``field`` on a driver's page or the workload page (a path from the file's top). Each
   backticked name in the prose that looks like a YAML field (``camelCase``, a dotted path with
   a camelCase part, or one that starts at a model's field such as
   ``client.authentication.data``) must be a model field; a dotted one that starts at a model's
   field must resolve from there, level by level. Other vocabularies: a result document's keys
   (from a real in-process run on the memory driver), the names the code writes or calls, and
   ``OTHER_VOCABULARIES``. Not checked: ``snake_case``, ``CamelCase`` (classes), ``UPPER``
   names, a span followed by ``(``, all-lowercase dotted names that do not start at a model
   field (Kafka and Java properties, modules, file names).

The checks are in ``drift_checks.py``; the field rows come from ``docs/field_reference.py``,
the generator of the field reference page.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from drift_checks import (
    REPO,
    SHELL_LANGUAGES,
    Models,
    Page,
    code_names,
    command_lines,
    fenced_blocks,
    field_reference,
    file_text,
    inline_commands,
    load_pages,
    model_rows,
    page_command_problems,
    page_name_problems,
    result_paths,
    validation_problem,
    yaml_blocks,
)

import loadgen


@pytest.fixture(scope="module")
def models() -> Models:
    """The models, and a real result document of a one-second in-process memory run."""
    workload = loadgen.workload(
        topics=1,
        partitionsPerTopic=1,
        messageSize=64,
        subscriptionsPerTopic=1,
        consumerPerSubscription=1,
        producersPerTopic=1,
        producerRate=200,
        testDurationMinutes=1,
    )
    document = loadgen.run(workload, loadgen.driver("memory"), duration=1, warmup=0).document
    paths = frozenset(result_paths(document))
    keys = {segment for path in paths for segment in path.split(".")}
    return Models(model_rows(), paths, frozenset(keys | code_names()))


@pytest.fixture(scope="module")
def pages() -> list[Page]:
    return load_pages()


def report(problems: list[str], what: str) -> str:
    return f"{len(problems)} {what}:\n" + "\n".join(problems)


# --- the checks over the pages -------------------------------------------------------------------


def test_every_command_line_shown_exists(pages: list[Page]) -> None:
    problems, skipped, checked, inline = [], [], 0, 0
    for page in pages:
        found, placeholders = page_command_problems(page)
        problems += found
        skipped += placeholders
        checked += sum(
            1
            for block in fenced_blocks(page)
            if block.language in SHELL_LANGUAGES
            for _ in command_lines(block)
        )
        inline += sum(1 for _ in inline_commands(page))
    assert checked > 20, f"only {checked} loadgen command lines found: the extractor is broken"
    assert inline > 100, f"only {inline} loadgen commands in the prose: the extractor is broken"
    assert not problems, report(problems, "command lines the CLI does not have")


def test_every_whole_yaml_file_shown_validates(
    pages: list[Page], models: Models, tmp_path: Path, request: pytest.FixtureRequest
) -> None:
    def certificates() -> Any:
        return request.getfixturevalue("test_certs")

    problems, validated = [], 0
    for page in pages:
        for item in yaml_blocks(page, models):
            if isinstance(item, str):
                problems.append(item)
                continue
            text = file_text(item)
            if text is None:
                continue
            validated += 1
            problem = validation_problem(item, text, tmp_path, certificates)
            problems += [problem] if problem else []
    assert validated > 0, "no whole workload or driver file found: the classifier is broken"
    assert not problems, report(problems, "yaml blocks that do not validate")


def test_every_field_name_shown_resolves(pages: list[Page], models: Models) -> None:
    problems = [problem for page in pages for problem in page_name_problems(page, models)]
    assert not problems, report(problems, "field names the models do not have there")


def test_the_field_reference_page_lists_every_field() -> None:
    """The page the site generates (a strict build is tests/docs/test_site.py, marked docs)."""
    source = (REPO / "docs" / "reference" / "fields.md").read_text()
    page = field_reference().render(source)
    assert "<!-- fields:" not in page
    missing = [
        f"{scope}: {row.path}"
        for scope, rows in model_rows().items()
        for row in rows
        if f"| `{row.path}` |" not in page
    ]
    assert not missing, f"not in docs/reference/fields.md as generated: {missing}"


# --- the extractors can fail ---------------------------------------------------------------------


def test_a_command_with_an_option_its_command_lacks_is_reported() -> None:
    page = Page("x.md", "Run:\n\n```bash\nloadgen run -d k.yaml w.yaml --rat 10k\n```\n")
    problems, _ = page_command_problems(page)
    assert problems == ["x.md:4: `loadgen run` has no option --rat"]


def test_commands_as_the_pages_write_them_pass() -> None:
    text = (
        "```bash\n"
        "$ LOADGEN_TOKEN=s loadgen run --workers http://a:8080,http://b:8080 \\\n"
        "    -d k.yaml w.yaml --rate=10k --slo 'e2e.p99<20ms' > out.txt  # a comment, it's\n"
        "pip install -e . && loadgen brokers up kafka --secure\n"
        'loadgen pipeline query tables "SELECT 1\n'
        '  FROM runs" --report runs\n'
        "loadgen <command> --help\n"
        "```\n"
    )
    problems, skipped = page_command_problems(Page("x.md", text))
    assert problems == []
    assert skipped == ["x.md:7: <command>"]


def test_an_unknown_command_a_bad_choice_and_an_extra_argument_are_reported() -> None:
    text = (
        "```\n"
        "loadgen brokers restart kafka\n"
        "loadgen probe kafka://b:9092 --metric p99\n"
        "loadgen compare A.json B.json C.json\n"
        "loadgen pipeline quary tables\n"
        "```\n"
    )
    problems, _ = page_command_problems(Page("x.md", text))
    assert problems == [
        "x.md:2: `loadgen brokers` action: 'restart' is not one of up, down, status",
        "x.md:3: `loadgen probe` --metric: 'p99' is not one of e2e, publish",
        "x.md:4: `loadgen compare` takes no more arguments, got ['C.json']",
        "x.md:5: `loadgen pipeline` has no command 'quary'",
    ]


def test_a_wrong_command_in_the_prose_is_reported() -> None:
    text = (
        "Run `loadgen run -d k.yaml w.yaml --rat 10k`, then `loadgen brokers up|restart kafka`\n"
        "or `loadgen probe URL --metric p99`; `loadgen` and `loadgen.run()` are no commands.\n"
    )
    problems, _ = page_command_problems(Page("x.md", text))
    assert problems == [
        "x.md:1: `loadgen run` has no option --rat",
        "x.md:1: `loadgen brokers` action: 'restart' is not one of up, down, status",
        "x.md:2: `loadgen probe` --metric: 'p99' is not one of e2e, publish",
    ]


def test_synopses_in_the_prose_as_the_pages_write_them_pass() -> None:
    text = (
        "`loadgen run [-d DRIVER.yaml ...] WORKLOAD.yaml ... [-o OUTDIR]`,\n"
        "`loadgen brokers up|down|status kafka|rabbitmq|pulsar`,\n"
        "`loadgen brokers up KIND --secure`, `loadgen probe pravega://…`,\n"
        "`LOADGEN_TOKEN=s loadgen worker --bind 0.0.0.0:8080`,\n"
        '`loadgen pipeline query OUT "SQL"` and `loadgen SUBCOMMAND --help`.\n'
    )
    problems, skipped = page_command_problems(Page("x.md", text))
    assert problems == []
    assert skipped == ["x.md:5: <SUBCOMMAND>"]
    forms = [argv for _, argv in inline_commands(Page("x.md", text))]
    assert forms[0] == ["loadgen", "run", "-d", "DRIVER.yaml", "WORKLOAD.yaml", "-o", "<OUTDIR>"]
    assert len(forms) == 1 + 9 + 5


PULSAR_AT_THE_WRONG_LEVEL = """\
```yaml
name: Pulsar
driver: pulsar
client:
  serviceUrl: pulsar://127.0.0.1:6650
subscriptionInitialPosition: Earliest
```
"""


def test_a_pulsar_field_at_the_wrong_level_is_reported(models: Models) -> None:
    problems = page_name_problems(Page("x.md", PULSAR_AT_THE_WRONG_LEVEL), models)
    assert problems == [
        "x.md:6: `subscriptionInitialPosition` is not a field of a pulsar file "
        "(it is `consumer.subscriptionInitialPosition`)"
    ]
    table = "| field | meaning |\n|---|---|\n| `consumer.ackMode` | ... |\n| `ackMode` | ... |\n"
    problems = page_name_problems(Page("docs/drivers/pulsar.md", table), models)
    assert problems == [
        "docs/drivers/pulsar.md:4: `ackMode` in the field table is not a field of a pulsar file "
        "(it is `consumer.ackMode`)"
    ]
    fragment = "```yaml\nclient:\n  subscriptionType: Shared\nconsumer:\n  ackMode: x\n```\n"
    problems = page_name_problems(Page("docs/drivers/pulsar.md", fragment), models)
    assert problems == [
        "docs/drivers/pulsar.md:3: `client.subscriptionType` is not a field of a pulsar file "
        "(it is `consumer.subscriptionType`)"
    ]


def test_a_driver_file_or_fragment_with_a_bad_value_does_not_validate(
    models: Models, tmp_path: Path
) -> None:
    good = "```yaml\nname: M\ndriver: memory\npollIntervalMs: 0.5\n```\n"
    bad = "```yaml\nname: M\ndriver: memory\npollIntervalMs: -1\n```\n"
    fragment = "```yaml\nconsumer:\n  ackMode: sideways\n```\n"
    results = []
    for rel, text in (("a.md", good), ("b.md", bad), ("docs/drivers/pulsar.md", fragment)):
        (item,) = yaml_blocks(Page(rel, text), models)
        results.append(validation_problem(item, file_text(item), tmp_path, lambda: None))
    assert results[0] is None
    assert results[1].startswith("b.md:4: does not validate: pollIntervalMs")
    assert results[2].startswith("docs/drivers/pulsar.md:3: does not validate: consumer.ackMode")


def test_names_in_the_prose_resolve_or_are_reported(models: Models) -> None:
    text = (
        "Set `producerRate`, `consumer.subscriptionInitialPosition`, `client.authentication.data`,"
        " `linger.ms`, `snake_case`, `Result.lost`, `run.clockOffsetsMs` and `kafka.yaml`;\n"
        "not `producerRat`, `client.subscriptionInitialPosition` or `client.tlsCert`.\n"
    )
    problems = page_name_problems(Page("x.md", text), models)
    assert problems == [
        "x.md:2: `producerRat` is no field of any model and no known name",
        "x.md:2: `client.subscriptionInitialPosition` does not resolve in pravega, pulsar "
        "(it is `consumer.subscriptionInitialPosition`)",
        "x.md:2: `client.tlsCert` does not resolve in pravega, pulsar",
    ]
