"""`tanksim app` in a real headless browser: Debian's chromium (installed by .ci/install-browser.sh) driven by
playwright.  The page loads, pressing Step advances the turn / activation counter, and a screenshot is saved under
test-artifacts/ (gitignored).  Skipped only when /usr/bin/chromium is absent."""
from __future__ import annotations

import os
import re
import socket
import subprocess
import time
import urllib.request
from pathlib import Path

import pytest

from conftest import ROOT, tanksim_cmd

CHROMIUM = Path("/usr/bin/chromium")
CHROMIUM_ARGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
                 "--disable-component-update", "--no-first-run", "--disable-sync"]
ARTIFACTS = ROOT / "test-artifacts"

pytestmark = [
    pytest.mark.skipif(not CHROMIUM.exists(), reason="needs Debian's chromium at /usr/bin/chromium "
                       "(run .ci/install-browser.sh)"),
    pytest.mark.timeout(120),
]


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _wait_http(url: str, proc: subprocess.Popen, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise AssertionError(f"tanksim app exited with {proc.returncode}: {proc.stdout.read()}")
        try:
            with urllib.request.urlopen(url, timeout=2) as r:
                if r.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise AssertionError(f"tanksim app did not answer at {url} within {timeout} s")


@pytest.fixture
def app_server(tmp_path):
    port = _free_port()
    env = {**os.environ, "SOLARA_TELEMETRY_MIXPANEL_ENABLE": "False"}
    proc = subprocess.Popen(tanksim_cmd() + ["app", "default", "--port", str(port), "--host", "127.0.0.1",
                                             "--seed", "3"],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        url = f"http://127.0.0.1:{port}/"
        _wait_http(url, proc, 45)
        yield url
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=10)


def test_app_page_steps_in_a_headless_browser(app_server):
    sync_api = pytest.importorskip("playwright.sync_api")
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_api.sync_playwright() as pw:
        browser = pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(app_server, wait_until="domcontentloaded")
            counter = page.locator(".tanksim-counter")
            counter.wait_for(timeout=30_000)
            assert re.match(r"Turn 0 of 15 · activation 0\b", counter.inner_text())
            assert page.locator("img").count() >= 2  # the board and the charts
            step = page.get_by_role("button", name="Step")
            step.click()
            sync_api.expect(counter).to_contain_text(re.compile(r"Turn 1 of 15 · activation 1\b"), timeout=15_000)
            step.click()
            sync_api.expect(counter).to_contain_text(re.compile(r"activation 2\b"), timeout=15_000)
            page.wait_for_timeout(500)  # let the board image arrive
            shot = ARTIFACTS / "app_after_two_steps.png"
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 20_000
            assert not errors, errors
        finally:
            browser.close()
