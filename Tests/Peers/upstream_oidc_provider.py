#!/usr/bin/env python3
"""A real OpenID Connect provider for Latch's federation tests: the "customer's identity provider".

Built on Authlib (AuthorizationServer, AuthorizationCodeGrant, OpenIDCode, CodeChallenge, JWTBearerClientAssertion)
and Flask, served by Werkzeug on 127.0.0.1 only. Everything lives in memory and is lost when the process ends.

    python3 upstream_oidc_provider.py --port 0 --issuer-host 127.0.0.1 --client-id ID --client-secret SECRET \
        --redirect-uri URI [--redirect-uri URI2 ...] [--user alice:password:alice@example.com:Alice Liddell ...] \
        [--alg RS256|ES256] [--client-jwks-uri URI]

Once bound it prints exactly one line, `listening on port N`, to stdout; the issuer is then http://<issuer-host>:N.
SIGTERM (or SIGINT) stops it with exit status 0. Without --user there is one user, alice / password.

Standard endpoints: /.well-known/openid-configuration, /jwks, /authorize (GET), /login (POST, the login form's
target), /token (POST), /userinfo (GET/POST, Bearer), /logout (GET/POST, RP-initiated logout).

How it behaves:
  - /authorize requires client_id, an exactly registered redirect_uri (else an HTTP 400 page, never a redirect),
    response_type=code, a scope within openid/profile/email that includes openid, state, nonce and PKCE S256
    (else a redirect back with error=...). Every redirect back carries `iss` (RFC 9207).
  - Without a session it shows the login form: inputs `username`, `password` and a hidden `pending` (the
    authorization request's query string, base64url-encoded: post it back unchanged), button id `sign-in`.
    A signed-in browser (cookie `upstream_idp_session`, set by /login) gets its code at once unless prompt=login;
    prompt=none without a session is error=login_required.
  - Codes live 60 s and are spent when first presented; access and ID tokens live 300 s. The subject is
    `user-<username>`. Client authentication: client_secret_basic, client_secret_post, and private_key_jwt when
    --client-jwks-uri names the client's JWKS (read at each token request; aud may be the issuer or /token).

Test-control endpoints (only on this test peer):
  POST /test/misbehave  {"mode": M}  From now on (until set back to "none") the provider misbehaves:
        wrong_nonce, wrong_aud, wrong_iss, expired (exp an hour ago), bad_signature (one signature byte flipped),
        alg_none (unsigned), hs256 (HMAC with the client secret, kid of the real key), unknown_kid (a fresh key
        not in the JWKS) change the ID tokens issued; error_response makes /authorize redirect back with
        error=access_denied&error_description=User+denied; token_500 makes /token answer HTTP 500; slow_token
        makes /token sleep 20 s before answering normally; stale_auth_time says the user authenticated an hour ago
        (whatever prompt=login or max_age asked), no_auth_time leaves auth_time out of the ID token.
  GET  /test/state      {"logins": password sign-ins, "failed_logins", "authorizations": codes issued,
                         "token_requests", "logouts", "last_logout_id_token_hint" (null when none was given),
                         "last_token_auth_method", "misbehave", "kid": the current signing key's}
  POST /test/rotate-keys  A new signing key with a new kid replaces the current one in the JWKS: {"kid": new}.
"""

import argparse
import base64
import hmac
import html
import json
import os
import secrets
import signal
import sys
import threading
import time
import urllib.request
import warnings
from urllib.parse import urlsplit

# Authlib refuses plain http unless told otherwise; this provider only ever listens on loopback.
os.environ["AUTHLIB_INSECURE_TRANSPORT"] = "1"

from flask import Flask, Request, Response, jsonify, request
from joserfc import jwt
from joserfc.jwk import ECKey, KeySet, OctKey, RSAKey
from werkzeug.serving import make_server

from authlib.common.urls import add_params_to_uri
from authlib.integrations.flask_oauth2 import AuthorizationServer, ResourceProtector, current_token
from authlib.integrations.flask_oauth2.requests import FlaskOAuth2Request
from authlib.oauth2 import OAuth2Error
from authlib.oauth2.rfc6749 import AccessDeniedError, ClientMixin, InvalidClientError, InvalidRequestError
from authlib.oauth2.rfc6749 import InvalidScopeError, TokenMixin
from authlib.oauth2.rfc6749.grants import AuthorizationCodeGrant
from authlib.oauth2.rfc6750 import BearerTokenValidator
from authlib.oauth2.rfc7523 import JWTBearerClientAssertion
from authlib.oauth2.rfc7636 import CodeChallenge
from authlib.oidc.core import AuthorizationCodeMixin
from authlib.oidc.core.grants import OpenIDCode
from authlib.oidc.core.util import create_half_hash

MODES = ["none", "wrong_nonce", "wrong_aud", "wrong_iss", "expired", "bad_signature", "alg_none", "hs256",
         "unknown_kid", "error_response", "token_500", "slow_token", "stale_auth_time", "no_auth_time"]
SCOPES = ["openid", "profile", "email"]
AUTH_METHODS = ["client_secret_basic", "client_secret_post", "private_key_jwt"]
SESSION_COOKIE = "upstream_idp_session"
CODE_LIFETIME, TOKEN_LIFETIME = 60, 300

# ---------------------------------------------------------------------------------------------------------------
# In-memory state. Werkzeug serves each request on its own thread, so every change happens under LOCK.
# ---------------------------------------------------------------------------------------------------------------
LOCK = threading.Lock()
CONFIG = argparse.Namespace()  # the command line, plus .issuer once the port is known
USERS = {}  # username -> {"password", "email", "name"}
CODES = {}  # authorization code -> Code
TOKENS = {}  # access token -> Token
SESSIONS = {}  # session-cookie value -> {"user", "auth_time"}
USED_NONCES = set()  # nonces already bound to an issued code (a repeat is a replay)
USED_JTIS = set()  # private_key_jwt assertion ids already seen
KEYS = {"current": None, "retired": []}  # the signing key, and earlier ones (still accepted in id_token_hint)
STATE = {"logins": 0, "failed_logins": 0, "authorizations": 0, "token_requests": 0, "logouts": 0,
         "last_logout_id_token_hint": None, "last_token_auth_method": None, "misbehave": "none"}


def new_signing_key():
    """A fresh private key for CONFIG.alg whose kid is its RFC 7638 thumbprint."""
    params = {"use": "sig", "alg": CONFIG.alg}
    if CONFIG.alg == "ES256":
        key = ECKey.generate_key("P-256", parameters=params, private=True)
    else:
        key = RSAKey.generate_key(2048, parameters=params, private=True)
    key.ensure_kid()
    return key


def b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


class Client(ClientMixin):
    """The single registered client: Latch."""

    def get_client_id(self):
        return CONFIG.client_id

    def get_default_redirect_uri(self):
        return None  # OIDC requires redirect_uri; without it Authlib answers with an error page, not a redirect

    def get_allowed_scope(self, scope):
        return " ".join(s for s in (scope or "").split() if s in SCOPES)

    def check_redirect_uri(self, redirect_uri):
        return redirect_uri in CONFIG.redirect_uri  # exact string comparison

    def check_client_secret(self, client_secret):
        return hmac.compare_digest(client_secret.encode(), CONFIG.client_secret.encode())

    def check_endpoint_auth_method(self, method, endpoint):
        return endpoint == "token" and method in AUTH_METHODS

    def check_response_type(self, response_type):
        return response_type == "code"

    def check_grant_type(self, grant_type):
        return grant_type == "authorization_code"  # so no refresh tokens are issued


CLIENT = Client()


class Code(AuthorizationCodeMixin):
    """An issued authorization code and everything the token request needs from the authorization request."""

    def __init__(self, user, redirect_uri, scope, nonce, auth_time, challenge, method):
        self.user, self.redirect_uri, self.scope = user, redirect_uri, scope
        self.nonce, self.auth_time = nonce, auth_time
        self.code_challenge, self.code_challenge_method = challenge, method
        self.expires_at = time.time() + CODE_LIFETIME

    def get_redirect_uri(self):
        return self.redirect_uri

    def get_scope(self):
        return self.scope

    def get_nonce(self):
        return self.nonce

    def get_auth_time(self):
        return self.auth_time


class Token(TokenMixin):
    """An opaque access token, good at /userinfo for TOKEN_LIFETIME seconds."""

    def __init__(self, user, scope):
        self.user, self.scope, self.expires_at = user, scope, time.time() + TOKEN_LIFETIME

    def get_scope(self):
        return self.scope

    def is_expired(self):
        return time.time() >= self.expires_at

    def is_revoked(self):
        return False


class CodeGrant(AuthorizationCodeGrant):
    """Authlib's authorization-code grant, stricter where OIDC and the tests want it."""

    TOKEN_ENDPOINT_AUTH_METHODS = AUTH_METHODS

    def validate_authorization_request(self):
        redirect_uri = super().validate_authorization_request()  # client, exact redirect_uri, scopes, nonce, PKCE
        payload = self.request.payload
        if "openid" not in (payload.scope or "").split():
            raise InvalidScopeError("The scope must include 'openid'.", redirect_uri=redirect_uri)
        if not payload.state:
            raise InvalidRequestError("Missing 'state'.", redirect_uri=redirect_uri)
        return redirect_uri

    def create_authorization_response(self, redirect_uri, grant_user):
        if grant_user is None:  # the error_response misbehaviour: "the user said no"
            raise AccessDeniedError("User denied", redirect_uri=redirect_uri)
        return super().create_authorization_response(redirect_uri, grant_user)

    def save_authorization_code(self, code, request):
        data = request.payload.data
        with LOCK:
            CODES[code] = Code(request.user["username"], request.payload.redirect_uri, request.scope,
                               data.get("nonce"), request.user["auth_time"], data.get("code_challenge"),
                               data.get("code_challenge_method"))
            USED_NONCES.add(data.get("nonce"))
            STATE["authorizations"] += 1

    def query_authorization_code(self, code, client):
        # Spent as soon as it is presented (whatever the outcome), so a code works at most once, even when raced.
        with LOCK:
            found = CODES.pop(code, None)
        if found and found.expires_at > time.time() and client.get_client_id() == CONFIG.client_id:
            return found
        return None

    def delete_authorization_code(self, authorization_code):
        pass  # already removed by query_authorization_code

    def authenticate_user(self, authorization_code):
        return {"username": authorization_code.user, "auth_time": authorization_code.auth_time}


class RequiredS256(CodeChallenge):
    """PKCE with S256 on every authorization request (Authlib alone requires it only of public clients)."""

    SUPPORTED_CODE_CHALLENGE_METHOD = ["S256"]

    def validate_code_challenge(self, grant, redirect_uri):
        data = grant.request.payload.data
        if not data.get("code_challenge"):
            raise InvalidRequestError("PKCE is required: missing 'code_challenge'.")
        if data.get("code_challenge_method") != "S256":
            raise InvalidRequestError("'code_challenge_method' must be S256.")
        super().validate_code_challenge(grant, redirect_uri)


class IDTokens(OpenIDCode):
    """Authlib's OpenID extension of the code grant; ID tokens are built here so /test/misbehave can spoil them."""

    def exists_nonce(self, nonce, request):
        with LOCK:
            return nonce in USED_NONCES

    def get_client_algorithm(self, client):
        return CONFIG.alg

    def generate_user_info(self, user, scope):
        info = USERS[user["username"]]
        return {"sub": "user-" + user["username"], "email": info["email"], "email_verified": True,
                "name": info["name"], "preferred_username": user["username"]}

    def encode_id_token(self, token, request):
        now, code = int(time.time()), request.authorization_code
        claims = {"iss": CONFIG.issuer, "aud": CONFIG.client_id, "iat": now, "exp": now + TOKEN_LIFETIME,
                  "auth_time": code.get_auth_time(), "nonce": code.get_nonce(),
                  "at_hash": create_half_hash(token["access_token"], CONFIG.alg).decode("ascii"),
                  **self.generate_user_info(request.user, token["scope"])}
        mode = STATE["misbehave"]
        if mode == "wrong_nonce":
            claims["nonce"] = "not-" + (claims["nonce"] or "")
        elif mode == "wrong_aud":
            claims["aud"] = "someone-else"
        elif mode == "wrong_iss":
            claims["iss"] = "https://impostor.example"
        elif mode == "expired":
            claims["iat"], claims["exp"] = now - 3600 - TOKEN_LIFETIME, now - 3600
        elif mode == "stale_auth_time":
            claims["auth_time"] = now - 3600
        elif mode == "no_auth_time":
            del claims["auth_time"]
        return sign_id_token(claims, mode)


def sign_id_token(claims, mode):
    """The compact JWS of the ID token: signed with the current key, or wrong in the way `mode` asks."""
    key = KEYS["current"]
    if mode == "alg_none":  # built by hand: no JOSE library will produce it
        header = b64url(json.dumps({"alg": "none", "typ": "JWT"}).encode())
        return header + "." + b64url(json.dumps(claims).encode()) + "."
    if mode == "hs256":  # the classic confusion attack: HMAC keyed with the client secret, the real key's kid
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")  # joserfc warns about short HMAC keys
            return jwt.encode({"alg": "HS256", "kid": key.kid}, claims, OctKey.import_key(CONFIG.client_secret),
                              ["HS256"])
    if mode == "unknown_kid":
        key = new_signing_key()  # never published
    token = jwt.encode({"alg": CONFIG.alg, "kid": key.kid}, claims, key, [CONFIG.alg])
    if mode == "bad_signature":
        head, body, sig = token.split(".")
        raw = bytearray(base64.urlsafe_b64decode(sig + "=" * (-len(sig) % 4)))
        raw[len(raw) // 2] ^= 0x01
        token = ".".join([head, body, b64url(bytes(raw))])
    return token


class PrivateKeyJWT(JWTBearerClientAssertion):
    """private_key_jwt client authentication (RFC 7523): the client's keys are read from --client-jwks-uri at each
    token request, so a rotation on the client's side is seen at once. Without that option it always fails."""

    CLIENT_AUTH_METHOD = "private_key_jwt"

    def get_audiences(self):
        return [CONFIG.issuer + "/token", CONFIG.issuer]

    def validate_jti(self, claims, jti):
        with LOCK:
            if jti in USED_JTIS:
                return False
            USED_JTIS.add(jti)
            return True

    def resolve_client_public_key(self, client):
        if not CONFIG.client_jwks_uri:
            raise InvalidClientError(description="private_key_jwt needs --client-jwks-uri on this provider")
        try:
            with urllib.request.urlopen(CONFIG.client_jwks_uri, timeout=5) as answer:
                return KeySet.import_key_set(json.load(answer))
        except Exception as failure:
            raise InvalidClientError(description=f"the client's JWKS cannot be read: {failure}") from failure


class Server(AuthorizationServer):
    def create_oauth2_request(self, rebuilt):
        # The authorization request is read from the current HTTP request, or (at /login) from a rebuilt one.
        return FlaskOAuth2Request(rebuilt if rebuilt is not None else request)

    def handle_response(self, status_code, payload, headers):
        # RFC 9207: every authorization response (code or error) carries `iss`.
        if status_code == 302:
            headers = [(k, add_params(v, iss=CONFIG.issuer) if k == "Location" else v) for k, v in headers]
        return super().handle_response(status_code, payload, headers)

    def send_signal(self, name, *args, **kwargs):
        if name == "after_authenticate_client":  # so tests can see which client authentication Latch used
            with LOCK:
                STATE["last_token_auth_method"] = kwargs["grant"].request.auth_method


def add_params(uri, **params):
    return add_params_to_uri(uri, list(params.items()))


class AccessTokens(BearerTokenValidator):
    def authenticate_token(self, token_string):
        with LOCK:
            return TOKENS.get(token_string)


def save_token(token, request):
    with LOCK:
        TOKENS[token["access_token"]] = Token(request.user["username"], token.get("scope", ""))


app = Flask(__name__)
app.config["OAUTH2_SCOPES_SUPPORTED"] = SCOPES
app.config["OAUTH2_TOKEN_EXPIRES_IN"] = {"authorization_code": TOKEN_LIFETIME}
server = Server(app, query_client=lambda client_id: CLIENT if client_id == CONFIG.client_id else None,
                save_token=save_token)
server.register_grant(CodeGrant, [RequiredS256(required=True), IDTokens(require_nonce=True)])
server.register_client_auth_method("private_key_jwt", PrivateKeyJWT())
require_oauth = ResourceProtector()
require_oauth.register_token_validator(AccessTokens())


# ---------------------------------------------------------------------------------------------------------------
# Pages
# ---------------------------------------------------------------------------------------------------------------
def page(title, body, status=200):
    text = (f"<!doctype html><html><head><meta charset=\"utf-8\"><title>{html.escape(title)}</title></head>"
            f"<body><h1>Example Upstream IdP</h1>{body}</body></html>")
    return Response(text, status=status, content_type="text/html; charset=utf-8")


def login_form(pending, error=None):
    """The login page. `pending` is the authorization request's query string, base64url-encoded (no HTML escaping
    needed); the browser posts it back untouched so /login can resume that request."""
    message = f'<p id="error" role="alert">{html.escape(error)}</p>' if error else ""
    return page("Upstream sign-in", f"""{message}
<form method="post" action="/login">
  <label>Username <input name="username" autocomplete="username"></label>
  <label>Password <input name="password" type="password" autocomplete="current-password"></label>
  <input type="hidden" name="pending" value="{pending}">
  <button type="submit" id="sign-in">Sign in</button>
</form>""")


def error_page(error, status=400):
    return page("Upstream error", f"<p>{html.escape(error.error)}: {html.escape(error.description or '')}</p>",
                status)


def session_user():
    """The user signed in by this browser's session cookie, or None."""
    with LOCK:
        found = SESSIONS.get(request.cookies.get(SESSION_COOKIE, ""))
    return dict(found) if found else None


def authorize(authorization_request, user, just_signed_in=False):
    """Validates the authorization request with Authlib (`None`: the current HTTP request) and answers with the
    login form (no session, or prompt=login), a redirect with a code, or an error (a page or a redirect)."""
    try:
        grant = server.get_consent_grant(authorization_request, end_user=user)
    except OAuth2Error as error:
        if not error.redirect_uri:  # unknown client or unregistered redirect_uri: never redirect
            return error_page(error)
        return server.handle_error_response(None, error)
    if STATE["misbehave"] == "error_response":
        return server.create_authorization_response(authorization_request, grant_user=None, grant=grant)
    if user is None or (grant.prompt == "login" and not just_signed_in):
        query = (authorization_request or request).query_string
        return login_form(b64url(query))
    return server.create_authorization_response(authorization_request, grant_user=user, grant=grant)


@app.get("/authorize")
def authorize_endpoint():
    return authorize(None, session_user())


@app.post("/login")
def login():
    pending = request.form.get("pending", "")
    try:
        query = base64.urlsafe_b64decode(pending + "=" * (-len(pending) % 4))
    except ValueError:
        return page("Upstream error", "<p>invalid pending request</p>", 400)
    resumed = Request.from_values(base_url=CONFIG.issuer, path="/authorize", query_string=query.decode("latin-1"))
    username, password = request.form.get("username", ""), request.form.get("password", "")
    known = USERS.get(username)
    if not known or not hmac.compare_digest(known["password"].encode(), password.encode()):
        with LOCK:
            STATE["failed_logins"] += 1
        try:  # a tampered pending request is still never shown a form
            server.get_consent_grant(resumed, end_user=None)
        except OAuth2Error as error:
            if not error.redirect_uri:
                return error_page(error)
        return login_form(pending, "Wrong username or password")
    sid, user = secrets.token_urlsafe(32), {"username": username, "auth_time": int(time.time())}
    with LOCK:
        SESSIONS[sid] = user
        STATE["logins"] += 1
    response = authorize(resumed, user, just_signed_in=True)
    if response.status_code == 302:
        response.set_cookie(SESSION_COOKIE, sid, httponly=True, samesite="Lax", path="/")
    return response


@app.post("/token")
def token_endpoint():
    with LOCK:
        STATE["token_requests"] += 1
    mode = STATE["misbehave"]
    if mode == "token_500":
        return Response("Internal Server Error (test misbehave token_500)", status=500, content_type="text/plain")
    if mode == "slow_token":
        time.sleep(20)
    return server.create_token_response()


@app.route("/userinfo", methods=["GET", "POST"])
@require_oauth("openid")
def userinfo():
    username = current_token.user
    info = USERS[username]
    return jsonify(sub="user-" + username, email=info["email"], email_verified=True, name=info["name"],
                   preferred_username=username, groups=["staff"])


def post_logout_uri_allowed(uri):
    """One of the redirect URIs, or any URI on the same scheme://host:port as one of them."""
    origin = lambda u: (urlsplit(u).scheme, urlsplit(u).netloc)
    return uri in CONFIG.redirect_uri or any(origin(uri) == origin(r) for r in CONFIG.redirect_uri)


@app.route("/logout", methods=["GET", "POST"])
def logout():
    hint = request.values.get("id_token_hint")
    target, state = request.values.get("post_logout_redirect_uri"), request.values.get("state")
    subject = None
    if hint:  # the OP must check it issued the hint; expired hints are fine, any key this process used is fine
        with LOCK:
            keys = KeySet([KEYS["current"], *KEYS["retired"]])
        try:
            claims = jwt.decode(hint, keys, algorithms=[CONFIG.alg]).claims
            if claims.get("iss") != CONFIG.issuer:
                raise ValueError("iss")
            subject = claims.get("sub")
        except Exception:
            return page("Upstream error", "<p>invalid_request: id_token_hint was not issued here</p>", 400)
    if target and not post_logout_uri_allowed(target):
        return page("Upstream error", "<p>invalid_request: post_logout_redirect_uri is not registered</p>", 400)
    with LOCK:
        SESSIONS.pop(request.cookies.get(SESSION_COOKIE, ""), None)
        for sid in [s for s, u in SESSIONS.items() if subject and "user-" + u["username"] == subject]:
            del SESSIONS[sid]  # with a valid hint, end every session of that user
        STATE["logouts"] += 1
        STATE["last_logout_id_token_hint"] = hint
    if target:
        response = Response(status=302, headers={"Location": add_params(target, state=state) if state else target})
    else:
        response = page("Signed out", "<p>Signed out</p>")
    response.delete_cookie(SESSION_COOKIE, path="/")
    return response


@app.get("/.well-known/openid-configuration")
def discovery():
    issuer = CONFIG.issuer
    return jsonify(
        issuer=issuer, authorization_endpoint=issuer + "/authorize", token_endpoint=issuer + "/token",
        userinfo_endpoint=issuer + "/userinfo", jwks_uri=issuer + "/jwks", end_session_endpoint=issuer + "/logout",
        response_types_supported=["code"], response_modes_supported=["query"], subject_types_supported=["public"],
        id_token_signing_alg_values_supported=[CONFIG.alg], code_challenge_methods_supported=["S256"],
        token_endpoint_auth_methods_supported=AUTH_METHODS,
        token_endpoint_auth_signing_alg_values_supported=["RS256", "PS256", "ES256", "EdDSA"],
        grant_types_supported=["authorization_code"], scopes_supported=SCOPES,
        claims_supported=["iss", "sub", "aud", "exp", "iat", "auth_time", "nonce", "at_hash", "email",
                          "email_verified", "name", "preferred_username", "groups"],
        prompt_values_supported=["none", "login"], authorization_response_iss_parameter_supported=True)


@app.get("/jwks")
def jwks():
    with LOCK:
        key = KEYS["current"]
    return jsonify(keys=[key.as_dict(private=False)])


@app.post("/test/misbehave")
def misbehave():
    mode = (request.get_json(force=True, silent=True) or {}).get("mode")
    if mode not in MODES:
        return jsonify(error=f"mode must be one of {MODES}"), 400
    with LOCK:
        STATE["misbehave"] = mode
    return jsonify(misbehave=mode)


@app.get("/test/state")
def test_state():
    with LOCK:
        return jsonify(**STATE, kid=KEYS["current"].kid)


@app.post("/test/rotate-keys")
def rotate_keys():
    key = new_signing_key()
    with LOCK:
        KEYS["retired"].append(KEYS["current"])
        KEYS["current"] = key
    return jsonify(kid=key.kid)


def main():
    parser = argparse.ArgumentParser(description="Upstream OpenID provider for Latch's tests")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--issuer-host", default="127.0.0.1")
    parser.add_argument("--client-id", required=True)
    parser.add_argument("--client-secret", required=True)
    parser.add_argument("--redirect-uri", action="append", required=True)
    parser.add_argument("--user", action="append", default=[], help="username:password:email:Full Name")
    parser.add_argument("--alg", choices=["RS256", "ES256"], default="RS256")
    parser.add_argument("--client-jwks-uri", help="where the client's keys for private_key_jwt are")
    parser.parse_args(namespace=CONFIG)
    for spec in CONFIG.user or ["alice:password:alice@example.com:Alice Liddell"]:
        if spec.count(":") < 3:
            parser.error(f"--user {spec!r} is not username:password:email:Full Name")
        username, password, email, name = spec.split(":", 3)
        USERS[username] = {"password": password, "email": email, "name": name}
    KEYS["current"] = new_signing_key()

    httpd = make_server("127.0.0.1", CONFIG.port, app, threaded=True)
    CONFIG.issuer = f"http://{CONFIG.issuer_host}:{httpd.server_port}"
    # shutdown() waits for serve_forever() to return, so it must not run on serve_forever's own thread.
    stop = lambda *_: threading.Thread(target=httpd.shutdown, daemon=True).start()
    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    # A child inherits its parent's signal mask: a test runner that blocks SIGTERM would otherwise leave it blocked here.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    print(f"listening on port {httpd.server_port}", flush=True)
    httpd.serve_forever()
    httpd.server_close()
    sys.exit(0)


if __name__ == "__main__":
    main()
