#!/usr/bin/env python3
"""Latch's web console in a real browser: a headless Chromium walkthrough of /console, signed in with a passkey.

    python3 console_walkthrough.py --issuer http://localhost:P --admin-token TOKEN \
        --enroll-link http://localhost:P/console/enroll?ticket=... --out FOLDER

The issuer must be `http://localhost:PORT`: WebAuthn needs a domain as its relying party id, and an IP address is not
one. --enroll-link is the owner's one-time link that `latch admin bootstrap` prints; --admin-token an admin token
(owner) with which the script checks state through the admin API and sets up two XSS probes before the walk: an admin
account named `<img src=x onerror=alert(1)>` and an app `xss-app` named `<script>alert(2)</script>`. Chromium gets a
Selenium virtual authenticator (CTAP2, internal, resident keys, user verification, always verified), which answers
every passkey ceremony by itself.

The walk, in one browser profile unless said otherwise:
   1. the enrollment link (01-enroll.png) -> create a passkey -> the overview (02-overview.png) -> sign out -> the
      sign-in page (03-sign-in.png) -> sign in with the passkey;
   2. out-of-band enrollment: a new user (createUser) -> its QR code (04-oob-qr.png), decoded with zbarimg, must be
      the link shown beside it;
   3. the users list (05-users.png) -> search -> the user's page (06-user.png) -> sign the user out everywhere;
   4. cross-site requests, from a page of the script's own on http://127.0.0.1:N (another site): the console in an
      iframe must not render (CSP frame-ancestors 'none', X-Frame-Options DENY); a form auto-posted to the user's
      sign-out action must not act (the SameSite=Strict cookie stays home; no new user.sessions_revoked record);
   5. test keys: generate one (07-test-key.png: the PEM shown once), then delete it;
   6. apps: edit the default app's callback URIs (08-apps.png), add an app; the XSS app's name shows literally;
      the new app's device evidence (an iOS App ID) saved; an issuer key (a fresh P-256 public key), an upstream
      identity provider (its client secret never shown again) and a custom registration provider added through the
      console's forms — each confirmed through the admin API; a login issuer (the same key) and a resource server
      (its introspection secret shown once) on the Login issuers page;
   7. signing keys: rotate (09-signing-keys.png); the JWKS (from the discovery document) gains the new kid;
   8. admins: the XSS account's name shows literally, no alert; create an `auditor` admin (10-admins.png: its
      enrollment link), which a second browser enrolls and signs in with: it is offered no change and refused the
      out-of-band page (13-not-allowed.png); the owner's spent enrollment link is refused there; create an admin
      token (shown once; it authenticates at the admin API), revoke it (401 afterwards); delete the auditor's
      account (its browser's session ends);
   9. delete the user (the admin API answers 404 for it);
  10. the audit log filtered by `admin.` (12-audit.png), a bad filter refused; through the admin API, every change
      above was recorded with the console session as actor (admin:<account>/cs_...).
Dangerous actions need a passkey check in the last 5 minutes; the walk signs in shortly before them, so the
confirmation page rarely shows. When it does, it is screenshot once (11-reauth.png), confirmed with the passkey and
the action repeated.

Every screenshot is checked: the page's visible text has the expected strings, the console's stylesheet applied (the
strict CSP allows only /console/assets/console.css), the PNG's IHDR size is the viewport's and the file is not tiny.
The browser's console must show no CSP violation and no error on Latch's pages.

Output: one JSON line, {"walkthrough": "console", "ok": ..., "checks": ..., "failures": [...], "screenshots": [...],
"seconds": ...}; exit status 0 when every check passed, 1 when one failed, 2 on an unexpected error. When a step cannot
go on (or on an unexpected error) the rest is skipped, and a screenshot `failure.png` and the page source
`failure.html` are saved to --out.

What this script shares with browser_walkthrough.py (Chromium, waits, the screenshot and console checks, running the
walk and the JSON line) is in walkthrough_common.py beside it.
"""

import argparse
import base64
import functools
import http.server
import json
import os
import secrets
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from selenium.common.exceptions import NoAlertPresentException, StaleElementReferenceException, WebDriverException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.virtual_authenticator import Protocol, Transport, VirtualAuthenticatorOptions
from selenium.webdriver.support import expected_conditions
from selenium.webdriver.support.ui import Select

# walkthrough_common.py beside this script, whatever the working directory; no __pycache__ left in the source tree.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
import walkthrough_common
from walkthrough_common import CheckFailed, Results, console_problems, finish, run, serve

WINDOW = (1280, 900)
ZBARIMG = "/usr/bin/zbarimg"
XSS_ADMIN = "<img src=x onerror=alert(1)>"
XSS_APP_ID = "xss-app"
XSS_APP_NAME = "<script>alert(2)</script>"
REAUTH_TITLE = "Confirm it is you"


# The other site: a loopback HTTP server on 127.0.0.1 (a different site from localhost) with the attack pages.

class ForeignHandler(http.server.BaseHTTPRequestHandler):
    issuer = ""
    pages = {}  # path -> HTML, set by the walk

    def do_GET(self):
        path = urllib.parse.urlsplit(self.path).path
        body = ForeignHandler.pages.get(path)
        if body is None:
            self.send_response(404 if path != "/favicon.ico" else 204)
            self.end_headers()
            return
        data = body.encode()
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format, *args):
        pass  # quiet: the JSON line is the output


# The admin API.

class AdminAPI:
    def __init__(self, issuer, token):
        self.issuer = issuer
        self.token = token

    def call(self, method, path, body=None, token=None, headers=None):
        """(status, parsed JSON or None, response headers)."""
        request = urllib.request.Request(
            self.issuer + path, method=method, data=None if body is None else json.dumps(body).encode(),
            headers={"Authorization": "Bearer " + (token or self.token), "Accept": "application/json",
                     **({"Content-Type": "application/json"} if body is not None else {}), **(headers or {})})
        try:
            with urllib.request.urlopen(request, timeout=15) as response:
                data = response.read()
                return response.status, (json.loads(data) if data else None), dict(response.headers)
        except urllib.error.HTTPError as error:
            data = error.read()
            try:
                parsed = json.loads(data) if data else None
            except ValueError:
                parsed = data.decode(errors="replace")
            return error.code, parsed, dict(error.headers)

    def get(self, path, token=None):
        status, body, _ = self.call("GET", path, token=token)
        return status, body

    def audit(self, **filters):
        status, body = self.get("/admin/v1/audit?" + urllib.parse.urlencode({"limit": "500", **filters}))
        return body.get("records", []) if status == 200 and isinstance(body, dict) else []


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def raw_get(url, cookie=None):
    """(status, headers) of one GET, redirects not followed."""
    opener = urllib.request.build_opener(NoRedirect)
    request = urllib.request.Request(url, headers={"Cookie": cookie} if cookie else {})
    try:
        with opener.open(request, timeout=15) as response:
            response.read()
            return response.status, response.headers
    except urllib.error.HTTPError as error:
        return error.code, error.headers


# Browser helpers.

def passkey_browser(profile):
    """walkthrough_common.new_browser (WINDOW, en-US) with a virtual passkey authenticator."""
    driver = walkthrough_common.new_browser(profile, WINDOW)
    # A platform authenticator that is always there and always verifies the user: passkey ceremonies need no one.
    authenticator = VirtualAuthenticatorOptions()
    authenticator.protocol = Protocol.CTAP2
    authenticator.transport = Transport.INTERNAL
    authenticator.has_resident_key = True
    authenticator.has_user_verification = True
    authenticator.is_user_verified = True
    authenticator.is_user_consenting = True
    driver.add_virtual_authenticator(authenticator)
    return driver


# An element found while the page changes may be gone when it is read (Chromium says so in more than one way): the
# next round of a wait looks again.
wait_for = functools.partial(walkthrough_common.wait_for, ignored=(WebDriverException,))


def title(driver):
    found = driver.find_elements(By.ID, "title")
    return found[0].text if found else None


def text_of(driver, element_id):
    found = driver.find_elements(By.ID, element_id)
    return found[0].text if found else None


def wait_for_title(driver, expected, what):
    wait_for(driver, lambda d: title(d) == expected, "%s (h1#title %r; it is %r)" % (what, expected, title(driver)))


def gone(element):
    """A wait condition: `element`'s document has been replaced."""
    def check(_):
        try:
            element.is_enabled()
            return False
        except StaleElementReferenceException:
            return True
        except WebDriverException as error:  # Chromium's way of saying the same while the new document comes in
            if "does not belong to the document" in str(error):
                return True
            raise
    return check


def click_and_load(driver, element_id, what):
    """Clicks `element_id` and waits until the next page has loaded (the old document is gone, h1#title is there)."""
    old = driver.find_element(By.TAG_NAME, "html")
    driver.find_element(By.ID, element_id).click()
    wait_for(driver, gone(old), what)
    wait_for(driver, lambda d: d.execute_script("return document.readyState") == "complete"
             and d.find_elements(By.ID, "title"), what)


def passkey(driver, expected_path, what):
    """Clicks button#passkey (the virtual authenticator answers) and waits for the page the console sends it to."""
    old = driver.find_element(By.TAG_NAME, "html")
    driver.find_element(By.ID, "passkey").click()

    def moved_or_failed(d):
        if gone(old)(d):
            return True
        error = passkey_error(d)
        if error:
            raise CheckFailed("%s: the passkey ceremony failed: %r" % (what, error))
        return False

    wait_for(driver, moved_or_failed, what)
    wait_for(driver, lambda d: urllib.parse.urlsplit(d.current_url).path == expected_path and d.find_elements(By.ID, "title"),
             "%s: the arrival at %s" % (what, expected_path))


def passkey_error(driver):
    """The text of p#passkey-error when the console's script has shown it, else None (also while the page changes)."""
    try:
        return driver.execute_script("const e = document.getElementById('passkey-error'); return e && !e.hidden ? e.textContent : null;")
    except WebDriverException:
        return None


def fill(driver, element_id, value):
    element = driver.find_element(By.ID, element_id)
    element.clear()
    element.send_keys(value)


def no_alert(driver):
    try:
        alert = driver.switch_to.alert
    except NoAlertPresentException:
        return True
    text = alert.text
    alert.dismiss()
    return "an alert is open: %r" % text


def console_page(driver, results, name, area):
    """The console's stylesheet: a flex header on a card background, a body without margin, <main> at most 72rem.
    Plain HTML would have a block header, an 8 px body margin and a full-width main. With `area`, the navigation
    marks nav-`area` as the current page."""
    style = driver.execute_script(
        "const h = document.querySelector('header'), m = document.querySelector('main'); if (!h || !m) return null;"
        "return {header: getComputedStyle(h).display, margin: getComputedStyle(document.body).marginTop,"
        " main: getComputedStyle(m).maxWidth, sheets: document.styleSheets.length};")
    results.check(style is not None and style["header"] == "flex" and style["margin"] == "0px" and style["main"] == "1152px"
                  and style["sheets"] == 1, "%s: the stylesheet did not apply (%r)" % (name, style))
    if area:
        current = driver.find_elements(By.CSS_SELECTOR, "header nav a[aria-current='page']")
        results.check([link.get_attribute("id") for link in current] == ["nav-" + area],
                      "%s: the current navigation entry is %r, not nav-%s" % (name, [link.get_attribute("id") for link in current], area))


def shoot(driver, results, out, name, texts, origin, area=None, status=None):
    """walkthrough_common.shoot for a console page: WINDOW, the console's stylesheet and, with `area`, navigation."""
    walkthrough_common.shoot(driver, results, out, name, texts, origin, WINDOW,
                             lambda d, r, n: console_page(d, r, n, area), status, shown=600)


def page_ok(driver, results, origin, what, status=None):
    """A page without a screenshot: no console problems, no refusal."""
    problems = console_problems(driver, origin, status)
    results.check(not problems, "%s: console problems: %r" % (what, problems))
    if status is None:
        error = text_of(driver, "error")
        results.check(error is None, "%s: the console refused: %r (at %s)" % (what, error, driver.current_url))


def flash_is(driver, results, expected, what):
    flash = text_of(driver, "flash")
    error = text_of(driver, "error")
    results.check(flash == expected, "%s: p#flash is %r, not %r%s (at %s)"
                  % (what, flash, expected, "; p#error: %r" % error if error else "", driver.current_url))


class Reauth:
    """Dangerous actions: when the console asks for a passkey check first, the check is made and the action repeated."""

    def __init__(self, args, results, origin):
        self.args, self.results, self.origin = args, results, origin
        self.shown = 0

    def submit(self, driver, submit_id, repeat, what):
        """Clicks `submit_id`; on the confirmation page: passkey, back to the form's page, `repeat()` (fill the form
        again), click again."""
        click_and_load(driver, submit_id, what)
        if title(driver) != REAUTH_TITLE:
            return
        self.shown += 1
        button = driver.find_elements(By.ID, "passkey")
        self.results.check(button and button[0].get_attribute("data-passkey") == "reauth",
                           "%s: the confirmation page has no button#passkey[data-passkey=reauth]" % what)
        back = button[0].get_attribute("data-next") if button else "/console"
        if self.shown == 1:
            shoot(driver, self.results, self.args.out, "11-reauth.png",
                  [REAUTH_TITLE, "This action needs a passkey check in the last 5 minutes."], self.origin, status=401)
        else:
            console_problems(driver, self.origin, 401)
        passkey(driver, urllib.parse.urlsplit(back).path, what + ": the passkey check")
        repeat()
        click_and_load(driver, submit_id, what + " (repeated after the passkey check)")
        self.results.check(title(driver) != REAUTH_TITLE, "%s: the console asked for the passkey again" % what)


def spent_link(args, results, browser):
    """The owner's enrollment link, used at the start, with a fresh passkey: the console refuses it, no session."""
    browser.remove_all_credentials()  # else the authenticator itself refuses (excludeCredentials) before Latch is asked
    browser.delete_all_cookies()
    browser.get(args.enroll_link)
    wait_for(browser, lambda d: title(d) is not None, "the spent enrollment link's page")
    if browser.find_elements(By.ID, "passkey"):
        browser.find_element(By.ID, "passkey").click()
        wait_for(browser, lambda d: passkey_error(d) or urllib.parse.urlsplit(d.current_url).path != "/console/enroll",
                 "the spent link's ceremony")
        message = passkey_error(browser) or ""
        results.check(urllib.parse.urlsplit(browser.current_url).path == "/console/enroll" and "used before" in message,
                      "1: the spent enrollment link enrolled again (at %s, %r)" % (browser.current_url, message))
        results.check(browser.get_cookie("latch_console") is None, "1: the spent enrollment link gave a console cookie")
    else:
        results.check(text_of(browser, "error") is not None, "1: the spent enrollment link's page shows neither button nor error")
    console_problems(browser, args.issuer, 400)


# The walk.

def walk(args, results, browsers):
    issuer = args.issuer
    api = AdminAPI(issuer, args.admin_token)
    reauth = Reauth(args, results, issuer)
    tag = secrets.token_hex(3)
    oob_user, oob_username = "walk-user-" + tag, "walker-" + tag

    # 0. The XSS probes, through the admin API.
    status, body, _ = api.call("POST", "/admin/v1/admins", {"username": XSS_ADMIN, "role": "auditor"})
    results.check(status in (201, 409), "0: creating the XSS admin account answered %s %r" % (status, body))
    status, body, _ = api.call("POST", "/admin/v1/clients", {"clientId": XSS_APP_ID, "name": XSS_APP_NAME})
    results.check(status in (201, 409), "0: creating the XSS app answered %s %r" % (status, body))
    status, body = api.get("/admin/v1/clients")
    default_before = next((c for c in (body or {}).get("clients", []) if c.get("clientId") == "default"), None)
    if default_before is None:
        raise CheckFailed("0: the admin API lists no `default` client: %s %r" % (status, body))

    driver = passkey_browser(tempfile.mkdtemp(prefix="latch-chromium-", dir=args.out_profiles))
    browsers.append(driver)
    console_problems(driver, issuer)  # start the log fresh

    # 1. Enroll the owner's passkey; the overview; sign out; sign in.
    driver.get(args.enroll_link)
    wait_for(driver, expected_conditions.presence_of_element_located((By.ID, "passkey")), "the enrollment page")
    results.check(title(driver) == "Enroll a passkey", "1: the enrollment page's title is %r" % title(driver))
    owner = text_of(driver, "enroll-username") or ""
    results.check(bool(owner) and text_of(driver, "enroll-role") == "owner",
                  "1: the enrollment page names %r (%r)" % (owner, text_of(driver, "enroll-role")))
    results.check(driver.find_element(By.ID, "passkey").get_attribute("data-passkey") == "enroll", "1: button#passkey is not for enrollment")
    shoot(driver, results, args.out, "01-enroll.png", ["Enroll a passkey", "Create a passkey for the admin account " + owner, "Create a passkey"], issuer)
    passkey(driver, "/console", "1: enrollment")
    results.check(title(driver) == "Overview", "1: after enrolling the title is %r" % title(driver))
    results.check((text_of(driver, "whoami") or "").startswith(owner + " (owner)"), "1: span#whoami is %r" % text_of(driver, "whoami"))
    for table in ["key-ages-table"]:
        results.check(bool(driver.find_elements(By.ID, table)), "1: the overview has no table#%s" % table)
    results.check(text_of(driver, "users-count") is not None, "1: the overview has no dd#users-count")
    shoot(driver, results, args.out, "02-overview.png",
          ["Overview", "Activity", "Users", "Sign-ins, last hour", "Keys and their ages", "Admin tokens expiring within 14 days", "Sign out"],
          issuer, area="overview")

    status, body = api.get("/admin/v1/admins")
    account = next((a for a in (body or {}).get("admins", []) if a.get("username") == owner), None)
    if account is None:
        raise CheckFailed("1: the admin API lists no account %r: %r" % (owner, body))
    actor_prefix = "admin:%s/cs_" % account["id"]

    click_and_load(driver, "sign-out", "signing out")
    results.check(driver.current_url == issuer + "/console/sign-in?reason=signed-out", "1: signing out went to %s" % driver.current_url)
    flash_is(driver, results, "You are signed out.", "1: sign-out")
    results.check(not driver.find_elements(By.ID, "whoami") and not driver.find_elements(By.ID, "nav-users"),
                  "1: the sign-in page shows the navigation")
    shoot(driver, results, args.out, "03-sign-in.png", ["Sign in", "You are signed out.", "Sign in with a passkey"], issuer)
    driver.get(issuer + "/console/users")
    wait_for(driver, lambda d: urllib.parse.urlsplit(d.current_url).path == "/console/sign-in", "the users page while signed out")
    passkey(driver, "/console", "1: sign-in")
    results.check(title(driver) == "Overview", "1: after signing in the title is %r" % title(driver))
    page_ok(driver, results, issuer, "1: the overview after signing in")
    sign_in_records = [r for r in api.audit(type="admin.console.signin") if r.get("actor", "").startswith(actor_prefix)]
    results.check(len(sign_in_records) >= 2, "1: %d admin.console.signin records by %s" % (len(sign_in_records), actor_prefix))

    # 2. Out-of-band enrollment of a new user: the QR code is the link.
    click_and_load(driver, "nav-oob", "the out-of-band page")
    results.check(title(driver) == "Out-of-band enrollment", "2: the out-of-band page's title is %r" % title(driver))
    fill(driver, "oob-create-user", oob_user)
    driver.find_element(By.ID, "oob-create-createUser").click()
    fill(driver, "oob-create-username", oob_username)
    click_and_load(driver, "oob-create-submit", "the QR code page")
    image = driver.find_elements(By.ID, "oob-qr-code")
    link = text_of(driver, "oob-link")
    if not results.check(bool(image) and bool(link), "2: no img#oob-qr-code and dd#oob-link (error %r)" % text_of(driver, "error")):
        raise CheckFailed("2: the out-of-band enrollment showed no QR code")
    results.check(text_of(driver, "oob-user") == oob_user, "2: dd#oob-user is %r" % text_of(driver, "oob-user"))
    natural = driver.execute_script("const i = document.getElementById('oob-qr-code'); return [i.complete, i.naturalWidth];")
    results.check(natural[0] and natural[1] > 0, "2: the QR code image did not load (%r)" % natural)
    source = image[0].get_attribute("src")
    results.check(source.startswith("data:image/png;base64,"), "2: the QR code is not a data: PNG (%r)" % source[:40])
    qr_path = os.path.join(args.out_profiles, "oob-qr.png")
    with open(qr_path, "wb") as file:
        file.write(base64.b64decode(source.split(",", 1)[1]))
    decoded = subprocess.run([ZBARIMG, "--raw", "-q", qr_path], capture_output=True, text=True, timeout=30)
    results.check(decoded.returncode == 0 and decoded.stdout.strip() == link,
                  "2: zbarimg read %r (status %d, %r), the page shows %r" % (decoded.stdout.strip(), decoded.returncode, decoded.stderr.strip(), link))
    shoot(driver, results, args.out, "04-oob-qr.png", ["Scan with the app", link, oob_user], issuer, area="oob")
    status, body = api.get("/admin/v1/users/" + urllib.parse.quote(oob_user, safe=""))
    results.check(status == 200 and body.get("username") == oob_username, "2: the admin API shows the new user as %s %r" % (status, body))

    # 3. The users list, a search, the user's page; sign the user out everywhere.
    click_and_load(driver, "nav-users", "the users page")
    row = driver.find_elements(By.ID, "user-" + oob_user)
    results.check(bool(row) and oob_username in row[0].text, "3: the users table has no row tr#user-%s" % oob_user)
    shoot(driver, results, args.out, "05-users.png", ["Users", "User id or username", oob_user, oob_username], issuer, area="users")
    fill(driver, "user-search-q", "no-such-user-" + tag)
    click_and_load(driver, "user-search-submit", "a search for nobody")
    results.check("No user has the id or username no-such-user-" + tag in (text_of(driver, "error") or ""),
                  "3: a search for nobody shows p#error %r" % text_of(driver, "error"))
    console_problems(driver, issuer)
    fill(driver, "user-search-q", oob_username)
    click_and_load(driver, "user-search-submit", "the search for the user")
    results.check(urllib.parse.urlsplit(driver.current_url).path == "/console/users/" + oob_user,
                  "3: the search went to %s" % driver.current_url)
    results.check(text_of(driver, "user-id") == oob_user and text_of(driver, "user-username") == oob_username,
                  "3: the user page shows %r / %r" % (text_of(driver, "user-id"), text_of(driver, "user-username")))
    shoot(driver, results, args.out, "06-user.png",
          ["User " + oob_username, "Profile", oob_user, "Authenticators", "Sign out everywhere", "Delete this user"], issuer, area="users")
    revoked_before = len(api.audit(type="user.sessions_revoked", subject=oob_user))
    click_and_load(driver, "revoke-sessions-submit", "signing the user out everywhere")
    flash_is(driver, results, "Every session of the user was revoked.", "3: revoke sessions")
    page_ok(driver, results, issuer, "3: revoke sessions")
    revoked = api.audit(type="user.sessions_revoked", subject=oob_user)
    results.check(len(revoked) == revoked_before + 1 and revoked[0].get("actor", "").startswith(actor_prefix),
                  "3: user.sessions_revoked records for the user: %r" % [(r.get("actor"), r.get("seq")) for r in revoked])

    # 4. Another site: the console in its iframe, a form posted to the console.
    foreign = "http://127.0.0.1:%d" % args.foreign_port
    ForeignHandler.pages["/frame"] = (
        "<!doctype html><html><head><title>Another site</title></head><body><h1>Another site</h1>"
        "<iframe id='victim' src='%s/console' width='900' height='600'></iframe></body></html>" % issuer)
    ForeignHandler.pages["/post"] = (
        "<!doctype html><html><head><title>Another site</title></head><body>"
        "<form id='attack' method='post' action='%s/console/users/%s/sign-out'><input type='hidden' name='csrf' value='forged'></form>"
        "<script>document.getElementById('attack').submit();</script></body></html>" % (issuer, urllib.parse.quote(oob_user, safe="")))
    cookie = driver.get_cookie("latch_console")
    results.check(cookie is not None and cookie.get("httpOnly") and cookie.get("sameSite") == "Strict",
                  "4: the console cookie is %r" % cookie)
    for path, with_cookie in (("/console", True), ("/console", False), ("/console/sign-in", False)):
        status, headers = raw_get(issuer + path, "latch_console=" + cookie["value"] if with_cookie and cookie else None)
        policy = headers.get("Content-Security-Policy", "")
        results.check("frame-ancestors 'none'" in policy and headers.get("X-Frame-Options") == "DENY",
                      "4: GET %s (%s) answered %s with CSP %r, X-Frame-Options %r"
                      % (path, "signed in" if with_cookie else "no cookie", status, policy, headers.get("X-Frame-Options")))
        if with_cookie:
            results.check(status == 200, "4: GET /console with the browser's cookie answered %s" % status)
    driver.get(foreign + "/frame")
    wait_for(driver, expected_conditions.presence_of_element_located((By.ID, "victim")), "the framing page")
    time.sleep(1.5)  # the frame's load (or refusal) finishes after the parent's
    logged = []
    for _ in range(20):
        logged += [entry.get("message", "") for entry in driver.get_log("browser")]
        if any("frame-ancestors" in message for message in logged):
            break
        time.sleep(0.25)
    results.check(any("frame-ancestors 'none'" in message and ("Refused to frame" in message or "Framing" in message) for message in logged),
                  "4: Chromium logged no frame-ancestors refusal for the framed console: %r" % logged)
    driver.switch_to.frame(driver.find_element(By.ID, "victim"))
    try:
        framed_title = driver.find_elements(By.ID, "title")
        framed_text = driver.find_element(By.TAG_NAME, "body").text if driver.find_elements(By.TAG_NAME, "body") else ""
        framed_url = driver.execute_script("return document.location.href")
    finally:
        driver.switch_to.default_content()
    results.check(not framed_title and "Latch console" not in framed_text and not framed_url.startswith(issuer),
                  "4: the console rendered inside another site's iframe (%r, %r)" % (framed_url, framed_text[:200]))
    # The cross-site form: the browser does not send the SameSite=Strict cookie, so the console does nothing.
    revoked_before = len(api.audit(type="user.sessions_revoked", subject=oob_user))
    refused_before = len(api.audit(type="admin.console.csrf_refused"))
    driver.get(foreign + "/post")
    wait_for(driver, lambda d: d.current_url.startswith(issuer) and d.find_elements(By.ID, "title"), "the cross-site form's landing")
    landed = urllib.parse.urlsplit(driver.current_url).path
    results.check(landed == "/console/sign-in" or text_of(driver, "error-code") == "invalid_csrf_token",
                  "4: the cross-site form landed at %s (%r, error %r)" % (driver.current_url, title(driver), text_of(driver, "error")))
    results.check(text_of(driver, "flash") is None, "4: the cross-site form shows a flash %r" % text_of(driver, "flash"))
    console_problems(driver, issuer, 403)
    time.sleep(0.5)
    revoked = api.audit(type="user.sessions_revoked", subject=oob_user)
    results.check(len(revoked) == revoked_before, "4: the cross-site form revoked the user's sessions (%d records, %d before)"
                  % (len(revoked), revoked_before))
    results.check(len(api.audit(type="admin.console.csrf_refused")) >= refused_before,
                  "4: admin.console.csrf_refused records went down")
    # The browser's own session is unharmed.
    driver.get(issuer + "/console")
    wait_for_title(driver, "Overview", "the overview after the cross-site requests")
    page_ok(driver, results, issuer, "4: the overview after the cross-site requests")

    # 5. Test keys: generate one (shown once), check it through the API, delete it.
    key_id = "walk-key-" + tag
    click_and_load(driver, "nav-test-keys", "the test keys page")
    results.check(title(driver) == "Test registration keys", "5: the test keys page's title is %r" % title(driver))
    fill(driver, "create-test-key-keyId", key_id)
    Select(driver.find_element(By.ID, "create-test-key-algorithm")).select_by_value("ES256")
    click_and_load(driver, "create-test-key-submit", "generating a test key")
    pem = text_of(driver, "test-key-private") or ""
    results.check(pem.startswith("-----BEGIN PRIVATE KEY-----") and pem.rstrip().endswith("-----END PRIVATE KEY-----"),
                  "5: pre#test-key-private is %r (error %r)" % (pem[:60], text_of(driver, "error")))
    download = driver.find_elements(By.ID, "test-key-private-download")
    results.check(bool(download) and download[0].get_attribute("download") == key_id + ".pem"
                  and download[0].get_attribute("href").startswith("data:application/octet-stream;base64,")
                  and base64.b64decode(download[0].get_attribute("href").split(",", 1)[1]).decode().strip() == pem.strip(),
                  "5: a#test-key-private-download does not carry the PEM")
    results.check(bool(driver.find_elements(By.ID, "test-key-" + key_id)), "5: the table has no row tr#test-key-%s" % key_id)
    shoot(driver, results, args.out, "07-test-key.png",
          ["Test key %s created" % key_id, "shown this once", "BEGIN PRIVATE KEY", key_id, "ES256"], issuer, area="test-keys")
    status, body = api.get("/admin/v1/test-keys")
    listed = [k for k in (body or {}).get("testKeys", []) if k.get("keyId") == key_id]
    results.check(status == 200 and len(listed) == 1 and listed[0].get("algorithm") == "ES256",
                  "5: GET /admin/v1/test-keys shows %s %r" % (status, listed))
    driver.get(issuer + "/console/test-keys")
    wait_for_title(driver, "Test registration keys", "the test keys page again")
    results.check(not driver.find_elements(By.ID, "test-key-private") and "BEGIN PRIVATE KEY" not in driver.page_source,
                  "5: the private key is shown again")
    click_and_load(driver, "delete-test-key-" + key_id, "deleting the test key")
    flash_is(driver, results, "The test key was deleted.", "5: delete test key")
    results.check(not driver.find_elements(By.ID, "test-key-" + key_id), "5: the deleted key is still listed")
    page_ok(driver, results, issuer, "5: delete test key")
    status, body = api.get("/admin/v1/test-keys")
    results.check(status == 200 and not [k for k in body.get("testKeys", []) if k.get("keyId") == key_id],
                  "5: GET /admin/v1/test-keys still lists the deleted key")

    # 6. Apps: the default app's callback URIs; a new app; the XSS app's name, literally.
    callbacks = ["http://127.0.0.1:%d/walk/cb" % args.foreign_port, "https://app.example/callback"]
    click_and_load(driver, "nav-apps", "the apps page")
    results.check(title(driver) == "Apps", "6: the apps page's title is %r" % title(driver))
    results.check(no_alert(driver) is True, "6: the apps page: %s" % no_alert(driver))
    xss_section = driver.find_elements(By.ID, "app-" + XSS_APP_ID)
    results.check(bool(xss_section) and XSS_APP_NAME in xss_section[0].find_element(By.TAG_NAME, "h2").text,
                  "6: the XSS app's name is not shown literally")
    results.check(not driver.execute_script("return [...document.scripts].some(s => !s.src)"), "6: the apps page has an inline script")
    # The form posts every field: the DPoP select must offer the app's current value, or saving changes it.
    offered = [option.get_attribute("value") for option in Select(driver.find_element(By.ID, "edit-default-dpop")).options]
    results.check((default_before.get("dpop") or "allowed") in offered,
                  "6: the app form's DPoP select offers %r, not the app's current value %r (the admin API takes off, allowed, required)"
                  % (offered, default_before.get("dpop")))
    textarea = driver.find_element(By.ID, "edit-default-redirectUris")
    textarea.clear()
    textarea.send_keys("\n".join(callbacks))
    click_and_load(driver, "edit-default-submit", "saving the default app")
    flash_is(driver, results, "The app's settings were saved.", "6: save app")
    page_ok(driver, results, issuer, "6: save app")
    results.check(text_of(driver, "app-default-redirects") == " ".join(callbacks),
                  "6: dd#app-default-redirects is %r" % text_of(driver, "app-default-redirects"))
    if title(driver) != "Apps":
        driver.get(issuer + "/console/apps")
        wait_for_title(driver, "Apps", "the apps page after a refused save")
    status, body = api.get("/admin/v1/clients")
    default = next((c for c in (body or {}).get("clients", []) if c.get("clientId") == "default"), {})
    results.check(default.get("redirectUris") == callbacks, "6: GET /admin/v1/clients shows the default app's redirectUris %r"
                  % default.get("redirectUris"))
    results.check(default.get("dpop") == default_before.get("dpop"), "6: saving the callback URIs changed the app's DPoP from %r to %r"
                  % (default_before.get("dpop"), default.get("dpop")))
    app_id = "walk-app-" + tag
    fill(driver, "create-app-clientId", app_id)
    fill(driver, "create-app-name", "Walkthrough app")
    click_and_load(driver, "create-app-submit", "adding an app")
    flash_is(driver, results, "The app was created.", "6: create app")
    results.check(bool(driver.find_elements(By.ID, "app-" + app_id)), "6: the new app has no section#app-%s" % app_id)
    driver.execute_script("document.getElementById('app-default').scrollIntoView()")
    shoot(driver, results, args.out, "08-apps.png",
          ["Apps", "Default app", XSS_APP_NAME] + ([callbacks[0]] if default.get("redirectUris") == callbacks else []),
          issuer, area="apps")
    results.check(no_alert(driver) is True, "6: after saving: %s" % no_alert(driver))

    # 6b. The new app's device evidence; an issuer key, an upstream IdP and a custom provider from the forms.
    app_ios = "ABCDE12345.com.example.walk%s" % tag.replace("-", "").lower()
    fill(driver, "evidence-%s-appIds" % app_id, app_ios)
    click_and_load(driver, "evidence-%s-submit" % app_id, "saving the new app's device evidence")
    flash_is(driver, results, "The app's device-evidence settings were saved.", "6b: device evidence")
    status, body = api.get("/admin/v1/clients")
    created_app = next((c for c in (body or {}).get("clients", []) if c.get("clientId") == app_id), {})
    results.check((created_app.get("ios") or {}).get("appIds") == [app_ios], "6b: GET /admin/v1/clients shows the app's ios %r"
                  % created_app.get("ios"))
    results.check(created_app.get("android") is None, "6b: saving iOS evidence gave the app Android settings %r" % created_app.get("android"))

    issuer_key = ec.generate_private_key(ec.SECP256R1()).public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo).decode()
    issuer_name = "walk-co-" + tag
    click_and_load(driver, "nav-issuers", "the issuers page")
    fill(driver, "add-issuer-name", issuer_name)
    fill(driver, "add-issuer-keyId", "walk-k1")
    fill(driver, "add-issuer-publicKey", issuer_key)
    fill(driver, "add-issuer-allowedClaims", "custom:tier")
    click_and_load(driver, "add-issuer-submit", "adding an issuer key")
    flash_is(driver, results, "The issuer key was added.", "6b: add issuer")
    page_ok(driver, results, issuer, "6b: add issuer")
    results.check(bool(driver.find_elements(By.ID, "issuer-%s-walk-k1" % issuer_name)), "6b: the issuer key is not listed")
    status, body = api.get("/admin/v1/issuers")
    added = [i for i in (body or {}).get("issuers", []) if i.get("name") == issuer_name]
    results.check(len(added) == 1 and added[0].get("algorithm") == "ES256" and added[0].get("allowedClaims") == ["custom:tier"],
                  "6b: GET /admin/v1/issuers shows %r" % added)

    idp_secret = "walk-secret-" + secrets.token_hex(8)
    idp_id = "walk-idp-" + tag.replace("_", "-").lower()
    click_and_load(driver, "nav-upstream-idps", "the upstream IdPs page")
    fill(driver, "add-idp-id", idp_id)
    fill(driver, "add-idp-displayName", "Walk SSO")
    fill(driver, "add-idp-issuer", "https://idp.example.com")
    fill(driver, "add-idp-clientId", "latch-walk")
    fill(driver, "add-idp-clientSecret", idp_secret)
    click_and_load(driver, "add-idp-submit", "adding an upstream IdP")
    flash_is(driver, results, "The upstream identity provider was added: register its callback URL there.", "6b: add upstream IdP")
    page_ok(driver, results, issuer, "6b: add upstream IdP")
    status, body = api.get("/admin/v1/upstream-idps/" + idp_id)
    results.check(status == 200 and body.get("hasClientSecret") is True and body.get("displayName") == "Walk SSO",
                  "6b: GET /admin/v1/upstream-idps/%s: %s %r" % (idp_id, status, body))
    row = driver.find_elements(By.ID, "idp-" + idp_id)
    results.check(bool(row) and isinstance(body, dict) and body.get("callbackURL", "?") in row[0].text,
                  "6b: the upstream IdP's row does not show its callback URL")
    results.check(idp_secret not in driver.page_source, "6b: the upstream IdP's client secret is shown")

    provider_id = "walk-crm-" + tag
    click_and_load(driver, "nav-custom-providers", "the custom providers page")
    fill(driver, "add-provider-id", provider_id)
    fill(driver, "add-provider-name", "Walk CRM")
    Select(driver.find_element(By.ID, "add-provider-flow")).select_by_value("two_step")
    fill(driver, "add-provider-hookURL", "https://hooks.example.com/latch")
    fill(driver, "add-provider-hookSecret", "walk-hook-secret-" + secrets.token_hex(8))
    click_and_load(driver, "add-provider-submit", "adding a custom provider")
    flash_is(driver, results, "The provider was added.", "6b: add custom provider")
    page_ok(driver, results, issuer, "6b: add custom provider")
    status, body = api.get("/admin/v1/custom-providers/" + provider_id)
    results.check(status == 200 and body.get("flow") == "two_step" and body.get("enabled") is True,
                  "6b: GET /admin/v1/custom-providers/%s: %s %r" % (provider_id, status, body))

    login_issuer = "walk-bank-" + tag
    click_and_load(driver, "nav-login-issuers", "the login issuers page")
    results.check(title(driver) == "Login issuers", "6b: the login issuers page's title is %r" % title(driver))
    fill(driver, "add-login-issuer-issuerId", login_issuer)
    fill(driver, "add-login-issuer-audience", "https://latch.walk/issuers/" + login_issuer)
    fill(driver, "add-login-issuer-kid", "walk-b1")
    fill(driver, "add-login-issuer-publicKey", issuer_key)
    fill(driver, "add-login-issuer-allowedScopes", "payments")
    click_and_load(driver, "add-login-issuer-submit", "adding a login issuer")
    flash_is(driver, results, "The login issuer was added.", "6b: add login issuer")
    page_ok(driver, results, issuer, "6b: add login issuer")
    status, body = api.get("/admin/v1/login-issuers")
    added = [i for i in (body or {}).get("loginIssuers", []) if i.get("issuerId") == login_issuer]
    results.check(len(added) == 1 and [k.get("kid") for k in added[0].get("keys", [])] == ["walk-b1"] and added[0].get("allowedScopes") == ["payments"],
                  "6b: GET /admin/v1/login-issuers shows %r" % added)
    fill(driver, "add-resource-server-name", "Walk API")
    click_and_load(driver, "add-resource-server-submit", "creating a resource server")
    shown = driver.find_elements(By.ID, "created-resource-server-secret")
    server_secret = shown[0].text.strip() if shown else ""
    results.check(len(server_secret) >= 20, "6b: the resource server's secret is not shown once (%r)" % server_secret)
    driver.get(issuer + "/console/login-issuers")
    wait_for_title(driver, "Login issuers", "the login issuers page again")
    results.check(server_secret and server_secret not in driver.page_source, "6b: the resource server's secret is shown again")
    status, body = api.get("/admin/v1/resource-servers")
    servers = [r for r in (body or {}).get("resourceServers", []) if r.get("name") == "Walk API"]
    results.check(len(servers) == 1, "6b: GET /admin/v1/resource-servers shows %r" % servers)

    # 7. Signing keys: rotate; the JWKS gains the new kid and keeps the old.
    status, discovery = api.get("/.well-known/openid-configuration")
    jwks_uri = discovery.get("jwks_uri", "") if isinstance(discovery, dict) else ""
    results.check(jwks_uri.startswith(issuer + "/"), "7: the discovery document's jwks_uri is %r" % jwks_uri)

    def kids():
        with urllib.request.urlopen(jwks_uri, timeout=15) as response:
            return [key.get("kid") for key in json.loads(response.read()).get("keys", [])]

    kids_before = kids()
    click_and_load(driver, "nav-signing-keys", "the signing keys page")
    results.check(title(driver) == "Signing keys", "7: the signing keys page's title is %r" % title(driver))
    rows_before = {row.get_attribute("id") for row in driver.find_elements(By.CSS_SELECTOR, "#signing-keys-table tbody tr")}
    reauth.submit(driver, "rotate-submit", lambda: None, "7: rotate")
    flash_is(driver, results, "A new signing key is active; the previous one stays published until the tokens it signed expire.", "7: rotate")
    page_ok(driver, results, issuer, "7: rotate")
    rows = driver.find_elements(By.CSS_SELECTOR, "#signing-keys-table tbody tr")
    new_rows = [row for row in rows if row.get_attribute("id") not in rows_before]
    new_kid = new_rows[0].get_attribute("id")[len("signing-key-"):] if len(new_rows) == 1 else None
    results.check(new_kid is not None and new_rows[0].text.endswith("active"), "7: no one new active row after rotating (%r)"
                  % [row.text for row in new_rows])
    results.check(sum(1 for row in rows if row.text.endswith("active")) == 1, "7: not exactly one active signing key: %r" % [row.text for row in rows])
    kids_after = kids()
    results.check(new_kid in kids_after and all(kid in kids_after for kid in kids_before),
                  "7: the JWKS has %r, before %r; the new kid is %r" % (kids_after, kids_before, new_kid))
    shoot(driver, results, args.out, "09-signing-keys.png", ["Signing keys", "Rotate now", "active", "retired"] + ([new_kid] if new_kid else []),
          issuer, area="signing-keys")

    # 8. Admins: the XSS account; an auditor enrolled in a second browser; a token; deleting the admin.
    click_and_load(driver, "nav-admins", "the admins page")
    results.check(title(driver) == "Admins and tokens", "8: the admins page's title is %r" % title(driver))
    results.check(no_alert(driver) is True, "8: the admins page: %s" % no_alert(driver))
    table = driver.find_elements(By.ID, "admins-table")
    results.check(bool(table) and XSS_ADMIN in table[0].text and not table[0].find_elements(By.TAG_NAME, "img"),
                  "8: the XSS admin's name is not shown literally")
    auditor_name = "walk-auditor-" + tag

    def fill_admin():
        fill(driver, "create-admin-username", auditor_name)
        Select(driver.find_element(By.ID, "create-admin-role")).select_by_value("auditor")

    fill_admin()
    reauth.submit(driver, "create-admin-submit", fill_admin, "8: create admin")
    enrollment = text_of(driver, "enrollment-link") or ""
    results.check(enrollment.startswith(issuer + "/console/enroll?ticket="), "8: dd#enrollment-link is %r (error %r)"
                  % (enrollment, text_of(driver, "error")))
    shoot(driver, results, args.out, "10-admins.png",
          ["Admin %s created" % auditor_name, "Send this link to " + auditor_name, enrollment, "Admin accounts", XSS_ADMIN, "Your passkeys", "Admin tokens"],
          issuer, area="admins")
    results.check(no_alert(driver) is True, "8: the admins page after creating: %s" % no_alert(driver))
    status, body = api.get("/admin/v1/admins")
    auditor = next((a for a in (body or {}).get("admins", []) if a.get("username") == auditor_name), None)
    results.check(auditor is not None and auditor.get("role") == "auditor" and auditor.get("createdBy") == account["id"],
                  "8: GET /admin/v1/admins shows the new admin as %r" % auditor)

    if enrollment.startswith(issuer) and auditor:
        second = passkey_browser(tempfile.mkdtemp(prefix="latch-chromium-", dir=args.out_profiles))
        browsers.append(second)
        console_problems(second, issuer)
        second.get(enrollment)
        wait_for(second, expected_conditions.presence_of_element_located((By.ID, "passkey")), "the auditor's enrollment page")
        results.check(text_of(second, "enroll-username") == auditor_name and text_of(second, "enroll-role") == "auditor",
                      "8: the auditor's enrollment page names %r (%r)" % (text_of(second, "enroll-username"), text_of(second, "enroll-role")))
        passkey(second, "/console", "8: the auditor's enrollment")
        results.check((text_of(second, "whoami") or "").startswith(auditor_name + " (auditor)"), "8: the second browser's span#whoami is %r"
                      % text_of(second, "whoami"))
        page_ok(second, results, issuer, "8: the auditor's overview")
        # An auditor reads, and is offered no change.
        second.get(issuer + "/console/admins")
        wait_for_title(second, "Admins and tokens", "the admins page for the auditor")
        offered = [element.get_attribute("id") for element in second.find_elements(By.CSS_SELECTOR, "form[id], button[id^='delete-'], button[id^='revoke-']")]
        results.check(offered == [], "8: the auditor is offered %r on the admins page" % offered)
        page_ok(second, results, issuer, "8: the admins page for the auditor")
        second.get(issuer + "/console/test-keys")
        wait_for_title(second, "Test registration keys", "the test keys page for the auditor")
        results.check(not second.find_elements(By.ID, "create-test-key"), "8: the auditor is offered to create a test key")
        page_ok(second, results, issuer, "8: the test keys page for the auditor")
        second.get(issuer + "/console/oob")
        wait_for_title(second, "Not allowed", "the out-of-band page refused to the auditor")
        results.check(text_of(second, "error-code") == "forbidden", "8: the auditor on out-of-band: code#error-code is %r" % text_of(second, "error-code"))
        shoot(second, results, args.out, "13-not-allowed.png", ["Not allowed", "forbidden", "Back to the overview"], issuer, status=403)

    # A token: shown once; it authenticates at the admin API until it is revoked.
    def fill_token():
        fill(driver, "create-token-name", "walk-token-" + tag)
        Select(driver.find_element(By.ID, "create-token-role")).select_by_value("auditor")
        fill(driver, "create-token-days", "7")

    fill_token()
    reauth.submit(driver, "create-token-submit", fill_token, "8: create token")
    token = text_of(driver, "created-token-value") or ""
    token_id = text_of(driver, "created-token-id") or ""
    results.check(bool(token) and bool(token_id) and text_of(driver, "created-token-role") == "auditor",
                  "8: the created token shows %r / %r / %r (error %r)" % (token_id, token[:6], text_of(driver, "created-token-role"), text_of(driver, "error")))
    results.check(bool(driver.find_elements(By.ID, "token-" + token_id)), "8: the tokens table has no row tr#token-%s" % token_id)
    page_ok(driver, results, issuer, "8: create token")
    status, body = api.get("/admin/v1/tokens", token=token or "none")
    results.check(status == 200 and any(t.get("id") == token_id for t in (body or {}).get("tokens", [])),
                  "8: GET /admin/v1/tokens with the new token answered %s" % status)
    status, _, _ = api.call("POST", "/admin/v1/test-keys", {}, token=token or "none")
    results.check(status == 403, "8: the auditor token could create a test key (%s)" % status)
    driver.get(issuer + "/console/admins")
    wait_for_title(driver, "Admins and tokens", "the admins page again")
    results.check(not driver.find_elements(By.ID, "created-token-value") and token not in driver.page_source, "8: the token is shown again")
    click_and_load(driver, "revoke-" + token_id, "revoking the token")
    flash_is(driver, results, "The token was revoked.", "8: revoke token")
    results.check(not driver.find_elements(By.ID, "token-" + token_id), "8: the revoked token is still listed")
    page_ok(driver, results, issuer, "8: revoke token")
    status, _ = api.get("/admin/v1/tokens", token=token or "none")
    results.check(status == 401, "8: the revoked token answered %s" % status)

    # Deleting the auditor's account ends its browser session.
    if auditor:
        reauth.submit(driver, "delete-admin-" + auditor["id"], lambda: None, "8: delete admin")
        flash_is(driver, results, "The admin account was deleted.", "8: delete admin")
        results.check(not driver.find_elements(By.ID, "admin-" + auditor["id"]), "8: the deleted admin is still listed")
        page_ok(driver, results, issuer, "8: delete admin")
        status, body = api.get("/admin/v1/admins")
        results.check(not [a for a in (body or {}).get("admins", []) if a.get("id") == auditor["id"]], "8: the admin API still lists the deleted admin")
        if len(browsers) > 1:
            browsers[1].get(issuer + "/console")
            wait_for(browsers[1], lambda d: urllib.parse.urlsplit(d.current_url).path == "/console/sign-in", "the deleted admin's browser at sign-in")
            results.check(urllib.parse.urlsplit(browsers[1].current_url).query in ("reason=ended", "reason=invalid"),
                          "8: the deleted admin's browser went to %s" % browsers[1].current_url)
            spent_link(args, results, browsers[1])
            browsers[1].quit()
            browsers.pop(1)

    # 9. Delete the user.
    driver.get(issuer + "/console/users/" + urllib.parse.quote(oob_user, safe=""))
    wait_for_title(driver, "User " + oob_username, "the user's page again")
    reauth.submit(driver, "delete-user-submit", lambda: None, "9: delete user")
    results.check(driver.current_url == issuer + "/console/users?done=deleted-user", "9: deleting the user went to %s" % driver.current_url)
    flash_is(driver, results, "The user was deleted.", "9: delete user")
    results.check(not driver.find_elements(By.ID, "user-" + oob_user), "9: the deleted user is still listed")
    page_ok(driver, results, issuer, "9: delete user")
    status, _ = api.get("/admin/v1/users/" + urllib.parse.quote(oob_user, safe=""))
    results.check(status == 404, "9: GET /admin/v1/users/%s answered %s" % (oob_user, status))

    # 10. The audit log: admin changes, a bad filter; the console's changes carry its session as actor.
    click_and_load(driver, "nav-audit", "the audit log")
    fill(driver, "audit-filter-since", "yesterday-ish")
    click_and_load(driver, "audit-filter-submit", "a bad audit filter")
    results.check(text_of(driver, "error-code") == "invalid_input", "10: a bad since answered code#error-code %r" % text_of(driver, "error-code"))
    console_problems(driver, issuer, 400)
    fill(driver, "audit-filter-since", "")
    fill(driver, "audit-filter-type", "admin.")
    click_and_load(driver, "audit-filter-submit", "the audit log filtered by admin.")
    query = urllib.parse.parse_qs(urllib.parse.urlsplit(driver.current_url).query)
    results.check(query.get("type") == ["admin."], "10: the filter's URL is %s" % driver.current_url)
    rows = driver.find_elements(By.CSS_SELECTOR, "#audit-table tbody tr")
    cells = [[cell.text for cell in row.find_elements(By.TAG_NAME, "td")] for row in rows]
    results.check(len(rows) > 0 and all(len(c) > 3 and c[2].startswith("admin.") for c in cells),
                  "10: the audit table's types: %r" % [c[2] if len(c) > 2 else c for c in cells])
    console_rows = [c for c in cells if len(c) > 3 and c[3].startswith(actor_prefix)]
    results.check(len(console_rows) >= 5, "10: %d audit rows by %s" % (len(console_rows), actor_prefix))
    results.check(all(row.get_attribute("id").startswith("record-") for row in rows), "10: an audit row without id record-<seq>")
    if rows:
        driver.execute_script("document.getElementById('audit-table').scrollIntoView()")
        # Record numbers and addresses render on one line each (they once broke mid-word): one line box per cell text.
        broken = driver.execute_script("""
            const out = [];
            for (const row of document.querySelectorAll('#audit-table tbody tr')) {
              for (const n of [1, 8]) {
                const cell = row.querySelector('td:nth-child(' + n + ')');
                if (!cell || !cell.textContent.trim()) continue;
                const range = document.createRange(); range.selectNodeContents(cell);
                const lines = new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top)));
                if (lines.size > 1) out.push(cell.textContent.trim());
              }
            }
            return out;""")
        results.check(not broken, "10: audit cells broken across lines: %r" % broken)
    shoot(driver, results, args.out, "12-audit.png", ["Audit log", "admin.signing_keys.rotate", "admin.admins.create", actor_prefix],
          issuer, area="audit")

    records = api.audit(type="admin.")
    by_console = {}
    for record in records:
        if record.get("actor", "").startswith(actor_prefix):
            by_console.setdefault(record["type"], []).append(record)
    for kind in ["admin.console.signin", "admin.passkeys.create", "admin.test_keys.create", "admin.test_keys.delete", "admin.clients.update",
                 "admin.clients.create", "admin.signing_keys.rotate", "admin.admins.create", "admin.tokens.create", "admin.tokens.delete",
                 "admin.admins.delete", "admin.console.signout", "admin.issuers.create", "admin.upstream_idps.create",
                 "admin.custom_providers.create", "admin.login_issuers.create", "admin.resource_servers.create"]:
        results.check(kind in by_console, "10: no %s record by %s (the console's records: %r)" % (kind, actor_prefix, sorted(by_console)))
    for kind in ["user.sessions_revoked", "user.deleted"]:
        found = [r for r in api.audit(type=kind, subject=oob_user) if r.get("actor", "").startswith(actor_prefix)]
        results.check(len(found) == 1, "10: %d %s records for the user by %s" % (len(found), kind, actor_prefix))
    status, verification = api.get("/admin/v1/audit/verify")
    results.check(status == 200 and verification.get("verified") is True, "10: the audit chain does not verify: %s %r" % (status, verification))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--issuer", required=True, help="Latch's issuer, http://localhost:PORT")
    parser.add_argument("--admin-token", required=True, help="an owner's admin token, for setup and checks over the admin API")
    parser.add_argument("--enroll-link", required=True, help="the owner's one-time enrollment link (latch admin bootstrap)")
    parser.add_argument("--out", required=True, help="folder for the screenshots")
    args = parser.parse_args()
    if not args.issuer.startswith("http://localhost:"):
        parser.error("the issuer must be http://localhost:PORT (a WebAuthn relying party id is a domain): %s" % args.issuer)
    if not args.enroll_link.startswith(args.issuer + "/console/enroll?"):
        parser.error("the enrollment link is not the issuer's: %s" % args.enroll_link)
    os.makedirs(args.out, exist_ok=True)
    started = time.monotonic()
    results = Results()
    foreign = serve(ForeignHandler)
    args.foreign_port = foreign.server_address[1]
    try:
        error, unexpected = run(walk, args, results, "latch-console-profiles-")
    finally:
        foreign.shutdown()
    finish("console", results, started, error, unexpected)


if __name__ == "__main__":
    main()
