"""`tanksim app` in a real headless browser: Debian's chromium (installed by .ci/install-browser.sh) driven by
playwright.  Watching: the page loads with the full-width board, Step advances the game-turn counter, hover shows a
tank's state.  Playing (the README's "Play against the AI"): one human move and one shot by clicking the board.
Screenshots go under test-artifacts/ (gitignored).  Skipped only when /usr/bin/chromium is absent."""
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


def _start(tmp_path, *args):
    port = _free_port()
    env = {**os.environ, "SOLARA_TELEMETRY_MIXPANEL_ENABLE": "False"}
    proc = subprocess.Popen(tanksim_cmd() + ["app", "default", "--port", str(port), "--host", "127.0.0.1",
                                             "--seed", "3", *args],
                            cwd=tmp_path, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    url = f"http://127.0.0.1:{port}/"
    try:
        _wait_http(url, proc, 60)
    except BaseException:
        _stop(proc)
        raise
    return proc, url


def _stop(proc):
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


@pytest.fixture
def app_server(tmp_path):
    proc, url = _start(tmp_path)
    try:
        yield url
    finally:
        _stop(proc)


@pytest.fixture
def play_server(tmp_path):
    proc, url = _start(tmp_path, "--play", "Soviets")
    try:
        yield url
    finally:
        _stop(proc)


def _browser(pw):
    return pw.chromium.launch(executable_path=str(CHROMIUM), args=CHROMIUM_ARGS)


def test_app_page_steps_in_a_headless_browser(app_server):
    sync_api = pytest.importorskip("playwright.sync_api")
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_api.sync_playwright() as pw:
        browser = _browser(pw)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1000})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(app_server, wait_until="domcontentloaded")
            counter = page.locator(".tanksim-counter")
            counter.wait_for(timeout=30_000)
            assert re.match(r"Turn 0 of 15 · activation 0\b", counter.inner_text())
            assert "PAGE 0" not in page.content()
            board = page.locator(".tanksim-board svg")
            board.wait_for(timeout=30_000)
            assert page.locator(".tanksim-board polygon.hex").count() == 625
            assert board.bounding_box()["width"] > 600  # the board fills its column (was a 360 px picture)
            step = page.get_by_role("button", name="Step", exact=True)
            step.click()
            sync_api.expect(counter).to_contain_text(re.compile(r"Turn 1 of 15 · activation 1\b"), timeout=15_000)
            # hover shows the tank's state
            page.locator('.tanksim-board g.tank[data-tank="5"]').hover()
            sync_api.expect(page.locator(".tanksim-hover")).to_contain_text("Panther-1 (Germans, panther)")
            assert page.locator(".tanksim-legend").inner_text().count("side ") == 2
            shot = ARTIFACTS / "app_watching.png"
            page.screenshot(path=str(shot), full_page=True)
            assert shot.stat().st_size > 20_000
            assert not errors, errors
        finally:
            browser.close()


def test_play_one_side_of_the_default_battle(play_server):
    """The README's "Play against the AI": you take the Soviets, choose a tank by clicking it, activate it, move
    by clicking a highlighted hex, and fire by clicking a highlighted enemy; the AI answers for the Germans."""
    readme = (ROOT / "README.md").read_text()
    assert "tanksim app default --play Soviets" in readme and "T34-1: move and fire" in readme
    sync_api = pytest.importorskip("playwright.sync_api")
    expect = sync_api.expect
    ARTIFACTS.mkdir(exist_ok=True)
    with sync_api.sync_playwright() as pw:
        browser = _browser(pw)
        try:
            page = browser.new_page(viewport={"width": 1500, "height": 1100})
            errors: list[str] = []
            page.on("pageerror", lambda exc: errors.append(str(exc)))
            page.goto(play_server, wait_until="domcontentloaded")
            counter = page.locator(".tanksim-counter")
            counter.wait_for(timeout=30_000)
            expect(counter).to_contain_text("your move (Soviets)", timeout=15_000)
            # choose T34-1 on the board: the panel then offers only its modes
            choices = page.locator(".tanksim-choice")
            expect(choices).to_have_count(25, timeout=15_000)  # 5 tanks x 5 modes before choosing
            page.locator('.tanksim-board g.tank[data-tank="0"]').click()
            expect(choices).to_have_count(5, timeout=15_000)
            assert all(t.startswith("T34-1:") for t in choices.all_inner_texts())
            # hovering an enemy now shows the exact odds of T34-1's shot at it
            page.locator('.tanksim-board g.tank[data-tank="5"]').hover()
            expect(page.locator(".tanksim-hover")).to_contain_text(re.compile(r"shot from T34-1: hit \d+/\d+"))
            page.get_by_role("button", name="T34-1: move and fire").click()
            expect(counter).to_contain_text("activation 1 ", timeout=15_000)
            # one human move: a highlighted hex next to T34-1 (the legal steps)
            steps = page.locator(".tanksim-board polygon.legal-step")
            expect(steps.first).to_be_attached(timeout=15_000)
            assert sorted(steps.evaluate_all("els => els.map(e => e.dataset.hex)")) == ["2,7", "2,8"]
            before = counter.inner_text()
            steps.first.click(force=True)
            expect(counter).not_to_have_text(before, timeout=15_000)
            expect(page.locator('.tanksim-board g.tank[data-tank="0"]')).to_have_attribute("data-hex", "2,7")
            # one shot: click a highlighted enemy
            target = page.locator(".tanksim-board g.tank.legal-fire").first
            expect(target).to_be_attached(timeout=15_000)
            target.click(force=True)
            rows = page.locator(".tanksim-shotlog tr.shot-row")
            expect(rows.first).to_be_attached(timeout=15_000)
            assert any("T34-1" in r and "natural_d10=" in r for r in rows.all_inner_texts())
            expect(counter).to_contain_text("your move (Soviets)", timeout=15_000)
            shot = ARTIFACTS / "app_playing.png"
            page.screenshot(path=str(shot), full_page=True)
            assert not errors, errors
        finally:
            browser.close()
