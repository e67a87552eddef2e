"""The Helm chart's appVersion is loadgen's package version: a release that moves one and not the
other fails here (the image tag defaults to the appVersion, so the chart would deploy the wrong
loadgen)."""

from pathlib import Path

import yaml

from loadgen.base.version import __version__

CHART = Path(__file__).resolve().parents[2] / "deploy/helm/loadgen/Chart.yaml"


def test_the_charts_app_version_is_the_package_version():
    assert yaml.safe_load(CHART.read_text())["appVersion"] == __version__
