"""The extractors and checks behind ``test_drift.py``: pages, their fenced blocks and
backtick spans, shell command lines against the click tree, YAML blocks against the models.
"""

from __future__ import annotations

import ast
import contextlib
import importlib.util
import itertools
import os
import re
import shlex
import sys
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

import click
import yaml

from loadgen.cli.main import cli
from loadgen.driver_api import driver_classes
from loadgen.driver_api.driver_file import SELECTORS, omb_driver_classes
from loadgen.driver_api.validation import validate_file

REPO = Path(__file__).resolve().parents[2]
PAGES = [REPO / "README.md", *sorted((REPO / "docs").rglob("*.md"))]
SHELL_LANGUAGES = {"", "bash", "sh", "shell", "console"}
FENCE = re.compile(r"^(\s*)(`{3,}|~{3,})\s*([\w+-]*)")
SPAN = re.compile(r"(?<!`)(`+)(?!`)(.+?)(?<!`)\1(?!`)")
PLACEHOLDER = re.compile(r"<[A-Za-z][^<>\n]*>")
ENV_REFERENCE = re.compile(r"\$\{([A-Za-z_]\w*)(:-[^}]*)?\}")
CONTROL = {"&&", "||", ";", "|", "&", "(", ")"}
REDIRECT = re.compile(r"[<>]+&?")
ASSIGNMENT = re.compile(r"[A-Za-z_]\w*=")
INLINE_COMMAND = re.compile(r"([A-Za-z_]\w*=\S*\s+)*(python[\d.]* -m )?loadgen\s")
OPTIONAL = re.compile(r"(?<!\S)\[|\](?!\S)")
ALTERNATIVES = re.compile(r"[^\s|'\"]+(?:\|[^\s|'\"]+)+")
ELLIPSES = {"...", "…"}
METAVAR = re.compile(r"[A-Z][A-Z0-9_]*")
CAMEL = re.compile(r"[a-z][a-z0-9]*[A-Z][A-Za-z0-9]*")
DOTTED = re.compile(r"[a-z][A-Za-z0-9_]*(\[\])?(\.([A-Za-z][A-Za-z0-9_]*(\[\])?|\*))+")
FILE_SUFFIXES = {"yaml", "yml", "json", "md", "py", "pem", "key", "crt", "csv", "html", "txt"}
CERT_PATH = re.compile(r"(?<![\w.~])(/[\w.\-/]+\.(?:pem|crt|key))\b")
CA_WORDS = {"ca", "cacert", "trust", "truststore", "root"}
DUMMY_ENV = {"KAFKA_BOOTSTRAP_SERVERS": "127.0.0.1:9092"}
OTHER_VOCABULARIES = {
    "getSegmentsBetween": "Pravega controller gRPC",
    "isStreamCutValid": "Pravega controller gRPC",
    "removeWriter": "Pravega controller gRPC",
    "noteTimestampFromWriter": "Pravega controller gRPC",
    "getValueAtPercentile": "Java HdrHistogram",
    "sendAsync": "the Java clients",
    "messageSizeDistribution": "OMB's unmerged PR #443, named as what is not read",
    "matrix.keyDistributer": "a misspelt field, quoted from an error message on purpose",
    "faults.recovered": "the verdict of a run's faults (--slo), not the workload's faults field",
}


@dataclass(frozen=True)
class Page:
    rel: str
    text: str


@dataclass(frozen=True)
class Block:
    page: str
    line: int
    """The file line of the block's first line of content."""
    language: str
    lines: tuple[str, ...]

    @property
    def text(self) -> str:
        return "\n".join(self.lines) + "\n"


class Unparsable(Exception):
    """A command line with a placeholder where a command or option name should be."""


@dataclass(frozen=True)
class Models:
    """The field rows of the workload and of every driver, and the other known names."""

    rows: Mapping[str, list[Any]]
    """``{"workload": rows, kind: rows}`` (``field_reference.Row``)."""
    result_paths: frozenset[str]
    known_names: frozenset[str]

    @cached_property
    def roots(self) -> dict[str, list[str]]:
        """Each top-level field name and the models that have it."""
        roots: dict[str, list[str]] = {}
        for scope, rows in self.rows.items():
            for name in {row.path.split(".")[0].removesuffix("[]") for row in rows}:
                roots.setdefault(name, []).append(scope)
        return roots


# --- reading the pages ---------------------------------------------------------------------------


def load_pages() -> list[Page]:
    return [Page(str(path.relative_to(REPO)), path.read_text()) for path in PAGES]


def fenced_blocks(page: Page) -> Iterator[Block]:
    """Every fenced block, its lines without the fence's own indentation."""
    lines = page.text.splitlines()
    index = 0
    while index < len(lines):
        opening = FENCE.match(lines[index])
        if not opening:
            index += 1
            continue
        indent, fence, language = opening.groups()
        end = next(
            (i for i in range(index + 1, len(lines)) if lines[i].strip() == fence),
            len(lines),
        )
        body = tuple(line.removeprefix(indent) for line in lines[index + 1 : end])
        yield Block(page.rel, index + 2, language.lower(), body)
        index = end + 1


def fenced_lines(page: Page) -> set[int]:
    """The file lines of the fenced blocks, fences included."""
    return {
        block.line + offset
        for block in fenced_blocks(page)
        for offset in range(-1, len(block.lines) + 1)
    }


def prose_spans(page: Page) -> Iterator[tuple[int, str]]:
    """``(line, text)`` of each inline code span outside the fenced blocks."""
    fenced = fenced_lines(page)
    for number, line in enumerate(page.text.splitlines(), start=1):
        if number not in fenced:
            for span in SPAN.finditer(line):
                if not line[span.end() :].startswith("("):  # a call, not a field
                    yield number, span.group(2).strip()


# --- 1. command lines ----------------------------------------------------------------------------


def command_lines(block: Block) -> Iterator[tuple[int, list[str]]]:
    """``(line, argv)`` of each ``loadgen`` invocation in a shell block."""
    pending, start = "", block.line
    for offset, line in enumerate(block.lines):
        if not pending:
            start = block.line + offset
        text = pending + line
        if text.rstrip().endswith("\\"):
            pending = text.rstrip()[:-1] + " "
            continue
        try:
            tokens = split_shell(text)
        except ValueError:  # a quote still open: the command goes on
            pending = text + "\n"
            continue
        pending = ""
        for argv in invocations(tokens):
            yield start, argv
    if re.search(r"(^|\s)loadgen\s", pending):
        yield start, ["loadgen", "<an unclosed quote>"]


def split_shell(text: str) -> list[str]:
    """Shell words and operators; a ``<placeholder>`` stays one word (not a redirection)."""
    placeholders = PLACEHOLDER.findall(text)
    for number, placeholder in enumerate(placeholders):
        text = text.replace(placeholder, f"\x00{number}\x00", 1)
    lexer = shlex.shlex(text.removeprefix("$ "), posix=True, punctuation_chars=True)
    lexer.whitespace_split = True
    words = list(lexer)
    for number, placeholder in enumerate(placeholders):
        words = [word.replace(f"\x00{number}\x00", placeholder) for word in words]
    return words


def invocations(tokens: list[str]) -> Iterator[list[str]]:
    """The ``loadgen`` commands among shell words: between operators, after ``VAR=value``s,
    redirections dropped; ``python -m loadgen`` counts too."""
    command: list[str] = []
    words = iter([*tokens, ";"])
    for word in words:
        if word in CONTROL:
            while command and ASSIGNMENT.match(command[0]):
                command.pop(0)
            if command[:1] == ["loadgen"]:
                yield command
            elif re.fullmatch(r"python[\d.]*", command[0] if command else "") and command[1:3] == [
                "-m",
                "loadgen",
            ]:
                yield ["loadgen", *command[3:]]
            command = []
        elif REDIRECT.fullmatch(word):
            next(words, None)
            if command and command[-1].isdigit():
                command.pop()
        else:
            command.append(word)


def command_problems(argv: list[str]) -> list[str]:
    """What in ``loadgen ...`` the click command tree does not have."""
    return check_arguments(cli, argv[1:], ["loadgen"])


def check_arguments(command: click.Command, args: list[str], path: list[str]) -> list[str]:
    ctx = click.Context(command, info_name=path[-1])
    params = command.get_params(ctx)
    options = {
        name: param
        for param in params
        if isinstance(param, click.Option)
        for name in (*param.opts, *param.secondary_opts)
    }
    problems: list[str] = []
    positionals: list[str] = []
    words = iter(args)
    for word in words:
        if word == "--":
            positionals += list(words)
            break
        if is_option(word):
            problems += check_option(word, options, words, path)
            continue
        if isinstance(command, click.Group):
            if PLACEHOLDER.search(word):
                raise Unparsable(word)
            sub = command.get_command(ctx, word)
            if sub is None:
                return [*problems, f"`{' '.join(path)}` has no command {word!r}"]
            return problems + check_arguments(sub, list(words), [*path, word])
        positionals.append(word)
    arguments = [param for param in params if isinstance(param, click.Argument)]
    return problems + check_positionals(arguments, positionals, path)


def is_option(word: str) -> bool:
    return word.startswith("-") and word != "-" and not re.fullmatch(r"-[\d.]+", word)


def check_option(
    word: str, options: Mapping[str, click.Option], words: Iterator[str], path: list[str]
) -> list[str]:
    """One option word (taking its value from ``words`` when it needs one)."""
    name, equals, value = word.partition("=")
    if PLACEHOLDER.search(name):
        raise Unparsable(word)
    option = options.get(name)
    if option is None and re.fullmatch(r"-[A-Za-z]{2,}", name):  # -qv: flags together
        missing = [f"-{c}" for c in name[1:] if f"-{c}" not in options]
        return [f"`{' '.join(path)}` has no option {flag}" for flag in missing]
    if option is None:
        return [f"`{' '.join(path)}` has no option {name}"]
    if option.is_flag or option.count:
        return [f"`{' '.join(path)}` {name} takes no value"] if equals else []
    values = [value] if equals else [next(words, "") for _ in range(max(option.nargs, 1))]
    return [problem for v in values if (problem := choice_problem(option, v, path, name))]


def choice_problem(param: click.Parameter, value: str, path: list[str], name: str) -> str:
    if not isinstance(param.type, click.Choice) or PLACEHOLDER.search(value) or "$" in value:
        return ""
    choices = [str(choice) for choice in param.type.choices]
    fold = (lambda text: text) if param.type.case_sensitive else str.lower
    if fold(value) in map(fold, choices):
        return ""
    return f"`{' '.join(path)}` {name}: {value!r} is not one of {', '.join(choices)}"


def check_positionals(
    arguments: list[click.Argument], positionals: list[str], path: list[str]
) -> list[str]:
    """Too many arguments, and choices, in the order click assigns them."""
    fixed = sum(argument.nargs for argument in arguments if argument.nargs > 0)
    problems, rest = [], list(positionals)
    for argument in arguments:
        count = argument.nargs if argument.nargs > 0 else max(len(rest) - fixed, 0)
        fixed -= max(argument.nargs, 0)
        taken, rest = rest[:count], rest[count:]
        problems += [p for v in taken if (p := choice_problem(argument, v, path, argument.name))]
    if rest:
        problems.append(f"`{' '.join(path)}` takes no more arguments, got {rest}")
    return problems


def inline_commands(page: Page) -> Iterator[tuple[int, list[str]]]:
    """``(line, argv)`` of each ``loadgen ...`` code span in the prose, read as a synopsis."""
    for line, span in prose_spans(page):
        if INLINE_COMMAND.match(span):
            for form in synopsis_forms(span):
                for argv in invocations(form):
                    yield line, argv


def synopsis_forms(text: str) -> Iterator[list[str]]:
    """The shell words of each form a synopsis shows: ``[optional]`` parts given, ``...``
    dropped, each of ``up|down`` taken in turn, an UPPER-case word (``URL``, ``KIND``) a
    ``<placeholder>``."""
    text = OPTIONAL.sub("", text)
    gaps = ALTERNATIVES.split(text)
    choices = [match.group().split("|") for match in ALTERNATIVES.finditer(text)]
    for picked in itertools.product(*choices):
        form = "".join(gap + word for gap, word in zip(gaps, (*picked, ""), strict=True))
        words = [word for word in split_shell(form) if word not in ELLIPSES]
        yield [f"<{word}>" if METAVAR.fullmatch(word) else word for word in words]


def page_commands(page: Page) -> Iterator[tuple[int, list[str]]]:
    """``(line, argv)`` of every ``loadgen`` command the page shows: shell blocks, then prose."""
    for block in fenced_blocks(page):
        if block.language in SHELL_LANGUAGES:
            yield from command_lines(block)
    yield from inline_commands(page)


def page_command_problems(page: Page) -> tuple[list[str], list[str]]:
    """Problems, and the lines skipped for a placeholder, as ``file:line: ...``."""
    problems, skipped = [], []
    for line, argv in page_commands(page):
        where = f"{page.rel}:{line}"
        try:
            problems += [f"{where}: {problem}" for problem in command_problems(argv)]
        except Unparsable as placeholder:
            skipped.append(f"{where}: {placeholder}")
    return problems, skipped


# --- 2. and 3. YAML blocks -----------------------------------------------------------------------


@dataclass(frozen=True)
class YamlBlock:
    block: Block
    data: Any
    keys: list[tuple[str, int]]
    """Each key path (``consumer.ackMode``, ``messageSizes[].size``) and its file line."""
    scope: str | None
    """``workload``, a driver kind, or None: not a workload or driver file or fragment."""
    whole: bool


def yaml_blocks(page: Page, models: Models) -> Iterator[YamlBlock | str]:
    """Each ``yaml`` block, classified; a block that does not parse is a problem (a str)."""
    for block in fenced_blocks(page):
        if block.language not in ("yaml", "yml"):
            continue
        try:
            node = yaml.compose(block.text)
            data = yaml.safe_load(block.text)
        except yaml.YAMLError as error:
            line = block.line + getattr(getattr(error, "problem_mark", None), "line", 0)
            yield f"{page.rel}:{line}: the yaml block does not parse: {error}"
            continue
        scope, whole = classify(page.rel, data, models)
        keys = list(key_paths(node, block.line)) if node is not None else []
        yield YamlBlock(block, data, keys, scope, whole)


def classify(page: str, data: Any, models: Models) -> tuple[str | None, bool]:
    """Whose file a block is, and whether it is a whole file (see the module docstring)."""
    if not isinstance(data, dict):
        return None, False
    if "name" in data and any(key in data for key in SELECTORS):
        kind = data.get("driver") or omb_driver_classes().get(data.get("driverClass"))
        return str(kind), True
    required = [row.path for row in models.rows["workload"] if row.required and "." not in row.path]
    if sum(field in data for field in required) >= 2:
        return "workload", True
    return page_scope(page, models), False


def key_paths(node: yaml.Node, first_line: int, prefix: str = "") -> Iterator[tuple[str, int]]:
    if isinstance(node, yaml.MappingNode):
        for key, value in node.value:
            path = f"{prefix}{key.value}"
            yield path, first_line + key.start_mark.line
            yield from key_paths(value, first_line, f"{path}.")
    elif isinstance(node, yaml.SequenceNode):
        for item in node.value:
            yield from key_paths(item, first_line, f"{prefix.removesuffix('.')}[].")


def resolves(path: str, rows: list[Any]) -> bool:
    """``path`` is a field of these rows, or lies below one that takes any keys."""
    path = path.removesuffix(".*")
    return any(
        row.path == path or (row.open and path.startswith((f"{row.path}.", f"{row.path}[]")))
        for row in rows
    )


def misplaced(path: str, scope: str, models: Models) -> str:
    """A hint: where the last part of ``path`` is a field, in this model or another."""
    leaf = path.rsplit(".", 1)[-1]
    here = [row.path for row in models.rows.get(scope, []) if row.path.rsplit(".", 1)[-1] == leaf]
    if here:
        return f" (it is `{'`, `'.join(here)}`)"
    there = [name for name, rows in models.rows.items() if any(r.path == path for r in rows)]
    return f" (a field of {', '.join(there)})" if there else ""


def key_problems(item: YamlBlock, models: Models) -> list[str]:
    """Each key of a workload or driver block that its model does not have at that level."""
    if item.scope not in models.rows:
        return []
    rows = models.rows[item.scope]
    return [
        f"{item.block.page}:{line}: `{path}` is not a field of a {item.scope} file"
        + misplaced(path, item.scope, models)
        for path, line in item.keys
        if not (item.whole and item.scope != "workload" and path in ("name", *SELECTORS))
        and not resolves(path, rows)
    ]


def file_text(item: YamlBlock) -> str | None:
    """The YAML to validate: the block, or a driver page's fragment in a minimal file."""
    if item.whole:
        return item.block.text
    if item.scope in (None, "workload"):
        return None
    base = minimal_driver_file(item.scope)
    return yaml.safe_dump(merged(base, item.data), sort_keys=False)


def minimal_driver_file(kind: str) -> dict[str, Any]:
    """The first file of ``configs/drivers`` for ``kind``: a file known to validate."""
    for path in sorted((REPO / "configs" / "drivers").glob("*.yaml")):
        data = yaml.safe_load(path.read_text())
        chosen = data.get("driver") or omb_driver_classes().get(data.get("driverClass"))
        if chosen == kind:
            return data
    return {"name": kind, "driver": kind}


def merged(base: Mapping[str, Any], over: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in over.items():
        both = isinstance(value, Mapping) and isinstance(base.get(key), Mapping)
        out[key] = merged(base[key], value) if both else value
    return out


def validation_problem(
    item: YamlBlock, text: str, folder: Path, certificates: Callable[[], Any]
) -> str | None:
    """``validate_file`` on ``text``, from the repository root (payload files are relative to
    the working directory, as users run ``loadgen``), as a ``file:line`` problem."""
    if item.block.page.startswith("docs/extending/") and item.scope not in driver_classes():
        return None  # a driver being written, not one installed
    text = CERT_PATH.sub(lambda m: stand_in_certificate(m.group(1), certificates), text)
    path = folder / f"block-{item.block.line}.yaml"
    path.write_text(text)
    with dummy_environment(text), contextlib.chdir(REPO):
        try:
            validate_file(path)
        except Exception as error:
            message = str(error).replace(f"{path}: ", "").replace(str(path), "the block")
            return f"{item.block.page}:{error_line(item, error)}: does not validate: {message}"
    return None


def stand_in_certificate(path: str, certificates: Callable[[], Any]) -> str:
    """A generated CA, client certificate or key for a certificate path missing here."""
    if Path(path).exists():
        return path
    certs = certificates()
    words = set(re.split(r"[-_.]", Path(path).stem.lower()))
    if Path(path).suffix == ".key" or "key" in words:
        return str(certs.client.key)
    return str(certs.ca if words & CA_WORDS else certs.client.cert)


@contextlib.contextmanager
def dummy_environment(text: str) -> Iterator[None]:
    """Each ``${NAME}`` without a default, unset here, set to a dummy for the validation."""
    names = {m.group(1) for m in ENV_REFERENCE.finditer(text) if m.group(2) is None}
    missing = {name for name in names if not os.environ.get(name)}
    os.environ.update({name: DUMMY_ENV.get(name, "placeholder") for name in missing})
    try:
        yield
    finally:
        for name in missing:
            os.environ.pop(name, None)


def error_line(item: YamlBlock, error: Exception) -> int:
    """The line of the key the error names (its longest known prefix), else the block's."""
    path = str(getattr(error, "path", "") or "")
    lines = [line for key, line in item.keys if path == key or path.startswith(f"{key}.")]
    return lines[-1] if lines else item.block.line


# --- 3. names in the prose -----------------------------------------------------------------------


def field_like(span: str) -> str | None:
    """The YAML-field-looking name a code span shows (``key: value`` spans: the key)."""
    key = re.match(r"([^\s:=]+):(\s|$)", span)
    text = key.group(1) if key else span
    if CAMEL.fullmatch(text):
        return text
    if not DOTTED.fullmatch(text) or text.startswith("loadgen."):
        return None
    segments = text.split(".")
    if any(segment[:1].isupper() for segment in segments):
        return None  # a Python class or a Java package's class
    return None if segments[-1] in FILE_SUFFIXES else text


def name_problem(name: str, models: Models) -> str | None:
    """Why ``name`` is no field and no other known name, or None."""
    if name in OTHER_VOCABULARIES:
        return None
    if "." not in name:
        leaves = {row.path.rsplit(".", 1)[-1] for rows in models.rows.values() for row in rows}
        known = name in leaves or name in models.known_names
        return None if known else f"`{name}` is no field of any model and no known name"
    scopes = models.roots.get(name.split(".")[0].removesuffix("[]"))
    if scopes:
        if any(resolves(name, models.rows[scope]) for scope in scopes):
            return None
        hints = "".join(misplaced(name, scope, models) for scope in scopes)
        return f"`{name}` does not resolve in {', '.join(scopes)}{hints}"
    if name == name.lower():
        return None  # a Kafka or Java property, a module
    segments = [segment.removesuffix("[]") for segment in name.split(".")]
    if any(path.endswith(name) for path in models.result_paths) or all(
        segment in models.known_names for segment in segments if segment != "*"
    ):
        return None
    return f"`{name}` is no field of any model and no result document path"


def page_scope(rel: str, models: Models) -> str | None:
    """The model a page's fragments and field tables belong to: the workload's or a driver's."""
    if rel == "docs/workloads.md":
        return "workload"
    kind = re.fullmatch(r"docs/drivers/(\w+)\.md", rel)
    return kind.group(1) if kind and kind.group(1) in models.rows else None


def field_tables(page: Page) -> Iterator[tuple[int, list[str]]]:
    """``(line, names)``: the code spans of the first cell of each row of a table whose first
    column is headed ``field``, outside the fenced blocks."""
    fenced = fenced_lines(page)
    header = False
    for number, line in enumerate(page.text.splitlines(), start=1):
        cells = line.strip().strip("|").split("|") if line.lstrip().startswith("|") else []
        if not cells or number in fenced:
            header = False
        elif re.fullmatch(r"\s*fields?\s*", cells[0], re.IGNORECASE):
            header = True
        elif header and not re.fullmatch(r"[\s:-]*", cells[0]):
            spans = [span.group(2).strip() for span in SPAN.finditer(cells[0])]
            yield number, [re.split(r":\s", span)[0] for span in spans]


def field_table_problems(page: Page, models: Models) -> list[str]:
    """On a driver's or the workload page, a field table's names are paths from the file's top."""
    scope = page_scope(page.rel, models)
    if scope is None:
        return []
    return [
        f"{page.rel}:{line}: `{name}` in the field table is not a field of a {scope} file"
        + misplaced(name, scope, models)
        for line, names in field_tables(page)
        for name in names
        if not resolves(name, models.rows[scope])
    ]


def page_name_problems(page: Page, models: Models) -> list[str]:
    problems = []
    for line, span in prose_spans(page):
        name = field_like(span)
        problem = name_problem(name, models) if name else None
        if problem:
            problems.append(f"{page.rel}:{line}: {problem}")
    for item in yaml_blocks(page, models):
        problems += [item] if isinstance(item, str) else key_problems(item, models)
    return problems + field_table_problems(page, models)


# --- the models and the other vocabularies -------------------------------------------------------


def field_reference() -> Any:
    """``docs/field_reference.py``, the generator of the field reference, as a module."""
    name = "field_reference"
    if name not in sys.modules:
        spec = importlib.util.spec_from_file_location(name, REPO / "docs" / f"{name}.py")
        module = importlib.util.module_from_spec(spec)
        sys.modules[name] = module
        spec.loader.exec_module(module)
    return sys.modules[name]


def model_rows() -> dict[str, list[Any]]:
    return field_reference().all_rows()


def result_paths(document: Mapping[str, Any], prefix: str = "") -> Iterator[str]:
    for key, value in document.items():
        yield f"{prefix}{key}"
        if isinstance(value, Mapping):
            yield from result_paths(value, f"{prefix}{key}.")
        elif isinstance(value, list) and value and isinstance(value[0], Mapping):
            yield from result_paths(value[0], f"{prefix}{key}.")


def code_names() -> set[str]:
    """The names the code writes (string constants) or calls (attributes, keywords)."""
    names: set[str] = set()
    for path in (REPO / "src").rglob("*.py"):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                if re.fullmatch(r"[A-Za-z_][\w.]*", node.value):
                    names.update(node.value.split("."))
            elif isinstance(node, ast.Attribute):
                names.add(node.attr)
            elif isinstance(node, ast.keyword) and node.arg:
                names.add(node.arg)
    return names
