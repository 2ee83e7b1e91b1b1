"""A headless Chromium driven through the DevTools protocol (tests and screenshots only).

:class:`Browser` starts Debian's ``chromium`` (or ``chromium-browser``, ``google-chrome``) with
``--remote-debugging-port=0``, connects to its page over a websocket (``websockets``, in the
``test`` extra) and offers :meth:`Browser.open` (file URL, network blocked so a page that is not
self-contained fails), :meth:`Browser.evaluate`, :meth:`Browser.page_report` (per plot: data
points drawn, axis titles, overlapping labels) and :meth:`Browser.screenshot`.
:func:`unavailable` says in one line why no browser can run here (None when one can).
"""

from __future__ import annotations

import base64
import contextlib
import json
import os
import shutil
import subprocess
import tempfile
import time
import urllib.request
from pathlib import Path

CANDIDATES = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")

FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--hide-scrollbars",
    "--remote-debugging-port=0",
    "--remote-allow-origins=*",
)


def find_chromium() -> str | None:
    env = os.environ.get("FEDSEL_CHROMIUM")
    if env:
        return env if shutil.which(env) or Path(env).is_file() else None
    return next((p for p in map(shutil.which, CANDIDATES) if p), None)


def unavailable() -> str | None:
    """Why the browser tests cannot run here, in one line (None when they can)."""
    try:
        import websockets.sync.client  # noqa: F401
    except ImportError:
        return "the websockets package is not installed (pip install -e '.[test]')"
    if find_chromium() is None:
        return "no chromium on PATH (as root: apt-get install -y chromium; make test does this)"
    return None


# Per plot: points drawn, axis titles, and pairs of labels whose boxes overlap.
_PAGE_JS = r"""
(() => {
  const box = e => { const r = e.getBoundingClientRect(); return {x: r.left, y: r.top, w: r.width, h: r.height}; };
  const labelSel = ['.legendtext', '.g-gtitle text', '.g-xtitle text', '.g-ytitle text',
    '[class^="g-x"][class$="title"] text', '[class^="g-y"][class$="title"] text',
    '.annotation-text', '.textpoint text', '.cbtitle text', '.heatmaplayer text'].join(',');
  const plots = [];
  document.querySelectorAll('.js-plotly-plot').forEach((gd, i) => {
    const id = gd.id || ('plot-' + i);
    // a heatmap draws its cells as one image a trace: counted as one point
    const points = gd.querySelectorAll('.scatterlayer .trace .point, .barlayer .point, .heatmaplayer image').length;
    const lines = [...gd.querySelectorAll('.scatterlayer .trace path.js-line')]
      .filter(p => (p.getAttribute('d') || '').length > 2).length;
    const xtitles = [...gd.querySelectorAll('[class^="g-x"][class$="title"] text, .g-xtitle text')]
      .map(e => e.textContent.trim()).filter(t => t);
    const ytitles = [...gd.querySelectorAll('[class^="g-y"][class$="title"] text, .g-ytitle text')]
      .map(e => e.textContent.trim()).filter(t => t);
    const labels = [...new Set(gd.querySelectorAll(labelSel))]
      .filter(e => e.textContent.trim() && e.getAttribute('display') !== 'none')
      .map(e => ({t: e.textContent.trim(), ...box(e)}))
      .filter(b => b.w > 0 && b.h > 0);
    const overlaps = [];
    for (let a = 0; a < labels.length; a++) for (let b = a + 1; b < labels.length; b++) {
      const p = labels[a], q = labels[b];
      const ox = Math.min(p.x + p.w, q.x + q.w) - Math.max(p.x, q.x);
      const oy = Math.min(p.y + p.h, q.y + q.h) - Math.max(p.y, q.y);
      if (ox > 2 && oy > 2) overlaps.push([p.t, q.t]);
    }
    const gt = gd.querySelector('.g-gtitle text');
    plots.push({id, points, lines, svg: !!gd.querySelector('svg.main-svg'),
                title: gt ? gt.textContent.trim() : '',
                ycategory: !!(gd._fullLayout && gd._fullLayout.yaxis && gd._fullLayout.yaxis.type === 'category'),
                xtitles, ytitles, labels: labels.length, overlaps});
  });
  return {title: document.title, plots, h1: [...document.querySelectorAll('h1')].map(e => e.textContent),
          height: document.documentElement.scrollHeight};
})()
"""


class Browser:
    """One headless Chromium with one page; use as a context manager."""

    def __init__(
        self, width: int = 1300, height: int = 1000, timeout: float = 20.0, offline: bool = True
    ):
        from websockets.sync.client import connect

        exe = find_chromium()
        if exe is None:
            raise RuntimeError(unavailable() or "no chromium")
        self._dir = tempfile.mkdtemp(prefix="fedsel-chromium-")
        self._proc = subprocess.Popen(
            [exe, *FLAGS, f"--user-data-dir={self._dir}", f"--window-size={width},{height}"]
            + ["about:blank"],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )
        port_file = Path(self._dir) / "DevToolsActivePort"
        deadline = time.monotonic() + timeout
        while not (port_file.exists() and port_file.read_text().strip()):
            if self._proc.poll() is not None or time.monotonic() > deadline:
                self.close()
                raise RuntimeError("chromium did not start its DevTools endpoint")
            time.sleep(0.05)
        port = port_file.read_text().split()[0]
        ws_url = None
        while ws_url is None:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list", timeout=5) as r:
                pages = [t for t in json.load(r) if t.get("type") == "page"]
            if pages:
                ws_url = pages[0]["webSocketDebuggerUrl"]
            elif time.monotonic() > deadline:
                self.close()
                raise RuntimeError("chromium opened no page")
            else:
                time.sleep(0.05)
        self._stack = contextlib.ExitStack()
        self._ws = self._stack.enter_context(connect(ws_url, max_size=None, open_timeout=timeout))
        self._id = 0
        self.events: list[dict] = []
        self.width, self.height = width, height
        for method in ("Page.enable", "Runtime.enable", "Log.enable", "Network.enable"):
            self.send(method)
        # offline: any http(s) request fails, so a page that needs the network shows it (a
        # page served from a local server is opened with offline=False and its requests
        # checked with :meth:`requested`)
        if offline:
            self.send("Network.setBlockedURLs", urls=["http://*", "https://*", "ws://*", "wss://*"])
        self.send(
            "Emulation.setDeviceMetricsOverride",
            width=width,
            height=height,
            deviceScaleFactor=1,
            mobile=False,
        )

    # -- protocol
    def send(self, method: str, timeout: float = 30.0, **params) -> dict:
        self._id += 1
        my = self._id
        self._ws.send(json.dumps({"id": my, "method": method, "params": params}))
        deadline = time.monotonic() + timeout
        while True:
            msg = json.loads(self._ws.recv(timeout=max(0.01, deadline - time.monotonic())))
            if msg.get("id") == my:
                if "error" in msg:
                    raise RuntimeError(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def _drain(self, seconds: float) -> None:
        deadline = time.monotonic() + seconds
        while (left := deadline - time.monotonic()) > 0:
            try:
                msg = json.loads(self._ws.recv(timeout=left))
            except TimeoutError:
                return
            if "method" in msg:
                self.events.append(msg)

    def evaluate(self, expression: str, timeout: float = 30.0):
        r = self.send(
            "Runtime.evaluate",
            timeout=timeout,
            expression=expression,
            returnByValue=True,
            awaitPromise=True,
        )
        if "exceptionDetails" in r:
            raise RuntimeError(f"page script failed: {r['exceptionDetails']}")
        return r["result"].get("value")

    # -- pages
    def open(self, path: str | os.PathLike, timeout: float = 30.0) -> None:
        """Load a local file (or an ``http://`` URL); wait for the load event and for plotly to
        finish drawing."""
        self.events.clear()
        url = str(path) if str(path).startswith("http://") else Path(path).resolve().as_uri()
        self.send("Page.navigate", url=url)
        deadline = time.monotonic() + timeout
        while not any(e["method"] == "Page.loadEventFired" for e in self.events):
            if time.monotonic() > deadline:
                raise TimeoutError(f"{path} did not finish loading")
            self._drain(0.1)
        # plotly draws synchronously in newPlot, but responsive relayouts settle on frames
        self.evaluate("new Promise(r => requestAnimationFrame(() => setTimeout(r, 150)))")
        self._drain(0.05)

    def errors(self) -> list[str]:
        """JavaScript exceptions, console errors and failed loads seen since the last open."""
        out = []
        for e in self.events:
            m, p = e["method"], e.get("params", {})
            if m == "Runtime.exceptionThrown":
                d = p.get("exceptionDetails", {})
                out.append(d.get("exception", {}).get("description") or d.get("text", "error"))
            elif m == "Runtime.consoleAPICalled" and p.get("type") == "error":
                out.append(" ".join(str(a.get("value", a.get("description"))) for a in p["args"]))
            elif m == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
                out.append(p["entry"].get("text", "error"))
        return out

    def requested(self) -> list[str]:
        """Every URL the page requested since the last open."""
        return [
            e["params"]["request"]["url"]
            for e in self.events
            if e["method"] == "Network.requestWillBeSent"
        ]

    def page_report(self) -> dict:
        """Title, h1s, page height and per plot: points, lines, axis titles, label overlaps."""
        return self.evaluate(_PAGE_JS)

    def screenshot(self, path: str | os.PathLike, max_height: int | None = None) -> Path:
        """A PNG of the whole page (or its top ``max_height`` pixels)."""
        h = int(self.evaluate("document.documentElement.scrollHeight"))
        h = min(h, max_height) if max_height else h
        clip = {"x": 0, "y": 0, "width": self.width, "height": h, "scale": 1}
        r = self.send("Page.captureScreenshot", format="png", clip=clip, captureBeyondViewport=True)
        out = Path(path)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_bytes(base64.b64decode(r["data"]))
        return out

    def close(self) -> None:
        stack = getattr(self, "_stack", None)
        if stack is not None:
            try:
                stack.close()
            except Exception:
                pass
        if self._proc.poll() is None:
            self._proc.terminate()
            try:
                self._proc.wait(5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait(5)
        shutil.rmtree(self._dir, ignore_errors=True)

    def __enter__(self) -> Browser:
        return self

    def __exit__(self, *exc) -> None:
        self.close()
