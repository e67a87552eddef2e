"""Every error loadgen raises on purpose, and the exit code each one maps to.

The tree (the CLI maps it to exit codes in one place, :func:`exit_code_for`)::

    LoadgenError                      exit 1 unless a subclass says otherwise
    ├── ConfigError(file, path, value, allowed)   exit 2  bad YAML, field, flag or value
    ├── MissingExtra(package, extra)              exit 2  an optional dependency is not installed
    ├── BrokerUnreachable(address, broker)        exit 3  nothing answers at the address tried
    ├── BrokerLoginRefused(broker, address, user) exit 4  it answered and refused the credentials
    ├── BrokerTlsFailed(broker, address)          exit 7  the TLS handshake failed (trust, expiry)
    ├── DriverError(broker, cause)                exit 1  the broker answered, but with an error
    ├── LocalBrokerError(kind, cause)             exit 3  a local broker (``loadgen brokers``,
    │   │                                                 the pytest fixtures) did not come up
    │   └── LocalBrokerSetupError(kind, cause)    exit 2  it cannot start as asked: a tool it
    │                                                     needs is missing (Java, Maven), its
    │                                                     port is taken, a distribution is not one
    ├── WorkerError(url, detail)                  exit 1  a remote worker failed (its own exit
    │   │                                                 code when it reported one)
    │   ├── WorkerUnreachable(url)                exit 3  nothing answered at the worker's URL
    │   ├── WorkerRefused(url)                    exit 2  the worker refused the token (HTTP 401)
    │   └── WorkerLost(url)                       exit 1  it answered before, then stopped mid-run
    ├── RunAborted(reason)                        exit 130 (interrupted) or 1; the partial result
    │                                                      has been written before this is raised
    └── NoPlaceLeft(asked, reason)                exit 6  no directory (asked for or fallback)
                                                          took the result: it was printed instead

Exit 5 (:data:`EXIT_FALLBACK`) is no error: the run went well, but its files are in a fallback
directory (:mod:`loadgen.result_files.destination`), not where ``-o`` asked. Both 5 and 6 are
used only when the run would otherwise exit 0: a run that failed or was interrupted keeps its 1
or 130.

A run cut short by an error keeps what it measured; the error's ``stop_reason`` (``error``
unless a subclass says otherwise) becomes the result's ``stopReason``.

Messages are written for the person at the terminal: they name the file, the field, the value
and what would have been accepted, so that nobody needs a traceback to fix their input.
"""

from __future__ import annotations

from collections.abc import Sequence

from loadgen.base.redaction import redact_at


class LoadgenError(Exception):
    """Base of every deliberate loadgen error."""

    exit_code = 1
    stop_reason = "error"


class ConfigError(LoadgenError):
    """Bad input: a config file, a field in it, or a command-line value.

    ``path`` is the dotted field path inside the file (``producerConfig.linger.ms``), ``allowed``
    what would have been accepted (a list of values, or a phrase such as ``"a positive integer"``).
    """

    exit_code = 2

    def __init__(
        self,
        message: str,
        *,
        file: str | None = None,
        path: str | None = None,
        value: object = None,
        allowed: str | Sequence[str] | None = None,
    ) -> None:
        self.file = file
        self.path = path
        self.value = value
        self.allowed = allowed
        super().__init__(message)

    def __str__(self) -> str:
        where = ": ".join(part for part in (self.file, self.path) if part)
        message = str(self.args[0])
        text = f"{where}: {message}" if where else message
        notes = []
        if self.value is not None and str(self.value) not in message:
            shown = repr(redact_at(self.path or "", self.value))
            notes.append(f"got {shown if len(shown) <= 80 else shown[:77] + '...'}")
        if self.allowed is not None:
            allowed = self.allowed if isinstance(self.allowed, str) else ", ".join(self.allowed)
            notes.append(f"allowed: {allowed}")
        return f"{text} ({'; '.join(notes)})" if notes else text


class MissingExtra(LoadgenError):
    """A dependency is missing; the message carries the install command, run from the clone
    (loadgen is on no package index). ``extra`` is None for one the base install brings."""

    exit_code = 2

    def __init__(self, package: str, extra: str | None) -> None:
        self.package = package
        self.extra = extra
        target = f"'.[{extra}]'" if extra else "."
        super().__init__(
            f"the '{package}' package is not installed; install it from the loadgen clone "
            f"with: pip install -e {target}"
        )


class BrokerUnreachable(LoadgenError):
    """Nothing answered at ``address`` within the connect deadline."""

    exit_code = 3

    def __init__(self, broker: str, address: str, detail: str = "") -> None:
        self.broker = broker
        self.address = address
        suffix = f": {detail}" if detail else ""
        super().__init__(f"{broker} broker unreachable at {address}{suffix}")


class BrokerLoginRefused(LoadgenError):
    """The broker refused the credentials (a SASL login, a token). Distinct from unreachable:
    retrying or waiting cannot help, the driver file must change. Names the user, never the
    secret."""

    exit_code = 4

    def __init__(self, broker: str, address: str, user: str | None, detail: str = "") -> None:
        self.broker = broker
        self.address = address
        self.user = user
        who = f"user {user!r}" if user else "the credentials given"
        suffix = f": {detail}" if detail else ""
        super().__init__(f"{broker} broker at {address} refused the login of {who}{suffix}")


class BrokerTlsFailed(LoadgenError):
    """The address answered, but the TLS handshake failed: its certificate is not trusted by
    the CA given, has expired, or names another host. Distinct from unreachable: the broker is
    there, the trust settings (or its certificate) must change."""

    exit_code = 7

    def __init__(self, broker: str, address: str, detail: str = "") -> None:
        self.broker = broker
        self.address = address
        suffix = f": {detail}" if detail else ""
        super().__init__(f"{broker} broker at {address}: TLS handshake failed{suffix}")


class DriverError(LoadgenError):
    """The broker or its client answered with an error loadgen cannot work around."""

    def __init__(self, broker: str, cause: str) -> None:
        self.broker = broker
        self.cause = cause
        super().__init__(f"{broker}: {cause}")


class LocalBrokerError(LoadgenError):
    """A broker (or Spark cluster) loadgen starts on this host did not come up: for the run
    that needed it, as unreachable as a remote one."""

    exit_code = 3

    def __init__(self, kind: str, cause: str) -> None:
        self.kind = kind
        self.cause = cause
        super().__init__(f"local {kind}: {cause}")


class LocalBrokerSetupError(LocalBrokerError):
    """A local broker cannot start as asked, before anything runs: ``cause`` names what is
    missing or wrong (Java, Maven, a taken port, a folder that is no distribution) and what to
    install or set instead."""

    exit_code = 2


class WorkerError(LoadgenError):
    """A worker of a multi-process or distributed run failed; ``url`` names which.

    ``exit_code`` is the one the worker reported for its own error (2 for a config error it
    found, 3 for a broker it could not reach), 1 when it reported none.
    """

    def __init__(self, url: str, detail: str, exit_code: int = 1) -> None:
        self.url = url
        self.detail = detail
        self.exit_code = exit_code
        super().__init__(f"worker {url}: {detail}")


class WorkerUnreachable(WorkerError):
    """Nothing answered at the worker's URL within the connect deadline; ``refused`` when its
    host refused the connection (nothing listens on that port)."""

    def __init__(self, url: str, detail: str, *, refused: bool = False) -> None:
        self.refused = refused
        super().__init__(url, f"unreachable: {detail}", exit_code=3)


class WorkerRefused(WorkerError):
    """The worker answered 401: the token is missing or wrong."""

    def __init__(self, url: str) -> None:
        super().__init__(
            url,
            "refused the token (HTTP 401); give the worker's token with --token or LOADGEN_TOKEN",
            exit_code=2,
        )


class WorkerLost(WorkerError):
    """A worker stopped answering during a run (crashed, killed, network gone)."""

    stop_reason = "worker-lost"

    def __init__(self, url: str, cause: str) -> None:
        self.cause = cause
        super().__init__(url, f"lost during the run: {cause}")


class ConsumerChangesNeedOneWorker(ConfigError):
    """``consumerChanges`` are made by one in-process worker, not split over several."""

    def __init__(self, workers: int) -> None:
        super().__init__(
            f"consumers join and leave on one in-process worker, not {workers} workers or "
            "processes",
            path="consumerChanges",
            allowed="no --workers, and --processes 1",
        )


class RunAborted(LoadgenError):
    """A run stopped before its end; the partial result was already written to ``result_path``."""

    def __init__(self, reason: str, detail: str, result_path: str | None = None) -> None:
        self.reason = reason
        self.result_path = result_path
        self.partial: object = None
        """The Python API's :class:`loadgen.running.result.Result` of what was measured, if any."""
        self.exit_code = 130 if reason == "interrupted" else 1
        where = f"; partial result written to {result_path}" if result_path else ""
        super().__init__(f"run {reason}: {detail}{where}")


class NoPlaceLeft(LoadgenError):
    """The run's files could be written in no place: neither ``asked`` nor any fallback."""

    exit_code = 6

    def __init__(self, asked: object, reason: str) -> None:
        self.asked = asked
        self.reason = reason
        super().__init__(f"no directory takes the run's files (asked for {asked}: {reason})")


EXIT_FALLBACK = 5
"""The run's files were written, to a fallback directory instead of the one asked for."""


def exit_code_for(error: BaseException) -> int:
    """The process exit code for ``error`` (2 bad input, 3 unreachable, 4 login refused, 7 TLS
    failed, 130 interrupted, else 1)."""
    if isinstance(error, LoadgenError):
        return error.exit_code
    if isinstance(error, KeyboardInterrupt):
        return 130
    return 1
