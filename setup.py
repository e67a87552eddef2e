"""The one compiled part, optional: without a C compiler the package installs pure Python."""

from setuptools import Extension, setup

setup(
    ext_modules=[Extension("loadgen._hotpath", ["src/loadgen/_hotpath.c"], optional=True)],
)
