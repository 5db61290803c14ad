#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
"""Opens an HTML file in headless Chromium and reports what a reader sees.

    report_check.py [--width=PX] CHROMIUM FILE SCREENSHOT [SELECTOR...]

Starts CHROMIUM headless (a window PX wide, 1200 by default; below 600 it
is laid out as a phone's) with a fresh profile and the DevTools protocol on
a loopback port of its choosing, attaches to its page over a WebSocket
(python3-websocket), enables the Runtime, Log, Network and Page domains,
navigates to FILE, waits for the load event, then prints one JSON object:

    {"console_errors": [...],   console.error(), uncaught exceptions and
                                error log entries (failed loads, CSP, ...)
     "requests": [...],         every URL the page requested
     "counts": {SELECTOR: n},   document.querySelectorAll(SELECTOR).length
     "title": "...",
     "scroll_width": n,         the page's width, and the window's: wider
     "client_width": n}         than the window, it scrolls sideways

and saves a full-page PNG screenshot to SCREENSHOT. Exit status 0 when it
printed that, 1 when Chromium or the protocol failed (the reason on
standard error). Used by tests/integration/test_report_html.sh.
"""
import base64
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

import websocket

TIMEOUT_S = 60


def fail(msg):
    print(f"report_check: {msg}", file=sys.stderr)
    sys.exit(1)


class Page:
    """A DevTools protocol session with one page target."""

    def __init__(self, url):
        self.ws = websocket.create_connection(url, timeout=TIMEOUT_S,
                                              suppress_origin=True)
        self.next_id = 0
        self.events = []

    def call(self, method, **params):
        self.next_id += 1
        mine = self.next_id
        self.ws.send(json.dumps({"id": mine, "method": method,
                                 "params": params}))
        while True:
            msg = json.loads(self.ws.recv())
            if msg.get("id") == mine:
                if "error" in msg:
                    fail(f"{method}: {msg['error']}")
                return msg.get("result", {})
            if "method" in msg:
                self.events.append(msg)

    def wait_for(self, method):
        deadline = time.monotonic() + TIMEOUT_S
        while not any(e["method"] == method for e in self.events):
            if time.monotonic() > deadline:
                fail(f"no {method} within {TIMEOUT_S} s")
            msg = json.loads(self.ws.recv())
            if "method" in msg:
                self.events.append(msg)


def devtools_port(profile, proc):
    """Chromium writes the port it bound to DevToolsActivePort."""
    path = os.path.join(profile, "DevToolsActivePort")
    deadline = time.monotonic() + TIMEOUT_S
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            fail(f"chromium exited with status {proc.returncode}")
        try:
            with open(path, encoding="ascii") as f:
                return int(f.readline())
        except (OSError, ValueError):
            time.sleep(0.1)
    fail(f"chromium wrote no {path} within {TIMEOUT_S} s")
    return None


def console_errors(events):
    errors = []
    for e in events:
        p = e.get("params", {})
        if e["method"] == "Runtime.consoleAPICalled" and p.get("type") in ("error", "assert"):
            errors.append(" ".join(str(a.get("value", a.get("description", "")))
                                   for a in p.get("args", [])))
        elif e["method"] == "Runtime.exceptionThrown":
            d = p.get("exceptionDetails", {})
            errors.append(d.get("exception", {}).get("description", d.get("text", "")))
        elif e["method"] == "Log.entryAdded" and p.get("entry", {}).get("level") == "error":
            errors.append(p["entry"].get("text", ""))
    return errors


def stop_group(proc):
    """Stops chromium and every helper of its process group."""
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        pass
    # helpers that outlive the browser (they would write into the
    # profile after it is removed)
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    proc.wait()


def main():
    args = sys.argv[1:]
    width = 1200
    if args and args[0].startswith("--width="):
        width = int(args.pop(0)[len("--width="):])
    if len(args) < 3:
        fail("usage: report_check.py [--width=PX] CHROMIUM FILE SCREENSHOT [SELECTOR...]")
    chromium, page_file, screenshot = args[0:3]
    selectors = args[3:]
    profile = tempfile.mkdtemp(prefix="fleetbench-chromium-")
    proc = subprocess.Popen(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu",
         "--disable-quic", "--no-first-run", "--disable-background-networking",
         "--disable-component-update", "--disable-sync",
         "--disable-extensions", "--no-proxy-server",
         "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
         f"--user-data-dir={profile}", f"--window-size={width},900",
         "about:blank"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
        # its own process group: chromium's helpers go with it, and
        # none writes into the profile after it is removed
        start_new_session=True)
    try:
        port = devtools_port(profile, proc)
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/json/list",
                                    timeout=TIMEOUT_S) as r:
            targets = json.load(r)
        pages = [t for t in targets if t.get("type") == "page"]
        if not pages:
            fail("chromium has no page target")
        page = Page(pages[0]["webSocketDebuggerUrl"])
        for domain in ("Runtime", "Log", "Network", "Page"):
            page.call(f"{domain}.enable")
        page.call("Page.navigate", url="file://" + os.path.abspath(page_file))
        page.wait_for("Page.loadEventFired")
        counts = {}
        for sel in selectors:
            r = page.call("Runtime.evaluate", returnByValue=True,
                          expression=f"document.querySelectorAll({json.dumps(sel)}).length")
            if "exceptionDetails" in r:
                fail(f"selector {sel!r}: {r['exceptionDetails'].get('text')}")
            counts[sel] = r["result"]["value"]
        title = page.call("Runtime.evaluate", expression="document.title",
                          returnByValue=True)["result"]["value"]
        # a phone's width: the page laid out as on one
        page.call("Emulation.setDeviceMetricsOverride", width=width,
                  height=900, deviceScaleFactor=1, mobile=width < 600)
        scroll = page.call("Runtime.evaluate", returnByValue=True, expression=(
            "[document.documentElement.scrollWidth, "
            "document.documentElement.clientWidth]"))["result"]["value"]
        size = page.call("Page.getLayoutMetrics")["cssContentSize"]
        shot = page.call("Page.captureScreenshot", format="png",
                         captureBeyondViewport=True,
                         clip={"x": 0, "y": 0, "width": size["width"],
                               "height": size["height"], "scale": 1})
        with open(screenshot, "wb") as f:
            f.write(base64.b64decode(shot["data"]))
        requests = [e["params"]["request"]["url"] for e in page.events
                    if e["method"] == "Network.requestWillBeSent"]
        json.dump({"console_errors": console_errors(page.events),
                   "requests": requests, "counts": counts, "title": title,
                   "scroll_width": scroll[0], "client_width": scroll[1]},
                  sys.stdout, indent=1)
        print()
    finally:
        stop_group(proc)
        shutil.rmtree(profile, ignore_errors=True)


if __name__ == "__main__":
    main()
