#!/usr/bin/env python3
"""Latch's hosted pages in a real browser: a headless Chromium walkthrough of browser sign-in, driven by Selenium.

    python3 browser_walkthrough.py --issuer http://127.0.0.1:P --upstream-issuer http://127.0.0.1:Q \
        --app-port N --idp corp:"Corp SSO" --idp corp2:"Partner SSO" --out FOLDER

Everything else is set up beforehand (Tests/IntegrationTests/BrowserWalkthroughTests.swift does it over the admin
API): the upstream identity providers named by --idp are configured and allowed for the client (--client-id,
default `default`), and that client has `http://127.0.0.1:N/cb` as a redirect URI and `http://127.0.0.1:N/signed-out`
as a post-logout redirect URI. This script plays the app itself: a tiny HTTP server on 127.0.0.1:N (inside this
process) receives the browser at those two URIs.

The walk, in one browser profile unless said otherwise:
  1. authorize -> the chooser (01-chooser.png) -> the first upstream -> its login form (02-upstream-login.png) ->
     sign in -> back at the app with code, state and iss; the code is exchanged at the token endpoint and the ID
     token carries the nonce;
  2. a second authorize -> straight back to the app with a code (single sign-on: no chooser, no upstream form);
  3. logout without id_token_hint -> the confirmation page (03-confirm-sign-out.png) -> sign out -> through the
     upstream's end-session endpoint back to the app's post-logout URI with state; a new authorize shows the chooser
     again (the web session is gone);
  4. GET /oauth2/logout with nothing -> the signed-out page (04-signed-out.png);
  5. an unregistered redirect_uri -> the error page (05-error.png) with #error-code unregistered_redirect_uri;
  6. a second browser asking for German (Accept-Language: de) -> the chooser in German (06-chooser-de.png).

Every screenshot is checked: the page's visible text has the expected strings, the stylesheet applied (the strict
CSP allows only /oauth2/assets/latch.css), the PNG's IHDR size is the viewport's and the file is not tiny. The
browser's console must show no CSP violation and no error on Latch's pages.

Output: one JSON line, {"walkthrough": "hosted-pages", "ok": ..., "checks": ..., "failures": [...], "screenshots":
[...], "app_requests": [...], "seconds": ...}; exit status 0 when every check passed, 1 when one failed, 2 on an
unexpected error. When a step cannot go on (or on an unexpected error) the rest is skipped, and a screenshot
`failure.png` and the page source `failure.html` are saved to --out.

What this script shares with console_walkthrough.py (Chromium, waits, the screenshot and console checks, running the
walk and the JSON line) is in walkthrough_common.py beside it.
"""

import argparse
import base64
import hashlib
import http.server
import json
import os
import secrets
import sys
import tempfile
import time
import urllib.error
import urllib.parse
import urllib.request

from selenium.webdriver.common.by import By
from selenium.webdriver.support import expected_conditions

# walkthrough_common.py beside this script, whatever the working directory; no __pycache__ left in the source tree.
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
sys.dont_write_bytecode = True
import walkthrough_common
from walkthrough_common import Results, console_problems, finish, new_browser, run, serve, wait_for

WINDOW = (1000, 900)


# The app: a loopback HTTP server that records where the browser arrived.

class AppHandler(http.server.BaseHTTPRequestHandler):
    arrivals = []  # (path, query dict) in order; appended from the server's thread

    def do_GET(self):
        parts = urllib.parse.urlsplit(self.path)
        if parts.path == "/favicon.ico":  # the browser asks for it on every page: not an arrival
            self.send_response(204)
            self.end_headers()
            return
        query = dict(urllib.parse.parse_qsl(parts.query, keep_blank_values=True))
        AppHandler.arrivals.append((parts.path, query))
        body = ("<!doctype html><html><head><title>The app</title></head><body><h1>The app</h1><p id='path'>%s</p></body></html>"
                % parts.path).encode()
        self.send_response(200 if parts.path in ("/cb", "/signed-out") else 404)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):
        pass  # quiet: the JSON line is the output


# OAuth helpers.

def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt_part(token, index):
    part = token.split(".")[index]
    return json.loads(base64.urlsafe_b64decode(part + "=" * (-len(part) % 4)))


class Authorization:
    """One authorization request: fresh state, nonce and PKCE verifier."""

    def __init__(self, issuer, client_id, redirect_uri):
        self.state = secrets.token_urlsafe(16)
        self.nonce = secrets.token_urlsafe(16)
        self.verifier = secrets.token_urlsafe(48)
        challenge = b64url(hashlib.sha256(self.verifier.encode()).digest())
        self.url = issuer + "/oauth2/authorize?" + urllib.parse.urlencode({
            "response_type": "code", "client_id": client_id, "redirect_uri": redirect_uri, "scope": "openid profile",
            "state": self.state, "nonce": self.nonce, "code_challenge": challenge, "code_challenge_method": "S256"})


def post_form(url, fields, timeout=15):
    request = urllib.request.Request(url, data=urllib.parse.urlencode(fields).encode(), method="POST",
                                     headers={"Content-Type": "application/x-www-form-urlencoded", "Accept": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=timeout) as response:
            return response.status, json.loads(response.read())
    except urllib.error.HTTPError as error:
        return error.code, json.loads(error.read() or b"null")


def get_json(url, timeout=15):
    with urllib.request.urlopen(url, timeout=timeout) as response:
        return json.loads(response.read())


# Browser helpers.

def wait_for_url(driver, prefix, what):
    wait_for(driver, lambda d: d.current_url.startswith(prefix), what)
    return driver.current_url


def hosted_stylesheet(driver, results, name):
    """The stylesheet's card: <main> has a 12 px radius and is at most 28rem (448 px) wide. Plain HTML would not."""
    style = driver.execute_script(
        "const m = document.querySelector('main'); if (!m) return null; const s = getComputedStyle(m);"
        "return {radius: s.borderTopLeftRadius, width: m.getBoundingClientRect().width,"
        " sheets: document.styleSheets.length};")
    results.check(style is not None and style["radius"] == "12px" and style["width"] <= 448.5 and style["sheets"] == 1,
                  "%s: the stylesheet did not apply (%r)" % (name, style))


def shoot(driver, results, out, name, texts, origin, styled=True, status=None):
    """walkthrough_common.shoot for a hosted page: WINDOW; with `styled`, Latch's stylesheet is checked too; the
    failed load tolerated for `status` is the page's own."""
    walkthrough_common.shoot(driver, results, out, name, texts, origin, WINDOW, hosted_stylesheet if styled else None,
                             status, only_the_document=True)


def arrival(results, path, what):
    """The app's last arrival, which must be at `path`."""
    results.check(bool(AppHandler.arrivals) and AppHandler.arrivals[-1][0] == path,
                  "%s: the app's last request was %r, not %s" % (what, AppHandler.arrivals[-1:] or None, path))
    return AppHandler.arrivals[-1][1] if AppHandler.arrivals else {}


# The walk.

def walk(args, results, browsers):
    issuer, upstream = args.issuer, args.upstream_issuer
    app = "http://127.0.0.1:%d" % args.app_port
    callback, signed_out = app + "/cb", app + "/signed-out"
    idps = [tuple(value.split(":", 1)) for value in args.idp]
    first_id, first_name = idps[0]

    driver = new_browser(tempfile.mkdtemp(prefix="latch-chromium-", dir=args.out_profiles), WINDOW, "en-US")
    browsers.append(driver)
    console_problems(driver, issuer)  # start the log fresh
    before = get_json(upstream + "/test/state")  # the upstream's counters before this walk

    def upstream_delta(name):
        return get_json(upstream + "/test/state").get(name, 0) - before.get(name, 0)

    # 1. The chooser, the upstream's form, back at the app; the code for tokens.
    first = Authorization(issuer, args.client_id, callback)
    driver.get(first.url)
    wait_for(driver, expected_conditions.presence_of_element_located((By.ID, "idp-" + first_id)), "the chooser")
    results.check(driver.current_url.startswith(issuer + "/oauth2/authorize"), "1: the chooser is at %s" % driver.current_url)
    results.check(driver.title == "Choose how to sign in", "1: the chooser's title is %r" % driver.title)
    results.check(driver.find_element(By.TAG_NAME, "html").get_attribute("lang") == "en", "1: the chooser is not lang=en")
    for idp_id, _ in idps:
        link = driver.find_elements(By.ID, "idp-" + idp_id)
        results.check(len(link) == 1 and link[0].is_displayed(), "1: no visible chooser link idp-%s" % idp_id)
    shoot(driver, results, args.out, "01-chooser.png",
          ["Choose how to sign in"] + ["Continue with " + name for _, name in idps], issuer)
    driver.find_element(By.ID, "idp-" + first_id).click()
    wait_for(driver, expected_conditions.presence_of_element_located((By.NAME, "username")), "the upstream's login form")
    results.check(driver.current_url.startswith(upstream + "/authorize"), "1: the login form is at %s" % driver.current_url)
    results.check(driver.title == "Upstream sign-in", "1: the upstream page's title is %r" % driver.title)
    shoot(driver, results, args.out, "02-upstream-login.png", [], issuer, styled=False)
    driver.find_element(By.NAME, "username").send_keys(args.user)
    driver.find_element(By.NAME, "password").send_keys(args.password)
    driver.find_element(By.ID, "sign-in").click()
    wait_for_url(driver, callback + "?", "the return to the app after the upstream sign-in")
    query = arrival(results, "/cb", "1")
    results.check(query.get("state") == first.state, "1: state came back as %r" % query.get("state"))
    results.check(query.get("iss") == issuer, "1: iss came back as %r" % query.get("iss"))
    results.check(bool(query.get("code")) and "error" not in query, "1: no code came back: %r" % query)
    status, tokens = post_form(issuer + "/oauth2/token", {
        "grant_type": "authorization_code", "code": query.get("code", ""), "redirect_uri": callback,
        "code_verifier": first.verifier, "client_id": args.client_id})
    results.check(status == 200 and isinstance(tokens, dict) and tokens.get("id_token") and tokens.get("access_token"),
                  "1: the token endpoint answered %s %r" % (status, tokens))
    if status == 200 and isinstance(tokens, dict) and tokens.get("id_token"):
        claims = jwt_part(tokens["id_token"], 1)
        results.check(claims.get("nonce") == first.nonce, "1: the ID token's nonce is %r" % claims.get("nonce"))
        results.check(claims.get("iss") == issuer and claims.get("aud") in (args.client_id, [args.client_id]),
                      "1: the ID token's iss/aud are %r/%r" % (claims.get("iss"), claims.get("aud")))
    # The code is spent: a second exchange fails.
    again, _ = post_form(issuer + "/oauth2/token", {
        "grant_type": "authorization_code", "code": query.get("code", ""), "redirect_uri": callback,
        "code_verifier": first.verifier, "client_id": args.client_id})
    results.check(again == 400, "1: a replayed code answered %s" % again)
    results.check(upstream_delta("logins") == 1, "1: the upstream counted %d password sign-ins" % upstream_delta("logins"))
    cookies = {cookie["name"] for cookie in driver.get_cookies()}
    results.check("latch_session" in cookies, "1: no latch_session cookie in the browser (%r)" % sorted(cookies))

    # 2. Single sign-on: a second authorize comes straight back with a code.
    arrivals_before = len(AppHandler.arrivals)
    second = Authorization(issuer, args.client_id, callback)
    driver.get(second.url)
    wait_for_url(driver, callback + "?", "the single sign-on return to the app")
    query = arrival(results, "/cb", "2")
    results.check(len(AppHandler.arrivals) == arrivals_before + 1, "2: the app was visited %d times"
                  % (len(AppHandler.arrivals) - arrivals_before))
    results.check(query.get("state") == second.state and query.get("iss") == issuer and query.get("code"),
                  "2: single sign-on came back with %r" % query)
    status, tokens = post_form(issuer + "/oauth2/token", {
        "grant_type": "authorization_code", "code": query.get("code", ""), "redirect_uri": callback,
        "code_verifier": second.verifier, "client_id": args.client_id})
    results.check(status == 200 and isinstance(tokens, dict) and tokens.get("id_token")
                  and jwt_part(tokens["id_token"], 1).get("nonce") == second.nonce,
                  "2: the single sign-on code's exchange answered %s %r" % (status, tokens))
    results.check(upstream_delta("logins") == 1 and upstream_delta("authorizations") == 1,
                  "2: single sign-on went to the upstream (%d sign-ins, %d authorizations there)"
                  % (upstream_delta("logins"), upstream_delta("authorizations")))
    # The tokens refresh like any others (the refresh token rotates).
    refresh_token = tokens.get("refresh_token", "") if isinstance(tokens, dict) else ""
    status, refreshed = post_form(issuer + "/oauth2/token", {"grant_type": "refresh_token", "refresh_token": refresh_token})
    results.check(status == 200 and isinstance(refreshed, dict) and refreshed.get("refresh_token") not in (None, refresh_token),
                  "2: refreshing answered %s %r" % (status, refreshed))
    if status == 200 and isinstance(refreshed, dict):
        refresh_token = refreshed.get("refresh_token", "")

    # 3. Sign-out without id_token_hint: the confirmation page, then through the upstream back to the app.
    logout_state = secrets.token_urlsafe(12)
    driver.get(issuer + "/oauth2/logout?" + urllib.parse.urlencode(
        {"client_id": args.client_id, "post_logout_redirect_uri": signed_out, "state": logout_state}))
    wait_for(driver, expected_conditions.presence_of_element_located((By.ID, "sign-out")), "the sign-out confirmation")
    results.check(driver.title == "Sign out?", "3: the confirmation page's title is %r" % driver.title)
    shoot(driver, results, args.out, "03-confirm-sign-out.png",
          ["Sign out?", "You are signed in to this service in this browser. Sign out now?", "Sign out"], issuer)
    driver.find_element(By.ID, "sign-out").click()
    # The form posts to Latch, which redirects through the upstream's end-session endpoint back to the app. A CSP
    # violation on the way ends the wait at once: the browser stays on the form and nothing else happens.
    violations = []

    def back_or_blocked(d):
        if d.current_url.startswith(signed_out):
            return True
        violations.extend(problem for problem in console_problems(d, issuer) if "Content Security Policy" in problem)
        return bool(violations)

    wait_for(driver, back_or_blocked, "the return to the app's post-logout URI")
    if violations:
        # Not fatal for the rest of the walk: recorded, then steps 4 to 6 go on.
        results.check(False, "3: the sign-out did not come back to the app (the browser is at %s): CSP blocked it: %r"
                      % (driver.current_url, violations))
    else:
        query = arrival(results, "/signed-out", "3")
        results.check(query == {"state": logout_state}, "3: the post-logout redirect carried %r" % query)
        results.check(upstream_delta("logouts") == 1 and get_json(upstream + "/test/state").get("last_logout_id_token_hint"),
                      "3: the upstream's end-session endpoint was not visited once with a hint (%d visits)"
                      % upstream_delta("logouts"))
        cookies = {cookie["name"] for cookie in driver.get_cookies()}
        results.check("latch_session" not in cookies, "3: latch_session is still in the browser (%r)" % sorted(cookies))
        problems = console_problems(driver, issuer)
        results.check(not problems, "3: console problems during sign-out: %r" % problems)
    # Federated sign-out leaves the app's tokens alone: they still refresh.
    status, _ = post_form(issuer + "/oauth2/token", {"grant_type": "refresh_token", "refresh_token": refresh_token})
    results.check(status == 200, "3: after the browser sign-out the app's refresh answered %s" % status)
    # Signed out: a new authorize shows the chooser again.
    driver.get(Authorization(issuer, args.client_id, callback).url)
    wait_for(driver, expected_conditions.presence_of_element_located((By.ID, "idp-" + first_id)),
             "the chooser after sign-out (no single sign-on any more)")

    # 4. The signed-out page.
    driver.get(issuer + "/oauth2/logout")
    wait_for(driver, expected_conditions.title_is("You are signed out"), "the signed-out page")
    shoot(driver, results, args.out, "04-signed-out.png",
          ["You are signed out", "You have been signed out of this service in this browser."], issuer)

    # 5. The error page: a redirect URI the client did not register; the browser stays at Latch.
    driver.get(Authorization(issuer, args.client_id, "https://app.invalid/cb").url)
    wait_for(driver, expected_conditions.presence_of_element_located((By.ID, "error-code")), "the error page")
    results.check(driver.current_url.startswith(issuer + "/oauth2/authorize"), "5: the error page is at %s" % driver.current_url)
    code = driver.find_element(By.ID, "error-code").text
    results.check(code == "unregistered_redirect_uri", "5: #error-code is %r" % code)
    shoot(driver, results, args.out, "05-error.png",
          ["Sign-in could not continue", "The app asked to come back to an address it has not registered.",
           "Error code: unregistered_redirect_uri"], issuer, status=400)

    # 6. A German browser: the chooser in German.
    german = new_browser(tempfile.mkdtemp(prefix="latch-chromium-", dir=args.out_profiles), WINDOW, "de")
    browsers.append(german)
    console_problems(german, issuer)
    german.get(Authorization(issuer, args.client_id, callback).url)
    wait_for(german, expected_conditions.presence_of_element_located((By.ID, "idp-" + first_id)), "the German chooser")
    results.check(german.title == "Anmeldung auswählen", "6: the German chooser's title is %r" % german.title)
    results.check(german.find_element(By.TAG_NAME, "html").get_attribute("lang") == "de", "6: the chooser is not lang=de")
    shoot(german, results, args.out, "06-chooser-de.png",
          ["Anmeldung auswählen", "Melden Sie sich mit dem Konto Ihrer Organisation an"]
          + ["Weiter mit " + name for _, name in idps], issuer)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--issuer", required=True, help="Latch's issuer, http://127.0.0.1:PORT")
    parser.add_argument("--upstream-issuer", required=True, help="the upstream provider's issuer (its /test/state is read)")
    parser.add_argument("--app-port", type=int, required=True, help="port of the app's loopback server (registered URIs)")
    parser.add_argument("--idp", action="append", required=True, help="id:display name of an allowed upstream (the first is used)")
    parser.add_argument("--client-id", default="default")
    parser.add_argument("--user", default="alice")
    parser.add_argument("--password", default="password")
    parser.add_argument("--out", required=True, help="folder for the screenshots")
    args = parser.parse_args()
    for url in (args.issuer, args.upstream_issuer):
        if not url.startswith("http://127.0.0.1:"):
            parser.error("only loopback: %s" % url)
    os.makedirs(args.out, exist_ok=True)
    started = time.monotonic()
    results = Results()
    app = serve(AppHandler, args.app_port)
    try:
        error, unexpected = run(walk, args, results, "latch-browser-profiles-")
    finally:
        app.shutdown()
    finish("hosted-pages", results, started, error, unexpected, app_requests=[path for path, _ in AppHandler.arrivals])


if __name__ == "__main__":
    main()
