"""Every option of the run-like commands can also be set as ``LOADGEN_<OPTION>``.

Why: container and CI users configure through the environment (``docker run -e``, a CI job's
``env:``); this spares them a wrapper script that turns variables into flags. Precedence is
click's: a flag beats the variable, which beats the option's default; where that default means
"what the workload file says" (``--duration``), the variable beats the file.

It is done once, over the declared commands, so an option added later gets its variable without
anyone having to remember: ``LOADGEN_`` + the option's long name in capitals, dashes as
underscores (``--stats-interval`` -> ``LOADGEN_STATS_INTERVAL``; the flag's name, not the Python
parameter's, since the flag is what users know). A variable an option already names
(``LOADGEN_TOKEN``) is kept. An empty variable counts as unset. A repeatable option takes one
value per line, since its values may hold spaces (shell commands, SLO expressions). A bad value
fails as the flag would (exit 2), and the message names the variable it came from.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Sequence
from types import TracebackType

import click

from loadgen.base.errors import ConfigError

PREFIX = "LOADGEN_"
_FROM_ENVIRONMENT = "loadgen.cli.env"
"""``ctx.meta`` key: {option name: the variable its value came from} for the running command."""


def variable_for(option: click.Option) -> str:
    """``LOADGEN_`` + the option's (first) long name: ``--stats-interval`` ->
    ``LOADGEN_STATS_INTERVAL``."""
    longs = [name[2:] for name in option.opts if name.startswith("--")]
    return PREFIX + (longs[0] if longs else str(option.name)).upper().replace("-", "_")


def read_from_environment(*commands: click.Command) -> None:
    """Give every visible option of ``commands`` its variable, shown in ``--help``."""
    for command in commands:
        command.context_class = _Context
        for param in command.params:
            if isinstance(param, click.Option) and not param.hidden:
                param.envvar = param.envvar or variable_for(param)
                param.show_envvar = True
                param.value_from_envvar = functools.partial(  # type: ignore[method-assign]
                    _value_from_envvar, param, param.value_from_envvar
                )


def _value_from_envvar(
    option: click.Option, read: Callable[[click.Context], object], ctx: click.Context
) -> object:
    """Click calls this only when the flag was not given; note which variable answered."""
    if option.multiple:
        text = option.resolve_envvar_value(ctx)
        value: object = None if text is None else _lines(text)
    else:
        value = read(ctx)
    if value is not None:
        ctx.meta.setdefault(_FROM_ENVIRONMENT, {})[option.name] = str(option.envvar)
    return value


def _lines(text: str) -> list[str]:
    return [line.strip() for line in text.splitlines() if line.strip()]


class _Context(click.Context):
    """A command's context that names the variable in an error about a value read from it.

    Both kinds of error pass through here: a value click or an option's callback refused while
    parsing, and a ConfigError the command raised about an option (``path="--duration"``).
    """

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc_value: BaseException | None,
        tb: TracebackType | None,
    ) -> bool | None:
        if exc_value is not None:
            _name_the_variable(exc_value, self.meta.get(_FROM_ENVIRONMENT, {}), self.command)
        return super().__exit__(exc_type, exc_value, tb)


def _name_the_variable(
    error: BaseException, from_environment: dict[str, str], command: click.Command
) -> None:
    """Add ``(from LOADGEN_X)`` to the option an error names, once, if its value came from there."""
    if isinstance(error, click.BadParameter) and error.param and error.param_hint is None:
        # click's own hint names the variable even when the bad value came from the flag
        variable = from_environment.get(str(error.param.name))
        hint = " / ".join(f"'{name}'" for name in error.param.opts)
        error.param_hint = f"{hint} (from {variable})" if variable else hint
    elif isinstance(error, ConfigError) and error.path and "(from " not in error.path:
        variables = _variables_named(error.path.split(), from_environment, command.params)
        if variables:
            error.path = f"{error.path} (from {', '.join(variables)})"


def _variables_named(
    names: Sequence[str], from_environment: dict[str, str], params: Sequence[click.Parameter]
) -> list[str]:
    """The variables behind the options among ``names`` (``--quiet --plain``) that had one."""
    return [
        from_environment[str(param.name)]
        for param in params
        if param.name in from_environment and set(param.opts) & set(names)
    ]
