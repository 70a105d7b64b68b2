"""The HTML memory report in a real browser: headless Chromium driven over the DevTools protocol (a pipe).

The page must render without console errors or exceptions, show the peak marker and one table row per
buffer, sort when a header is clicked, and show the hover details; a screenshot is saved for a person to look
at. A page with a deliberate error checks that errors are seen at all. Skips when Chromium is missing (CI
installs it: ``apt-get install -y chromium``).
"""

from __future__ import annotations

import base64
import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest

import xlashapes as xs
from xlashapes.memory import memory_report
from xlashapes.memory.pictures import report_html, timeline, timeline_svg

DATA = Path(__file__).parent / "data" / "memory"
BROWSER = shutil.which("chromium") or shutil.which("chromium-browser") or shutil.which("google-chrome")
FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
         "--disable-background-networking", "--disable-component-update", "--disable-sync",
         "--remote-debugging-pipe", "--window-size=1200,900"]


class Browser:
    """A headless Chromium spoken to over --remote-debugging-pipe (fd 3 in, fd 4 out; JSON messages ending in NUL)."""

    def __init__(self, profile: str) -> None:
        to_browser_r, self._to_browser = os.pipe()
        self._from_browser, from_browser_w = os.pipe()
        assert BROWSER is not None

        def as_fds_3_and_4() -> None:  # in the child: the protocol's fixed descriptors
            high_in, high_out = os.dup(to_browser_r), os.dup(from_browser_w)
            os.dup2(high_in, 3)
            os.dup2(high_out, 4)

        self.process = subprocess.Popen(
            [BROWSER, *FLAGS, f"--user-data-dir={profile}", "about:blank"],
            pass_fds=(3, 4, to_browser_r, from_browser_w), stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL, preexec_fn=as_fds_3_and_4)
        os.close(to_browser_r)
        os.close(from_browser_w)
        self._buffer = b""
        self._next = 0
        self.events: list[dict[str, Any]] = []

    def send(self, method: str, session: str | None = None, **params: Any) -> dict[str, Any]:
        self._next += 1
        message: dict[str, Any] = {"id": self._next, "method": method, "params": params}
        if session:
            message["sessionId"] = session
        os.write(self._to_browser, json.dumps(message).encode() + b"\0")
        while True:
            reply = self._read()
            if reply.get("id") == self._next:
                if "error" in reply:
                    raise RuntimeError(reply["error"])
                result: dict[str, Any] = reply.get("result", {})
                return result
            self.events.append(reply)

    def wait_for(self, method: str) -> dict[str, Any]:
        for event in self.events:
            if event.get("method") == method:
                self.events.remove(event)
                return event
        while True:
            event = self._read()
            if event.get("method") == method:
                return event
            self.events.append(event)

    def _read(self) -> dict[str, Any]:
        while b"\0" not in self._buffer:
            chunk = os.read(self._from_browser, 1 << 16)
            if not chunk:
                raise RuntimeError("the browser closed the pipe")
            self._buffer += chunk
        message, self._buffer = self._buffer.split(b"\0", 1)
        parsed: dict[str, Any] = json.loads(message)
        return parsed

    def close(self) -> None:
        try:
            os.write(self._to_browser, json.dumps({"id": 0, "method": "Browser.close"}).encode() + b"\0")
            self.process.wait(timeout=5)
        except (OSError, subprocess.TimeoutExpired):
            self.process.kill()
            self.process.wait()
        os.close(self._to_browser)
        os.close(self._from_browser)


def open_page(browser: Browser, url: str) -> str:
    target = browser.send("Target.createTarget", url="about:blank")["targetId"]
    session: str = browser.send("Target.attachToTarget", targetId=target, flatten=True)["sessionId"]
    for domain in ("Page", "Runtime", "Log"):
        browser.send(f"{domain}.enable", session)
    browser.send("Page.navigate", session, url=url)
    browser.wait_for("Page.loadEventFired")
    return session


def problems(browser: Browser, session: str) -> list[str]:
    """Console errors and uncaught exceptions reported for ``session`` so far."""
    browser.send("Runtime.evaluate", session, expression="1")  # flush events that arrived before this point
    found = []
    for event in browser.events:
        if event.get("sessionId") != session:
            continue
        params = event.get("params", {})
        if event.get("method") == "Runtime.exceptionThrown":
            found.append(params["exceptionDetails"].get("text", "exception"))
        elif event.get("method") == "Runtime.consoleAPICalled" and params.get("type") == "error":
            found.append(str(params.get("args")))
        elif event.get("method") == "Log.entryAdded" and params["entry"].get("level") == "error":
            found.append(params["entry"].get("text", ""))
    return found


def evaluate(browser: Browser, session: str, expression: str) -> Any:
    result = browser.send("Runtime.evaluate", session, expression=expression, returnByValue=True)["result"]
    return result.get("value")  # undefined has none


@pytest.mark.skipif(BROWSER is None, reason="chromium is not installed (apt-get install -y chromium)")
def test_html_report_renders_in_a_browser(tmp_path: Path) -> None:
    report = memory_report(xs.parse_hlo_module((DATA / "transformer_train.hlo").read_text()))
    page = tmp_path / "report.html"
    page.write_text(report_html(report))
    broken = tmp_path / "broken.html"
    broken.write_text("<html><body><script>undefinedFunction();</script></body></html>")
    browser = Browser(tempfile.mkdtemp(dir=tmp_path))
    try:
        session = open_page(browser, page.as_uri())
        assert problems(browser, session) == []
        assert evaluate(browser, session, "document.querySelectorAll('#peak-marker').length") == 1
        rows = evaluate(browser, session, "document.querySelectorAll('#buffers tbody tr').length")
        assert rows == len(report.buffers)
        assert evaluate(browser, session, "document.querySelectorAll('#buffers tr.peak').length") == len(
            report.live_at_peak)
        first = evaluate(browser, session, "document.querySelector('#buffers tbody td').textContent")
        assert first == f"{max(b.physical_bytes for b in report.buffers):,}"
        evaluate(browser, session, "document.querySelectorAll('#buffers th')[3].click()")  # sort by instruction
        names = evaluate(browser, session, "[...document.querySelectorAll('#buffers tbody tr')]"
                                           ".map(r => r.children[3].textContent)")
        assert names == sorted(names, reverse=True) or names == sorted(names)
        evaluate(browser, session, "document.querySelector('#buffers tbody tr').dispatchEvent("
                                   "new MouseEvent('mousemove', {clientX: 50, clientY: 300, bubbles: true}))")
        tip = evaluate(browser, session, "document.getElementById('tip').style.display + '|' + "
                                         "document.getElementById('tip').textContent")
        assert tip.startswith("block|") and " = " in tip
        evaluate(browser, session, "document.getElementById('tip').style.display = 'none'")
        shot = browser.send("Page.captureScreenshot", session, format="png")["data"]
        picture = Path(os.environ.get("XLASHAPES_SCREENSHOT_DIR", tmp_path)) / "memory_report.png"
        picture.write_bytes(base64.b64decode(shot))
        assert picture.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and picture.stat().st_size > 10_000
        assert problems(browser, session) == []
        control = open_page(browser, broken.as_uri())
        assert problems(browser, control), "a page with an error must report it"
    finally:
        browser.close()


def test_timeline_bands_stack_to_the_live_bytes() -> None:
    report = memory_report(xs.parse_hlo_module((DATA / "large_temporaries.hlo").read_text()))
    data = timeline(report, top=3)
    base = report.arguments_bytes + report.outputs_bytes - report.alias_bytes
    assert data.bands[0].upper == (base,) * len(data.times)
    for k in range(1, len(data.bands)):
        assert data.bands[k].lower == data.bands[k - 1].upper
    for i, t in enumerate(data.times):
        assert data.bands[-1].upper[i] == base + report.temp_timeline[t]
    assert data.peak_time in data.times
    svg = timeline_svg(report)
    assert svg.count("<polygon") >= 3 and 'id="peak-marker"' in svg and svg.rstrip().endswith("</svg>")


def test_timeline_samples_long_schedules() -> None:
    text = (DATA / "many_small.hlo").read_text()
    report = memory_report(xs.parse_hlo_module(text))
    import xlashapes.memory.pictures as pictures

    old = pictures.MAX_POINTS
    pictures.MAX_POINTS = 50
    try:
        data = timeline(report)
    finally:
        pictures.MAX_POINTS = old
    assert len(data.times) <= 52 and report.peak_time in data.times
    assert max(data.bands[-1].upper) == max(report.temp_timeline) + report.arguments_bytes + report.outputs_bytes
