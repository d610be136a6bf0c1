#!/usr/bin/env python3
"""Register and sign in with WebAuthn credentials built by Yubico's python-fido2, against a running Latch server.

Proves that Latch and a third-party FIDO library interoperate. python-fido2 has no software authenticator, so this
script is authenticator and client: every message is built with fido2's own data classes (CollectedClientData,
AuthenticatorData, AttestedCredentialData, AttestationObject, CoseKey, Registration/AuthenticationResponse for the
JSON) and `cryptography` keys, and fido2's own relying party (fido2.server.Fido2Server + fido2.attestation) must
accept each message before Latch is sent the same bytes, so both implementations are shown to agree.

For ES256 (packed self attestation), EdDSA/Ed25519 (packed self) and RS256 (attestation "none"): a. registration
options, b. registration (201), c. the ceremony again (400 invalid_input), d. sign-in with the webauthn grant (tokens,
id_token sub and amr), e. the same token request again, f. a fresh ceremony whose counter did not grow, g. one signed
by another key (e-g: 400 invalid_grant), h. deletion with the access token just issued (204), so that reruns for the
same user stay under Latch's limit of authenticators per user (10 by default). Then passwordless sign-up: an ES256
credential fido2 made becomes a new user's first authenticator (registration type WEBAUTHN), and the new user signs in
with it as a discoverable credential.

    python3 -m pip install fido2==2.2.1
    python3 scripts/webauthn_fido2_http.py --server http://localhost:8080 --access-token TOKEN --user-id USERID \\
        [--origin http://localhost:8080] [--rp-id localhost]

Prints one "ok: ..." line per step; at the first unexpected answer, "FAIL: ..." and exit status 1 (3: no fido2).
"""

import argparse
import json
import os
import sys
import urllib.error
import urllib.parse
import urllib.request

try:
    from cryptography.hazmat.primitives import hashes
    from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
    from fido2.attestation import Attestation, AttestationType
    from fido2.cose import ES256, RS256, EdDSA
    from fido2.server import Fido2Server
    from fido2.utils import sha256, websafe_decode
    from fido2.webauthn import (
        Aaguid, AttestationObject, AttestedCredentialData, AuthenticationResponse, AuthenticatorAssertionResponse,
        AuthenticatorAttestationResponse, AuthenticatorData, CollectedClientData, PublicKeyCredentialRpEntity,
        PublicKeyCredentialUserEntity, RegistrationResponse,
    )
except ImportError:
    print("fido2 is not installed: python3 -m pip install fido2", file=sys.stderr)
    sys.exit(3)

FLAG = AuthenticatorData.FLAG
# Algorithm name → (fido2 COSE class, new private key).
ALGORITHMS = {
    "ES256": (ES256, lambda: ec.generate_private_key(ec.SECP256R1())),
    "EdDSA": (EdDSA, ed25519.Ed25519PrivateKey.generate),
    "RS256": (RS256, lambda: rsa.generate_private_key(public_exponent=65537, key_size=2048)),
}
WEBAUTHN_GRANT = "urn:latch:params:oauth:grant-type:webauthn"


def fail(message):
    print(f"FAIL: {message}", file=sys.stderr)
    sys.exit(1)


def call(url, *, json_body=None, form=None, token=None, method="POST"):
    """Send a JSON or form body to `url`; return (status, the decoded JSON body or the raw text)."""
    headers, data = {"Accept": "application/json"}, None
    if form is not None:
        data, headers["Content-Type"] = urllib.parse.urlencode(form).encode(), "application/x-www-form-urlencoded"
    elif json_body is not None:
        data, headers["Content-Type"] = json.dumps(json_body).encode(), "application/json"
    if token:
        headers["Authorization"] = f"Bearer {token}"
    try:
        with urllib.request.urlopen(urllib.request.Request(url, data, headers, method=method), timeout=30) as response:
            status, raw = response.status, response.read()
    except urllib.error.HTTPError as error:
        status, raw = error.code, error.read()
    except urllib.error.URLError as error:
        fail(f"{method} {url}: {error.reason}")
    try:
        return status, json.loads(raw)
    except ValueError:
        return status, raw.decode(errors="replace")


def expect(what, url, status, body, want):
    """Stop unless the answer has status `want` (and a JSON object, unless 204); return the body."""
    if status != want or (want != 204 and not isinstance(body, dict)):
        fail(f"{what}: {url} answered {status}, expected {want} (JSON): {body}")
    return body


def expect_error(what, url, status, body, code):
    """Stop unless the answer is 400 with OAuth/Latch error `code`; return its description."""
    if status != 400 or not isinstance(body, dict) or body.get("error") != code:
        fail(f"{what}: {url} answered {status} {body}, expected 400 {code}")
    return body.get("error_description") or body.get("message") or ""


class SoftCredential:
    """A software authenticator's credential: a private key, its COSE public key, a random id and AAGUID."""

    def __init__(self, alg):
        cose_class, new_key = ALGORITHMS[alg]
        self.alg, self.key = alg, new_key()
        self.cose = cose_class.from_cryptography_key(self.key.public_key())
        self.credential_id, self.aaguid = os.urandom(32), Aaguid(os.urandom(16))

    def sign(self, message, key=None):
        key = key or self.key
        if self.alg == "ES256":
            return key.sign(message, ec.ECDSA(hashes.SHA256()))  # DER-encoded ECDSA
        if self.alg == "EdDSA":
            return key.sign(message)  # raw 64-byte Ed25519
        return key.sign(message, padding.PKCS1v15(), hashes.SHA256())

    def register(self, challenge, rp_id, origin, fmt):
        """A RegistrationResponseJSON: flags UP|UV|AT, sign count 0, attestation `fmt` ("packed" self or "none")."""
        client_data = CollectedClientData.create(type="webauthn.create", challenge=challenge, origin=origin)
        attested = AttestedCredentialData.create(self.aaguid, self.credential_id, self.cose)
        auth_data = AuthenticatorData.create(sha256(rp_id.encode()), FLAG.UP | FLAG.UV | FLAG.AT, 0, attested)
        # Packed self attestation: the credential key signs authData || SHA-256(clientDataJSON); no x5c.
        statement = {}
        if fmt == "packed":
            statement = {"alg": self.cose.ALGORITHM, "sig": self.sign(auth_data + client_data.hash)}
        response = AuthenticatorAttestationResponse(
            client_data=client_data, attestation_object=AttestationObject.create(fmt, auth_data, statement))
        # fido2's own JSON serialization: id, rawId, type, response, clientExtensionResults (base64url, no padding).
        return json.loads(json.dumps(dict(RegistrationResponse(raw_id=self.credential_id, response=response))))

    def assertion(self, challenge, rp_id, origin, user_handle, counter, key=None):
        """An AuthenticationResponseJSON: flags UP|UV, `counter`, signed by `key` (default: the credential's)."""
        client_data = CollectedClientData.create(type="webauthn.get", challenge=challenge, origin=origin)
        auth_data = AuthenticatorData.create(sha256(rp_id.encode()), FLAG.UP | FLAG.UV, counter)
        response = AuthenticatorAssertionResponse(
            client_data=client_data, authenticator_data=auth_data,
            signature=self.sign(auth_data + client_data.hash, key), user_handle=user_handle)
        return json.loads(json.dumps(dict(AuthenticationResponse(raw_id=self.credential_id, response=response))))


def fido2_relying_party(rp_id, origin, fmt):
    """fido2's relying party for `rp_id`, accepting only `origin` (its default check wants https), verifying the
    attestation statement with fido2.attestation: packed must verify as self attestation, none as none."""
    def verify_attestation(attestation_object, client_data_hash):
        result = Attestation.for_type(attestation_object.fmt)().verify(
            attestation_object.att_stmt, attestation_object.auth_data, client_data_hash)
        want = AttestationType.SELF if fmt == "packed" else AttestationType.NONE
        if attestation_object.fmt != fmt or result.attestation_type != want:
            raise ValueError(f"attestation {attestation_object.fmt}/{result.attestation_type.name}, expected {fmt}")

    return Fido2Server(PublicKeyCredentialRpEntity(id=rp_id, name="Latch"), attestation="direct",
                       verify_origin=lambda o: o == origin, verify_attestation=verify_attestation)


def exercise(args, alg, fmt):
    server, origin, rp_id, user_handle = args.server, args.origin, args.rp_id, args.user_id.encode()
    cred, local = SoftCredential(alg), fido2_relying_party(args.rp_id, args.origin, fmt)

    # a. Registration options, signed in.
    url = f"{server}/v1/fido/registration/options"
    options = expect(f"{alg} registration options", url, *call(url, json_body={}, token=args.access_token), 200)
    public_key = options.get("publicKey", {})
    if public_key.get("rp", {}).get("id") != rp_id:
        fail(f"{alg}: registration options rp {public_key.get('rp')!r}, expected id {rp_id!r}")
    if websafe_decode(public_key["user"]["id"]) != user_handle:
        fail(f"{alg}: registration options user.id {public_key['user']['id']!r} is not {args.user_id!r} (base64url)")
    if cred.cose.ALGORITHM not in [p.get("alg") for p in public_key.get("pubKeyCredParams", [])]:
        fail(f"{alg}: pubKeyCredParams {public_key.get('pubKeyCredParams')} do not offer {cred.cose.ALGORITHM}")
    challenge = websafe_decode(public_key["challenge"])
    print(f"ok: {alg} registration options (rp.id {rp_id}, {len(challenge)}-byte challenge)")

    # b. The credential: fido2's relying party first, then Latch.
    registration = cred.register(challenge, rp_id, origin, fmt)
    user = PublicKeyCredentialUserEntity(id=user_handle, name=public_key["user"]["name"], display_name=args.user_id)
    uv = public_key.get("authenticatorSelection", {}).get("userVerification")
    _, state = local.register_begin(user, user_verification=uv, challenge=challenge)
    try:
        attested = local.register_complete(state, registration).credential_data
    except Exception as error:  # noqa: BLE001 - fido2 raises ValueError and others
        fail(f"{alg}: fido2.server.Fido2Server rejects the registration built: {error!r}")
    print(f"ok: {alg} fido2.server.Fido2Server accepts the registration ({fmt} attestation)")
    url = f"{server}/v1/fido/registration"
    body = {"ceremonyId": options["ceremonyId"], "credential": registration, "name": f"fido2 {alg}"}
    info = expect(f"{alg} registration", url, *call(url, json_body=body, token=args.access_token), 201)
    if not info.get("id") or info.get("format") != fmt:
        fail(f"{alg} registration: answer {info}, expected an id and format {fmt!r}")
    print(f"ok: {alg} registered: authenticator {info['id']}, format {info['format']}")

    # c. A ceremony completes once.
    answer = call(url, json_body=body, token=args.access_token)
    detail = expect_error(f"{alg} reused registration ceremony", url, *answer, "invalid_input")
    print(f"ok: {alg} registration ceremony refused a second time: invalid_input ({detail})")

    def sign_in_request(counter, key=None):
        """A fresh (discoverable) sign-in ceremony and its token request; fido2 must accept it unless `key` signs."""
        url = f"{server}/v1/fido/authentication/options"
        answer = expect(f"{alg} authentication options", url, *call(url, json_body={}), 200)
        opts = answer.get("publicKey", {})
        if opts.get("rpId") != rp_id:
            fail(f"{alg}: authentication options rpId {opts.get('rpId')!r}, expected {rp_id!r}")
        challenge = websafe_decode(opts["challenge"])
        assertion = cred.assertion(challenge, rp_id, origin, user_handle, counter, key)
        _, state = local.authenticate_begin([attested], user_verification=opts.get("userVerification"),
                                            challenge=challenge)
        try:
            local.authenticate_complete(state, [attested], assertion)
            if key is not None:
                fail(f"{alg}: fido2.server.Fido2Server accepts an assertion signed by another key")
        except Exception as error:  # noqa: BLE001
            if key is None:
                fail(f"{alg}: fido2.server.Fido2Server rejects the assertion built: {error!r}")
        return {"grant_type": WEBAUTHN_GRANT, "ceremony_id": answer["ceremonyId"], "client_id": "default",
                "credential": json.dumps(assertion)}

    # d. Sign in; the first assertion of a credential has counter 1.
    token_url, counter = f"{server}/oauth2/token", 1
    form = sign_in_request(counter)
    print(f"ok: {alg} fido2.server.Fido2Server accepts the assertion (counter {counter})")
    tokens = expect(f"{alg} sign-in", token_url, *call(token_url, form=form), 200)
    if not all(tokens.get(k) for k in ("access_token", "id_token", "refresh_token")):
        fail(f"{alg} sign-in: expected access_token, id_token and refresh_token: {tokens}")
    claims = json.loads(websafe_decode(tokens["id_token"].split(".")[1]))  # the payload; not verified here
    if claims.get("sub") != args.user_id or not {"user", "mfa"} <= set(claims.get("amr", [])):
        fail(f"{alg} sign-in: id_token sub {claims.get('sub')!r}, amr {claims.get('amr')!r}; expected "
             f"{args.user_id!r} with user and mfa")
    print(f"ok: {alg} signed in: id_token sub {claims['sub']}, amr {claims['amr']}")

    # e. The very same token request again.
    detail = expect_error(f"{alg} replayed sign-in", token_url, *call(token_url, form=form), "invalid_grant")
    print(f"ok: {alg} replayed token request refused: invalid_grant ({detail})")

    # f. A fresh ceremony, but the counter did not grow (fido2's relying party does not track counters).
    form = sign_in_request(counter)
    detail = expect_error(f"{alg} counter {counter} again", token_url, *call(token_url, form=form), "invalid_grant")
    print(f"ok: {alg} counter {counter}, not greater than the last accepted, refused: invalid_grant ({detail})")

    # g. A fresh ceremony with the next counter, signed by another key of the same algorithm.
    form = sign_in_request(counter + 1, key=ALGORITHMS[alg][1]())
    detail = expect_error(f"{alg} another key's signature", token_url, *call(token_url, form=form), "invalid_grant")
    print(f"ok: {alg} signature by another key refused by fido2 and Latch: invalid_grant ({detail})")

    # h. Clean up with the access token the sign-in issued (deleting an authenticator needs a recent sign-in).
    url = f"{server}/v1/me/authenticators/{info['id']}"
    expect(f"{alg} deletion", url, *call(url, token=tokens["access_token"], method="DELETE"), 204)
    print(f"ok: {alg} authenticator {info['id']} deleted with the access token from the sign-in")


def sign_up(args):
    """Passwordless sign-up with a credential fido2 makes: sign-up options (a new user id as the user handle), the
    registration as a WEBAUTHN registration proof, then a discoverable sign-in as the new user."""
    server, origin, rp_id = args.server, args.origin, args.rp_id
    cred, local = SoftCredential("ES256"), fido2_relying_party(rp_id, origin, "packed")
    username = "fido2-" + os.urandom(4).hex()
    url = f"{server}/v1/fido/sign-up/options"
    options = expect("sign-up options", url, *call(url, json_body={"username": username}), 200)
    public_key = options["publicKey"]
    user_handle = websafe_decode(public_key["user"]["id"])
    if public_key["user"]["name"] != username or public_key.get("authenticatorSelection", {}).get("residentKey") != "required":
        fail(f"sign-up options: user {public_key['user']!r}, selection {public_key.get('authenticatorSelection')!r}")
    challenge = websafe_decode(public_key["challenge"])
    registration = cred.register(challenge, rp_id, origin, "packed")
    user = PublicKeyCredentialUserEntity(id=user_handle, name=username, display_name=username)
    _, state = local.register_begin(user, user_verification="preferred", challenge=challenge)
    attested = local.register_complete(state, registration).credential_data
    print("ok: fido2.server.Fido2Server accepts the sign-up registration")
    url = f"{server}/v1/registrations"
    answer = json.dumps({"ceremonyId": options["ceremonyId"], "credential": registration, "name": "fido2 passkey"})
    body = {"challengeType": "WEBAUTHN", "answer": answer, "registrationId": "fido2-" + os.urandom(8).hex()}
    created = expect("sign-up", url, *call(url, json_body=body), 201)
    if created.get("userId") != user_handle.decode() or created.get("username") != username or not created.get("authenticatorId"):
        fail(f"sign-up: answer {created}, expected user {user_handle.decode()!r} named {username!r} with an authenticatorId")
    print(f"ok: signed up {username} ({created['userId']}), authenticator {created['authenticatorId']}")
    url = f"{server}/v1/fido/authentication/options"
    opts = expect("sign-up: authentication options", url, *call(url, json_body={}), 200)
    challenge = websafe_decode(opts["publicKey"]["challenge"])
    assertion = cred.assertion(challenge, rp_id, origin, user_handle, 1)
    _, state = local.authenticate_begin([attested], user_verification="preferred", challenge=challenge)
    local.authenticate_complete(state, [attested], assertion)
    token_url = f"{server}/oauth2/token"
    form = {"grant_type": WEBAUTHN_GRANT, "ceremony_id": opts["ceremonyId"], "client_id": "default", "credential": json.dumps(assertion)}
    tokens = expect("sign-up: sign-in", token_url, *call(token_url, form=form), 200)
    claims = json.loads(websafe_decode(tokens["id_token"].split(".")[1]))
    if claims.get("sub") != created["userId"]:
        fail(f"sign-up: the sign-in's sub {claims.get('sub')!r} is not the new user {created['userId']!r}")
    print(f"ok: the new user signs in with the passkey: sub {claims['sub']}")


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--server", required=True, help="Latch base URL, e.g. http://localhost:8080")
    parser.add_argument("--access-token", required=True, help="a signed-in user's access token")
    parser.add_argument("--user-id", required=True, help="that user's id (the access token's sub)")
    parser.add_argument("--origin", help="WebAuthn origin (default: the server URL's scheme://host:port)")
    parser.add_argument("--rp-id", help="relying party id (default: the server URL's host)")
    args = parser.parse_args()
    url = urllib.parse.urlsplit(args.server)
    if not url.scheme or not url.hostname:
        fail(f"--server {args.server!r} is not an absolute URL")
    args.server = args.server.rstrip("/")
    args.origin = args.origin or f"{url.scheme}://{url.netloc}"
    args.rp_id = args.rp_id or url.hostname
    # fido2's relying party checks each message just before Latch gets it, for all three algorithms.
    for alg, fmt in (("ES256", "packed"), ("EdDSA", "packed"), ("RS256", "none")):
        try:
            exercise(args, alg, fmt)
        except (KeyError, TypeError, AttributeError, ValueError) as error:  # a member missing or of the wrong type
            fail(f"{alg}: an answer from Latch does not have the expected shape: {error!r}")
    try:
        sign_up(args)
    except (KeyError, TypeError, AttributeError, ValueError) as error:
        fail(f"sign-up: an answer from Latch does not have the expected shape (or fido2 refused it): {error!r}")
    print("ok: all steps passed")


if __name__ == "__main__":
    main()
