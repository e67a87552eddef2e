"""A third-party driver: loadgen's memory driver under another name.

It declares everything the engine asks of a driver class (a URL scheme, an OMB driverClass,
its client distribution: this package itself) and inherits the rest.
"""

from loadgen_drivers.memory import Driver as MemoryDriver


class Driver(MemoryDriver):
    display_name = "Echo"
    url_schemes = ("echo",)
    omb_driver_classes = ("org.example.echo.EchoBenchmarkDriver",)
    client_distributions = ("loadgen-echo",)
