"""The HTML report as a browser shows it: headless Chromium loads it, offline, without errors."""

import shutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from matplotlib import image

from loadgen.pytest_plugin.require import unavailable

pytestmark = pytest.mark.e2e

REPO = Path(__file__).resolve().parents[2]
CHART_IDS = ("chart-throughput", "chart-publish-latency", "chart-e2e-latency", "chart-distribution")
WORKLOAD = """\
name: {name}
topics: 1
partitionsPerTopic: 2
messageSize: 512
subscriptionsPerTopic: {subscriptions}
consumerPerSubscription: 1
producersPerTopic: 1
producerRate: 2000
testDurationMinutes: 1
warmupDurationMinutes: 0
"""


def loadgen(*args, cwd):
    done = subprocess.run(
        [sys.executable, "-m", "loadgen", *args],
        cwd=cwd,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout.strip().splitlines()


@pytest.fixture(scope="module")
def reports(tmp_path_factory):
    """One report of a single result and one comparing it with a producer-only run."""
    work = tmp_path_factory.mktemp("report")
    for name, subscriptions in (("tailing", 1), ("producer-only", 0)):
        (work / f"{name}.yaml").write_text(WORKLOAD.format(name=name, subscriptions=subscriptions))
    driver = str(REPO / "configs/drivers/memory.yaml")
    options = ["--duration", "3s", "--warmup", "0", "--stats-interval", "1s", "-o", "results"]
    loadgen("run", "-q", "-d", driver, "tailing.yaml", "producer-only.yaml", *options, cwd=work)
    tailing, producer_only = (
        next(work.glob(f"results/{name}-Memory-*.json")) for name in ("tailing", "producer-only")
    )
    [single] = loadgen("report", str(tailing), cwd=work)
    [comparison] = loadgen("report", str(tailing), str(producer_only), "-o", "both.html", cwd=work)
    return {"single": Path(single), "comparison": work / comparison}


def chromium(*args, profile):
    path = shutil.which("chromium")
    if path is None:
        unavailable("chromium is not installed (apt-get install chromium)")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", f"--user-data-dir={profile}"]
    flags += ["--enable-logging=stderr", "--v=0"]  # page console messages go to stderr
    return subprocess.run([path, *flags, *args], capture_output=True, text=True, timeout=120)


def page_errors(stderr):
    """Console output of the page (there is no script, so any is an error) and script errors."""
    return [line for line in stderr.splitlines() if ":CONSOLE" in line or "Uncaught" in line]


@pytest.mark.parametrize("which", ["single", "comparison"])
def test_the_browser_shows_every_chart_without_errors(reports, which, tmp_path):
    report = reports[which]
    done = chromium("--dump-dom", report.as_uri(), profile=tmp_path / "profile")
    assert done.returncode == 0, done.stderr[-2000:]
    dom = done.stdout
    for chart_id in CHART_IDS:
        start = dom.index(f'id="{chart_id}"')
        assert "<svg" in dom[start : dom.index("</figure>", start)], chart_id
    assert page_errors(done.stderr) == []


@pytest.mark.parametrize("which", ["single", "comparison"])
def test_the_screenshot_shows_a_drawn_page(reports, which, tmp_path):
    shot = tmp_path / f"{which}.png"
    done = chromium(
        f"--screenshot={shot}",
        "--window-size=1280,4000",
        reports[which].as_uri(),
        profile=tmp_path / "profile",
    )
    assert done.returncode == 0, done.stderr[-2000:]
    assert shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    pixels = image.imread(shot)
    assert pixels.shape[:2] == (4000, 1280)
    assert len(np.unique(pixels.reshape(-1, pixels.shape[-1]), axis=0)) > 50  # not one flat colour
    assert page_errors(done.stderr) == []
