"""What the headless Chromium walkthroughs (browser_walkthrough.py, console_walkthrough.py) share.

Not a program: both scripts import it from beside themselves. It has the check counting (Results), Chromium under
Selenium (new_browser, wait_for), the screenshot and browser-console checks (shoot, console_problems), the loopback
server the scripts' own pages are served from (serve), and running a walk to its one-line JSON result (run, finish).
Each script passes what is its own: the window size, its pages' style checks, which failed loads are tolerated.
Python 3's standard library and Selenium 4 only.
"""

import http.server
import json
import os
import struct
import sys
import tempfile
import threading
import time
import traceback

from selenium import webdriver
from selenium.common.exceptions import TimeoutException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

WAIT = 20  # seconds any one page may take to appear
PAGE_LOAD_TIMEOUT = 30
CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"


class CheckFailed(Exception):
    """A step cannot go on (its page did not appear); the remaining steps would only fail after it."""


class Results:
    """Checks that passed and failed, and the screenshots taken."""

    def __init__(self):
        self.passed = 0
        self.failures = []
        self.screenshots = []

    def check(self, condition, message):
        if condition:
            self.passed += 1
        else:
            self.failures.append(message)
            print("FAILED: " + message, file=sys.stderr, flush=True)
        return condition


def serve(handler, port=0):
    """A ThreadingHTTPServer with `handler` on 127.0.0.1:`port` (0: any free port), serving from a daemon thread."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.2}, daemon=True).start()
    return server


# Browser helpers.

def new_browser(profile, window, language="en-US"):
    """Headless Chromium with the profile folder `profile`, a viewport of exactly `window` (width, height), asking for
    `language`, and the browser's console log kept for console_problems."""
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for argument in ["--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage",
                     "--window-size=%d,%d" % window, "--user-data-dir=" + profile, "--lang=" + language,
                     "--no-first-run", "--disable-extensions", "--disable-background-networking", "--hide-scrollbars"]:
        options.add_argument(argument)
    # --lang alone does not reach Accept-Language in every headless build; the preference does.
    options.add_experimental_option("prefs", {"intl.accept_languages": language})
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    # The driver path is given, so Selenium Manager never tries to download anything.
    driver = webdriver.Chrome(service=Service(executable_path=CHROMEDRIVER), options=options)
    driver.set_page_load_timeout(PAGE_LOAD_TIMEOUT)
    # --window-size sizes the window, and headless Chromium still keeps room for its (invisible) toolbar: grow the
    # window by that difference so that the viewport, and so every screenshot, is exactly `window`.
    inner = driver.execute_script("return [window.outerWidth - window.innerWidth, window.outerHeight - window.innerHeight];")
    if inner != [0, 0]:
        driver.set_window_size(window[0] + inner[0], window[1] + inner[1])
    return driver


def wait_for(driver, condition, what, ignored=()):
    """Polls `condition(driver)` until it is true (and returns that) for up to WAIT seconds, else raises CheckFailed
    naming `what`. `ignored`: exceptions that a round may raise, after which the next round tries again (besides
    NoSuchElementException, which Selenium always ignores)."""
    try:
        return WebDriverWait(driver, WAIT, poll_frequency=0.1, ignored_exceptions=ignored).until(condition)
    except TimeoutException:
        raise CheckFailed("%s did not happen within %d s; the browser is at %s" % (what, WAIT, driver.current_url))


def png_size(path):
    """The width and height in a PNG's IHDR chunk (the signature, then the IHDR's length, type, width, height)."""
    with open(path, "rb") as file:
        head = file.read(24)
    if len(head) < 24 or head[:8] != b"\x89PNG\r\n\x1a\n" or head[12:16] != b"IHDR":
        return None
    return struct.unpack(">II", head[16:24])


def console_problems(driver, origin, document_status=None, expected=(), only_the_document=False):
    """Console entries (since the last call) that are CSP violations anywhere, or errors on Latch's own pages.

    `document_status`: the HTTP status the page itself is meant to have (the hosted error page is a 400, a console
    refusal a 403), which Chromium logs as a failed load. Tolerated is such a failed load of any resource at `origin`
    (the console's passkey ceremonies fetch answers with the same status), or with `only_the_document` only the one
    of the page at the browser's current URL. `expected`: substrings of messages that the step provokes on purpose."""
    try:
        entries = driver.get_log("browser")
    except Exception:  # a driver without the legacy log endpoint: nothing to check
        return []
    problems = []
    for entry in entries:
        message = entry.get("message", "")
        if any(text in message for text in expected):
            continue
        if "Content Security Policy" in message or "Refused to" in message:
            problems.append(message)
        elif document_status and only_the_document and message.startswith(
                driver.current_url + " - Failed to load resource: the server responded with a status of %d " % document_status):
            continue
        elif document_status and not only_the_document \
                and "Failed to load resource: the server responded with a status of %d " % document_status in message \
                and message.startswith(origin):
            continue
        elif "/favicon.ico " in message:
            # Chromium asks every origin for /favicon.ico; Latch has none (404), which is no fault of the page.
            continue
        elif entry.get("level") == "SEVERE" and message.startswith(origin):
            problems.append(message)
    return problems


def shoot(driver, results, out, name, texts, origin, window, page_checks=None, status=None, only_the_document=False,
          shown=400):
    """Checks the page's visible text (a failure quotes its first `shown` characters) and, with
    `page_checks(driver, results, name)`, whatever else the walkthrough checks on every page (its stylesheet); saves
    the screenshot as `name` in `out`, checks that the PNG is the viewport's and `window`'s size and not tiny, and
    that the browser's console shows no problem (console_problems with `status` and `only_the_document`)."""
    body = driver.find_element(By.TAG_NAME, "body").text
    for text in texts:
        results.check(text in body, "%s: the page does not show %r (it shows %r)" % (name, text, body[:shown]))
    if page_checks:
        page_checks(driver, results, name)
    viewport = driver.execute_script("return [window.innerWidth, window.innerHeight, window.devicePixelRatio];")
    path = os.path.join(out, name)
    results.check(driver.save_screenshot(path), "%s: the screenshot could not be saved" % name)
    size = png_size(path)
    expected = (round(viewport[0] * viewport[2]), round(viewport[1] * viewport[2]))
    results.check(size == expected, "%s: the PNG is %r, the viewport %r" % (name, size, expected))
    results.check(size == window, "%s: the PNG is %r, not the window's %r" % (name, size, window))
    bytes_ = os.path.getsize(path)
    results.check(bytes_ > 8000, "%s: the PNG has only %d bytes" % (name, bytes_))
    problems = console_problems(driver, origin, status, only_the_document=only_the_document)
    results.check(not problems, "%s: console problems: %r" % (name, problems))
    results.screenshots.append({"name": name, "width": size and size[0], "height": size and size[1], "bytes": bytes_})


# Running a walk.

def run(walk, args, results, profiles_prefix):
    """Runs `walk(args, results, browsers)` with `args.out_profiles` a temporary folder (named `profiles_prefix`...)
    for browser profiles, and quits every browser the walk appended to `browsers`. A CheckFailed or an unexpected
    error ends the walk early; the last browser's screenshot and page source are then saved to `args.out` as
    failure.png and failure.html. Returns the error that ended it ("Type: message", None when the walk ran to its
    end) and whether that was unexpected (its traceback is then on stderr)."""
    browsers = []
    error = None
    unexpected = False
    with tempfile.TemporaryDirectory(prefix=profiles_prefix) as profiles:
        args.out_profiles = profiles
        try:
            walk(args, results, browsers)
        except Exception as exception:  # CheckFailed or anything unexpected: record it, keep evidence
            error = "%s: %s" % (type(exception).__name__, exception)
            if not isinstance(exception, CheckFailed):
                unexpected = True
                traceback.print_exc(file=sys.stderr)
            if browsers:
                try:
                    browsers[-1].save_screenshot(os.path.join(args.out, "failure.png"))
                    with open(os.path.join(args.out, "failure.html"), "w", encoding="utf-8") as file:
                        file.write(browsers[-1].page_source)
                except Exception:
                    pass
        finally:
            for browser in browsers:
                try:
                    browser.quit()
                except Exception:
                    pass
    return error, unexpected


def finish(walkthrough, results, started, error, unexpected, **extra):
    """Prints the result line, {"walkthrough": `walkthrough`, "ok", "checks", "failures", "screenshots", then `extra`'s
    keys, "seconds" (since the monotonic `started`)}, and exits: 2 after an unexpected error, 1 when a check failed
    (or `error` ended the walk: it is the last failure), else 0."""
    if error:
        results.failures.append(error)
    print(json.dumps({"walkthrough": walkthrough, "ok": not results.failures, "checks": results.passed,
                      "failures": results.failures, "screenshots": results.screenshots, **extra,
                      "seconds": round(time.monotonic() - started, 1)}), flush=True)
    sys.exit(2 if unexpected else (1 if results.failures else 0))
