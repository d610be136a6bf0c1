#!/usr/bin/env python3
"""Generate WebAuthn test vectors with Yubico's python-fido2 library.

The script acts as a software authenticator + client, using fido2's own data
classes (CollectedClientData, AuthenticatorData, AttestedCredentialData,
AttestationObject, CoseKey, ctap1.RegistrationData/SignatureData) and the
`cryptography` package, for the relying party rpId "latch.test" / origin
"https://latch.test". Every positive vector is then fed to fido2's own relying
party implementation (fido2.server.Fido2Server.register_complete /
authenticate_complete, plus fido2.attestation verification of the attestation
statement and, for x5c cases, the chain to the generated root), and a set of
negative variants is checked to be rejected by it.

Output: one JSON file per case in Tests/Vectors/webauthn/fido2/ plus README.md.

Regenerate (from the repository root):

    python3 -m venv /tmp/fido2venv
    /tmp/fido2venv/bin/pip install fido2==2.2.1 cryptography==50.0.2
    /tmp/fido2venv/bin/python scripts/webauthn_fido2_vectors.py

All keys, credential IDs, challenges, user handles and the AAGUID are derived
from a fixed seed, so RSA-PKCS#1 v1.5 and Ed25519 material is reproducible
byte for byte; ECDSA signatures (credential, attestation and certificate
signatures) use cryptography's random nonces and therefore differ per run.
"""

from __future__ import annotations

import argparse
import datetime
import hashlib
import hmac
import json
import os
import struct
import sys
from importlib.metadata import version as pkg_version

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, ed25519, padding, rsa
from cryptography.x509.oid import NameOID

import fido2
from fido2 import cbor
from fido2.attestation import (
    Attestation,
    AttestationResult,
    AttestationVerifier,
)
from fido2.cose import ES256, RS256, EdDSA, CoseKey
from fido2.ctap1 import RegistrationData, SignatureData
from fido2.server import Fido2Server
from fido2.utils import sha256, websafe_decode, websafe_encode
from fido2.webauthn import (
    Aaguid,
    AttestationObject,
    AttestedCredentialData,
    AuthenticationResponse,
    AuthenticatorAssertionResponse,
    AuthenticatorAttestationResponse,
    AuthenticatorData,
    CollectedClientData,
    PublicKeyCredentialRpEntity,
    PublicKeyCredentialUserEntity,
    RegistrationResponse,
    UserVerificationRequirement,
)

RP_ID = "latch.test"
RP_NAME = "Latch Test RP"
ORIGIN = "https://latch.test"
WRONG_RP_ID = "evil.test"
WRONG_ORIGIN = "https://evil.test"
SEED = b"latch webauthn fido2 vectors v1"
SCRIPT_NAME = "scripts/webauthn_fido2_vectors.py"
FIDO2_VERSION = pkg_version("fido2")

FLAG = AuthenticatorData.FLAG
NOT_BEFORE = datetime.datetime(2025, 1, 1, tzinfo=datetime.timezone.utc)
NOT_AFTER = datetime.datetime(2050, 1, 1, tzinfo=datetime.timezone.utc)
OID_FIDO_GEN_CE_AAGUID = x509.ObjectIdentifier("1.3.6.1.4.1.45724.1.1.4")


# --------------------------------------------------------------------------
# Deterministic material derived from SEED
# --------------------------------------------------------------------------


def derive(label: str, n: int) -> bytes:
    """HMAC-SHA256 counter-mode expansion of SEED for `label`."""
    out = b""
    counter = 0
    while len(out) < n:
        out += hmac.new(
            SEED, label.encode() + struct.pack(">I", counter), hashlib.sha256
        ).digest()
        counter += 1
    return out[:n]


def p256_key(label: str) -> ec.EllipticCurvePrivateKey:
    order = 0xFFFFFFFF00000000FFFFFFFFFFFFFFFFBCE6FAADA7179E84F3B9CAC2FC632551
    d = int.from_bytes(derive("p256:" + label, 40), "big") % (order - 1) + 1
    return ec.derive_private_key(d, ec.SECP256R1())


def ed25519_key(label: str) -> ed25519.Ed25519PrivateKey:
    return ed25519.Ed25519PrivateKey.from_private_bytes(derive("ed25519:" + label, 32))


def _is_probable_prime(n: int, label: str) -> bool:
    if n < 2:
        return False
    for p in (2, 3, 5, 7, 11, 13, 17, 19, 23, 29, 31, 37):
        if n % p == 0:
            return n == p
    d, s = n - 1, 0
    while d % 2 == 0:
        d //= 2
        s += 1
    for i in range(40):
        a = int.from_bytes(derive(f"mr:{label}:{n % 1000003}:{i}", 128), "big")
        a = a % (n - 3) + 2
        x = pow(a, d, n)
        if x in (1, n - 1):
            continue
        for _ in range(s - 1):
            x = pow(x, 2, n)
            if x == n - 1:
                break
        else:
            return False
    return True


def rsa_key(label: str, bits: int = 2048) -> rsa.RSAPrivateKey:
    """Deterministic RSA key (cryptography cannot seed its generator)."""
    e = 65537
    half = bits // 2

    def prime(tag: str) -> int:
        i = 0
        while True:
            c = int.from_bytes(derive(f"rsa:{label}:{tag}:{i}", half // 8), "big")
            c |= (3 << (half - 2)) | 1  # top two bits set, odd
            if (c - 1) % e != 0 and _is_probable_prime(c, label):
                return c
            i += 1

    p, q = prime("p"), prime("q")
    if p < q:
        p, q = q, p
    n = p * q
    assert n.bit_length() == bits
    d = pow(e, -1, (p - 1) * (q - 1))
    numbers = rsa.RSAPrivateNumbers(
        p=p,
        q=q,
        d=d,
        dmp1=rsa.rsa_crt_dmp1(d, p),
        dmq1=rsa.rsa_crt_dmq1(d, q),
        iqmp=rsa.rsa_crt_iqmp(p, q),
        public_numbers=rsa.RSAPublicNumbers(e, n),
    )
    return numbers.private_key()


# --------------------------------------------------------------------------
# Signing helpers (the "authenticator")
# --------------------------------------------------------------------------


def sign(key, alg: int, message: bytes) -> bytes:
    if alg == ES256.ALGORITHM:
        return key.sign(message, ec.ECDSA(hashes.SHA256()))
    if alg == RS256.ALGORITHM:
        return key.sign(message, padding.PKCS1v15(), hashes.SHA256())
    if alg == EdDSA.ALGORITHM:
        return key.sign(message)
    raise ValueError(f"unsupported alg {alg}")


def cose_key(key, alg: int) -> CoseKey:
    return CoseKey.for_alg(alg).from_cryptography_key(key.public_key())


def tamper(sig: bytes) -> bytes:
    """Flip one bit in the last byte of a signature."""
    return sig[:-1] + bytes([sig[-1] ^ 0x01])


# --------------------------------------------------------------------------
# Attestation PKI
# --------------------------------------------------------------------------


class AttestationPKI:
    def __init__(self, aaguid: bytes, label: str = "", ca_cn: str = "Latch fido2 Test Attestation Root CA"):
        self.ca_key = p256_key(label + "attestation-root-ca")
        ca_name = x509.Name(
            [
                x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Latch Test Vectors"),
                x509.NameAttribute(NameOID.COMMON_NAME, ca_cn),
            ]
        )
        ski = x509.SubjectKeyIdentifier.from_public_key(self.ca_key.public_key())
        self.ca_cert = (
            x509.CertificateBuilder()
            .subject_name(ca_name)
            .issuer_name(ca_name)
            .public_key(self.ca_key.public_key())
            .serial_number(0x1A7C4001)
            .not_valid_before(NOT_BEFORE)
            .not_valid_after(NOT_AFTER)
            .add_extension(x509.BasicConstraints(ca=True, path_length=0), critical=True)
            .add_extension(
                x509.KeyUsage(
                    digital_signature=False,
                    content_commitment=False,
                    key_encipherment=False,
                    data_encipherment=False,
                    key_agreement=False,
                    key_cert_sign=True,
                    crl_sign=True,
                    encipher_only=False,
                    decipher_only=False,
                ),
                critical=True,
            )
            .add_extension(ski, critical=False)
            .sign(self.ca_key, hashes.SHA256())
        )
        self.aaguid = aaguid
        # packed (x5c) attestation leaf, WebAuthn §8.2.1 requirements
        self.packed_key = p256_key(label + "packed-attestation-leaf")
        self.packed_cert = self._leaf(
            self.packed_key,
            "Latch fido2 Test Packed Attestation",
            serial=0x1A7C4002,
            with_aaguid=True,
        )
        # fido-u2f attestation leaf
        self.u2f_key = p256_key(label + "u2f-attestation-leaf")
        self.u2f_cert = self._leaf(
            self.u2f_key,
            "Latch fido2 Test U2F Attestation",
            serial=0x1A7C4003,
            with_aaguid=False,
        )

    def _leaf(self, key, cn: str, serial: int, with_aaguid: bool) -> x509.Certificate:
        subject = x509.Name(
            [
                x509.NameAttribute(NameOID.COUNTRY_NAME, "US"),
                x509.NameAttribute(NameOID.ORGANIZATION_NAME, "Latch Test Vectors"),
                x509.NameAttribute(
                    NameOID.ORGANIZATIONAL_UNIT_NAME, "Authenticator Attestation"
                ),
                x509.NameAttribute(NameOID.COMMON_NAME, cn),
            ]
        )
        b = (
            x509.CertificateBuilder()
            .subject_name(subject)
            .issuer_name(self.ca_cert.subject)
            .public_key(key.public_key())
            .serial_number(serial)
            .not_valid_before(NOT_BEFORE)
            .not_valid_after(NOT_AFTER)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(
                x509.AuthorityKeyIdentifier.from_issuer_public_key(self.ca_key.public_key()),
                critical=False,
            )
        )
        if with_aaguid:
            # extnValue = DER OCTET STRING wrapping the 16-byte AAGUID
            der_octet_string = bytes([0x04, len(self.aaguid)]) + self.aaguid
            b = b.add_extension(
                x509.UnrecognizedExtension(OID_FIDO_GEN_CE_AAGUID, der_octet_string),
                critical=False,
            )
        return b.sign(self.ca_key, hashes.SHA256())

    @staticmethod
    def der(cert: x509.Certificate) -> bytes:
        return cert.public_bytes(serialization.Encoding.DER)

    def root_pem(self) -> str:
        return self.ca_cert.public_bytes(serialization.Encoding.PEM).decode()


# --------------------------------------------------------------------------
# fido2 server cross-check
# --------------------------------------------------------------------------


class _RootVerifier(AttestationVerifier):
    def __init__(self, root_der: bytes | None):
        super().__init__()
        self._root = root_der

    def ca_lookup(self, attestation_result: AttestationResult, auth_data) -> bytes | None:
        return self._root


class AttestationCheck:
    """verify_attestation callable for Fido2Server using fido2.attestation.

    Verifies the attestation statement with fido2's format-specific verifier and,
    when there is a trust path, its chain to the test root with
    fido2.attestation.AttestationVerifier.
    """

    def __init__(self, root_der: bytes | None):
        self.root_der = root_der
        self.result: AttestationResult | None = None

    def __call__(self, attestation_object: AttestationObject, client_data_hash: bytes):
        fmt_cls = Attestation.for_type(attestation_object.fmt)
        self.result = fmt_cls().verify(
            attestation_object.att_stmt, attestation_object.auth_data, client_data_hash
        )
        if self.result.trust_path:
            _RootVerifier(self.root_der).verify_attestation(
                attestation_object, client_data_hash
            )


def _describe(e: Exception) -> str:
    cls = type(e)
    name = cls.__name__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__name__}"
    return f"{name}: {e}" if str(e) else name


def fido2_server_check(
    reg_json: dict,
    reg_challenge: bytes,
    auth_json: dict | None,
    auth_challenge: bytes,
    user: PublicKeyCredentialUserEntity,
    uv: UserVerificationRequirement,
    root_der: bytes | None,
):
    """Run fido2's Fido2Server over the JSON (as a client would send it)."""
    verdict = {
        "registration": None,
        "authentication": None,
        "registrationError": None,
        "authenticationError": None,
        "attestationType": None,
    }
    att_check = AttestationCheck(root_der)
    server = Fido2Server(
        PublicKeyCredentialRpEntity(id=RP_ID, name=RP_NAME),
        attestation="direct",
        verify_attestation=att_check,
    )
    _, state = server.register_begin(user, user_verification=uv, challenge=reg_challenge)
    # Round-trip through JSON text, as the server would receive it.
    try:
        auth_data = server.register_complete(state, json.loads(json.dumps(reg_json)))
        verdict["registration"] = True
        verdict["attestationType"] = (
            att_check.result.attestation_type.name if att_check.result else None
        )
        credential = auth_data.credential_data
    except Exception as e:  # noqa: BLE001 - record the rejection
        verdict["registration"] = False
        verdict["registrationError"] = _describe(e)
        # Still parse the credential so an authentication can be checked.
        credential = AttestationObject(
            RegistrationResponse.from_dict(reg_json).response.attestation_object
        ).auth_data.credential_data

    if auth_json is not None:
        _, astate = server.authenticate_begin(
            [credential], user_verification=uv, challenge=auth_challenge
        )
        try:
            server.authenticate_complete(astate, [credential], json.loads(json.dumps(auth_json)))
            verdict["authentication"] = True
        except Exception as e:  # noqa: BLE001
            verdict["authentication"] = False
            verdict["authenticationError"] = _describe(e)
    return verdict


# --------------------------------------------------------------------------
# Case construction
# --------------------------------------------------------------------------


class Credential:
    def __init__(self, name: str, key, alg: int, aaguid: bytes):
        self.name = name
        self.key = key
        self.alg = alg
        self.aaguid = aaguid
        self.credential_id = derive("credential-id:" + name, 32)
        self.cose = cose_key(key, alg)


def registration_json(raw_id: bytes, client_data, att_obj, transports) -> dict:
    reg = RegistrationResponse(
        raw_id=raw_id,
        response=AuthenticatorAttestationResponse(
            client_data=client_data, attestation_object=att_obj
        ),
    )
    d = json.loads(json.dumps(dict(reg)))  # fido2's own JSON serialization
    if transports:
        d["response"]["transports"] = list(transports)
    return {
        "id": d["id"],
        "rawId": d["rawId"],
        "type": d["type"],
        "response": d["response"],
        "clientExtensionResults": d.get("clientExtensionResults", {}),
    }


def authentication_json(raw_id: bytes, client_data, auth_data, signature, user_handle) -> dict:
    resp = AuthenticationResponse(
        raw_id=raw_id,
        response=AuthenticatorAssertionResponse(
            client_data=client_data,
            authenticator_data=auth_data,
            signature=signature,
            user_handle=user_handle,
        ),
    )
    d = json.loads(json.dumps(dict(resp)))
    return {
        "id": d["id"],
        "rawId": d["rawId"],
        "type": d["type"],
        "response": d["response"],
        "clientExtensionResults": d.get("clientExtensionResults", {}),
    }


def build_case(
    cred: Credential,
    fmt: str,
    pki: AttestationPKI,
    name: str,
    *,
    mutate: str | None = None,
    rogue_pki: AttestationPKI | None = None,
):
    """Build registration + authentication for `cred` using attestation `fmt`.

    fmt: "none" | "packed-self" | "packed-x5c" | "fido-u2f".
    mutate: a negative variant to produce (see NEGATIVES).
    """
    reg_challenge = derive(f"reg-challenge:{name}", 32)
    auth_challenge = derive(f"auth-challenge:{name}", 32)
    user_handle = derive(f"user-handle:{cred.name}", 16)
    user = PublicKeyCredentialUserEntity(
        id=user_handle, name=f"{cred.name}@latch.test", display_name=cred.name
    )
    u2f = fmt == "fido-u2f"

    # ---- registration ------------------------------------------------------
    reg_origin = WRONG_ORIGIN if mutate == "reg-wrong-origin" else ORIGIN
    reg_rp_id = WRONG_RP_ID if mutate == "reg-wrong-rpid-hash" else RP_ID
    client_data = CollectedClientData.create(
        type=CollectedClientData.TYPE.CREATE.value,
        challenge=reg_challenge,
        origin=reg_origin,
    )
    rp_id_hash = sha256(reg_rp_id.encode())

    if u2f:
        # Build a CTAP1/U2F RegistrationData and let fido2 convert it into a
        # "fido-u2f" attestation object (AAGUID all zero, flags UP|AT).
        pub = cred.key.public_key().public_bytes(
            serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint
        )
        cert_der = pki.der(pki.u2f_cert)
        u2f_sig = pki.u2f_key.sign(
            b"\x00" + rp_id_hash + client_data.hash + cred.credential_id + pub,
            ec.ECDSA(hashes.SHA256()),
        )
        if mutate == "reg-tampered-attestation-sig":
            u2f_sig = tamper(u2f_sig)
        reg_data = RegistrationData(
            b"\x05" + pub + bytes([len(cred.credential_id)]) + cred.credential_id
            + cert_der + u2f_sig
        )
        att_obj = AttestationObject.from_ctap1(rp_id_hash, reg_data)
        att_stmt_alg = ES256.ALGORITHM
        transports = ["usb"]
    else:
        acd = AttestedCredentialData.create(cred.aaguid, cred.credential_id, cred.cose)
        auth_data = AuthenticatorData.create(
            rp_id_hash, FLAG.UP | FLAG.UV | FLAG.AT, 0, acd
        )
        to_sign = auth_data + client_data.hash
        if fmt == "none":
            att_stmt = {}
            att_stmt_alg = None
        elif fmt == "packed-self":
            sig = sign(cred.key, cred.alg, to_sign)
            if mutate == "reg-tampered-attestation-sig":
                sig = tamper(sig)
            att_stmt = {"alg": cred.alg, "sig": sig}
            att_stmt_alg = cred.alg
        elif fmt == "packed-x5c":
            # reg-x5c-untrusted-root: a well-formed x5c leaf issued by a CA that
            # is not trustAnchorPEM.
            att_pki = rogue_pki if mutate == "reg-x5c-untrusted-root" else pki
            sig = sign(att_pki.packed_key, ES256.ALGORITHM, to_sign)
            if mutate == "reg-tampered-attestation-sig":
                sig = tamper(sig)
            att_stmt = {
                "alg": ES256.ALGORITHM,
                "sig": sig,
                "x5c": [att_pki.der(att_pki.packed_cert)],
            }
            att_stmt_alg = ES256.ALGORITHM
        else:
            raise ValueError(fmt)
        att_obj = AttestationObject.create(
            "packed" if fmt.startswith("packed") else fmt, auth_data, att_stmt
        )
        transports = ["usb"] if fmt == "packed-x5c" else ["internal", "hybrid"]

    reg_json = registration_json(cred.credential_id, client_data, att_obj, transports)

    # ---- authentication ----------------------------------------------------
    auth_json = None
    sign_count = 1
    if not (mutate or "").startswith("reg-"):
        a_origin = WRONG_ORIGIN if mutate == "auth-wrong-origin" else ORIGIN
        a_rp_id = WRONG_RP_ID if mutate == "auth-wrong-rpid-hash" else RP_ID
        a_type = (
            CollectedClientData.TYPE.CREATE.value
            if mutate == "auth-wrong-type"
            else CollectedClientData.TYPE.GET.value
        )
        a_challenge = (
            derive(f"other-challenge:{name}", 32)
            if mutate == "auth-wrong-challenge"
            else auth_challenge
        )
        a_client_data = CollectedClientData.create(
            type=a_type, challenge=a_challenge, origin=a_origin
        )
        a_rp_hash = sha256(a_rp_id.encode())
        if u2f:
            # U2F authenticate response: user-presence byte, counter, signature.
            header = struct.pack(">BI", FLAG.UP, sign_count)
            sig = cred.key.sign(
                a_rp_hash + header + a_client_data.hash, ec.ECDSA(hashes.SHA256())
            )
            sig_data = SignatureData(header + sig)
            sig_data.verify(a_rp_hash, a_client_data.hash, reg_data.public_key)
            a_auth_data = AuthenticatorData(a_rp_hash + sig_data[:5])
            signature = sig_data.signature
        else:
            a_auth_data = AuthenticatorData.create(a_rp_hash, FLAG.UP | FLAG.UV, sign_count)
            signature = sign(cred.key, cred.alg, a_auth_data + a_client_data.hash)
        if mutate == "auth-tampered-signature":
            signature = tamper(signature)
        auth_json = authentication_json(
            cred.credential_id, a_client_data, a_auth_data, signature, user_handle
        )

    uv = (
        UserVerificationRequirement.DISCOURAGED
        if u2f
        else UserVerificationRequirement.REQUIRED
    )
    verdict = fido2_server_check(
        reg_json,
        reg_challenge,
        auth_json,
        auth_challenge,
        user,
        uv,
        pki.der(pki.ca_cert),
    )

    parsed = AttestationObject(att_obj)
    doc = {
        "generator": {
            "library": "fido2 (Yubico python-fido2)",
            "fido2": FIDO2_VERSION,
            "cryptography": pkg_version("cryptography"),
            "python": sys.version.split()[0],
            "script": SCRIPT_NAME,
        },
        "description": None,
        "rpId": RP_ID,
        "origin": ORIGIN,
        "registrationChallenge": websafe_encode(reg_challenge),
        "registration": reg_json,
        "authenticationChallenge": websafe_encode(auth_challenge),
        "authentication": auth_json,
        "userHandle": websafe_encode(user_handle),
        "credentialPublicKeyCOSE": websafe_encode(
            cbor.encode(parsed.auth_data.credential_data.public_key)
        ),
        "expected": {
            "fmt": parsed.fmt,
            "attestationType": {
                "none": "None",
                "packed-self": "Self",
                "packed-x5c": "Basic",
                "fido-u2f": "Basic",
            }[fmt],
            "aaguid": parsed.auth_data.credential_data.aaguid.hex(),
            "credentialId": cred.credential_id.hex(),
            "alg": cred.alg,
            "attStmtAlg": att_stmt_alg,
            "registrationFlags": int(parsed.auth_data.flags),
            "registrationSignCount": parsed.auth_data.counter,
            "authenticationFlags": (
                int(AuthenticatorData(
                    websafe_decode(auth_json["response"]["authenticatorData"])
                ).flags)
                if auth_json
                else None
            ),
            "signCount": sign_count if auth_json else None,
            "userVerified": not u2f,
        },
        "fido2ServerAccepted": {
            "registration": verdict["registration"],
            "authentication": verdict["authentication"],
        },
        "fido2ServerErrors": {
            "registration": verdict["registrationError"],
            "authentication": verdict["authenticationError"],
        },
        "fido2AttestationType": verdict["attestationType"],
    }
    if fmt in ("packed-x5c", "fido-u2f"):
        doc["trustAnchorPEM"] = pki.root_pem()
    return doc


POSITIVES = [
    # (file name, credential name, fmt, description)
    ("es256-none", "es256", "none", "ES256 (P-256) credential, attestation format none."),
    ("es256-packed-self", "es256", "packed-self",
     "ES256 credential, packed self attestation (alg + sig by the credential key)."),
    ("es256-packed-x5c", "es256", "packed-x5c",
     "ES256 credential, packed basic attestation with x5c [leaf] chaining to trustAnchorPEM."),
    ("es256-fido-u2f", "u2f", "fido-u2f",
     "P-256 credential from a CTAP1/U2F RegistrationData converted by fido2's "
     "AttestationObject.from_ctap1; fido-u2f attestation, zero AAGUID, flags UP|AT at "
     "registration and UP only at authentication (U2F has no user verification)."),
    ("rs256-packed-self", "rs256", "packed-self",
     "RS256 (RSA-2048, PKCS#1 v1.5 SHA-256) credential, packed self attestation."),
    ("rs256-none", "rs256", "none", "RS256 credential, attestation format none."),
    ("eddsa-none", "eddsa", "none", "EdDSA (Ed25519, COSE alg -8) credential, attestation none."),
    ("eddsa-packed-self", "eddsa", "packed-self",
     "EdDSA (Ed25519) credential, packed self attestation."),
]

NEGATIVES = [
    # (file name, base credential, fmt, mutation, description)
    ("neg-reg-wrong-origin", "es256", "packed-self", "reg-wrong-origin",
     "Registration clientDataJSON origin is https://evil.test (everything else valid)."),
    ("neg-reg-wrong-rpid-hash", "es256", "packed-self", "reg-wrong-rpid-hash",
     "Registration authData.rpIdHash = SHA-256(\"evil.test\"); attestation signature is "
     "valid over that authData."),
    ("neg-reg-tampered-attestation-sig", "es256", "packed-self",
     "reg-tampered-attestation-sig",
     "packed self attestation signature with one bit flipped."),
    ("neg-reg-x5c-tampered-attestation-sig", "es256", "packed-x5c",
     "reg-tampered-attestation-sig",
     "packed x5c attestation signature with one bit flipped."),
    ("neg-reg-x5c-untrusted-root", "es256", "packed-x5c", "reg-x5c-untrusted-root",
     "packed x5c attestation, valid signature and §8.2.1-conformant leaf, but the leaf is "
     "issued by a different CA (\"Latch fido2 Rogue Attestation Root CA\"), not "
     "trustAnchorPEM."),
    ("neg-reg-u2f-tampered-attestation-sig", "u2f", "fido-u2f",
     "reg-tampered-attestation-sig",
     "fido-u2f attestation signature with one bit flipped."),
    ("neg-auth-wrong-origin", "es256", "none", "auth-wrong-origin",
     "Valid registration; authentication clientDataJSON origin is https://evil.test."),
    ("neg-auth-wrong-rpid-hash", "es256", "none", "auth-wrong-rpid-hash",
     "Valid registration; authentication authData.rpIdHash = SHA-256(\"evil.test\") "
     "(signature valid over it)."),
    ("neg-auth-tampered-signature", "es256", "none", "auth-tampered-signature",
     "Valid registration; ES256 assertion signature with one bit flipped."),
    ("neg-auth-rs256-tampered-signature", "rs256", "none", "auth-tampered-signature",
     "Valid registration; RS256 assertion signature with one bit flipped."),
    ("neg-auth-eddsa-tampered-signature", "eddsa", "none", "auth-tampered-signature",
     "Valid registration; EdDSA assertion signature with one bit flipped."),
    ("neg-auth-wrong-challenge", "es256", "none", "auth-wrong-challenge",
     "Valid registration; authentication clientDataJSON challenge differs from "
     "authenticationChallenge."),
    ("neg-auth-wrong-type", "es256", "none", "auth-wrong-type",
     "Valid registration; authentication clientDataJSON type is webauthn.create."),
]


def readme(results, pip_line: str) -> str:
    lines = [
        "# WebAuthn vectors generated with python-fido2",
        "",
        "Generated by `scripts/webauthn_fido2_vectors.py` with Yubico's python-fido2 "
        "library acting as authenticator/client (its `fido2.webauthn`, `fido2.cose`, "
        "`fido2.ctap1` data classes plus `cryptography`), and cross-checked with "
        "fido2's own relying-party implementation `fido2.server.Fido2Server` "
        "(`register_complete` / `authenticate_complete`, with attestation verified by "
        "`fido2.attestation` and, for x5c, chained to the generated root).",
        "",
        f"- rpId `{RP_ID}`, origin `{ORIGIN}`",
        f"- fido2 {FIDO2_VERSION}, cryptography {pkg_version('cryptography')}",
        "- Keys, credential IDs, challenges, user handles and the AAGUID come from a "
        "fixed seed in the script. RS256 and EdDSA cases are byte-for-byte reproducible; "
        "anything ECDSA-signed (ES256 credential signatures, packed/U2F attestation "
        "signatures, the certificates) changes on every run because ECDSA nonces are "
        "random. Files are generated once and committed.",
        "",
        "## Regenerate",
        "",
        "```sh",
        "python3 -m venv /tmp/fido2venv",
        f"/tmp/fido2venv/bin/pip install {pip_line}",
        "/tmp/fido2venv/bin/python scripts/webauthn_fido2_vectors.py",
        "```",
        "",
        "## File format",
        "",
        "Each `*.json` file has:",
        "",
        "- `generator`: library versions and script name.",
        "- `rpId`, `origin`.",
        "- `registrationChallenge` (base64url) and `registration`: a WebAuthn L3 "
        "`RegistrationResponseJSON` (`id`, `rawId`, `type: \"public-key\"`, `response` "
        "{`clientDataJSON`, `attestationObject`, `transports`}, `clientExtensionResults`), "
        "binary members base64url without padding (serialized by fido2's "
        "`RegistrationResponse`).",
        "- `authenticationChallenge` and `authentication`: an `AuthenticationResponseJSON` "
        "(`response` {`clientDataJSON`, `authenticatorData`, `signature`, `userHandle`}); "
        "`null` for registration-only negative cases.",
        "- `userHandle`, `credentialPublicKeyCOSE` (base64url COSE_Key from the attested "
        "credential data).",
        "- `expected`: `fmt`, `attestationType` (None/Self/Basic), `aaguid` (hex), "
        "`credentialId` (hex), `alg` (credential COSE alg), `attStmtAlg`, "
        "`registrationFlags`, `registrationSignCount` (0), `authenticationFlags`, "
        "`signCount` (after authentication, 1), `userVerified`.",
        "- `fido2ServerAccepted` {`registration`, `authentication`} and "
        "`fido2ServerErrors` (the exception fido2's server raised, if any); "
        "`fido2AttestationType` as reported by `fido2.attestation`.",
        "- `trustAnchorPEM`: the attestation root CA (x5c cases: `es256-packed-x5c`, "
        "`es256-fido-u2f` and their negatives). The packed leaf meets WebAuthn §8.2.1 "
        "(v3, subject C/O/OU=\"Authenticator Attestation\"/CN, basic constraints CA=false, "
        "non-critical id-fido-gen-ce-aaguid 1.3.6.1.4.1.45724.1.1.4 = AAGUID). Validity "
        "2025-01-01 .. 2050-01-01.",
        "- `description`; negative files also have `negative` {`mutation`, `ceremony`}.",
        "",
        "Registration authData flags are UP|UV|AT (0x45), signCount 0; authentication "
        "flags UP|UV (0x05), signCount 1 — except `fido-u2f` (UP|AT 0x41 / UP 0x01, "
        "zero AAGUID). The fido2 server state used `userVerification: required` "
        "(`discouraged` for the U2F case). clientDataJSON is fido2's "
        "`CollectedClientData.create` output: `{\"type\",\"challenge\",\"origin\","
        "\"crossOrigin\":false}`. EdDSA credentials use COSE alg -8 (kty OKP, crv "
        "Ed25519). The RSA-2048 key is derived from the seed by the script's own "
        "prime search (cryptography cannot seed RSA generation).",
        "",
        "What fido2's server verified: clientData type, origin (against rpId), challenge, "
        "rpIdHash, UP flag, UV flag (when required), the attestation statement "
        "(`fido2.attestation` none/packed/fido-u2f verifiers, including the packed §8.2.1 "
        "leaf checks), the x5c chain to `trustAnchorPEM`, and the assertion signature "
        "with the registered COSE key. It does not track signCount or check certificate "
        "validity dates, so `expected.signCount` and the dates are this script's "
        "expectations only.",
        "",
        "## Files and fido2 server verdicts",
        "",
        "| file | fmt | alg | fido2 registration | fido2 authentication | fido2 error | description |",
        "| --- | --- | --- | --- | --- | --- | --- |",
    ]

    def v(x):
        return {True: "accepted", False: "**rejected**", None: "n/a"}[x]

    for fname, doc in results:
        errs = [e for e in doc["fido2ServerErrors"].values() if e]
        lines.append(
            f"| `{fname}.json` | {doc['expected']['fmt']} | {doc['expected']['alg']} | "
            f"{v(doc['fido2ServerAccepted']['registration'])} | "
            f"{v(doc['fido2ServerAccepted']['authentication'])} | "
            f"{'; '.join('`' + e + '`' for e in errs) or '—'} | "
            f"{doc['description'].replace('|', chr(92) + '|')} |"
        )
    lines += [
        "",
        "Positive cases: both ceremonies must verify and the resulting signCount is 1. "
        "Negative cases (`neg-*`): the ceremony named in `negative.ceremony` must be "
        "rejected (for `neg-auth-*` the registration is valid and is accepted).",
        "",
    ]
    return "\n".join(lines)


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    default_out = os.path.join(here, "..", "Tests", "Vectors", "webauthn", "fido2")
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default=default_out)
    args = ap.parse_args()
    out = os.path.normpath(args.out)
    os.makedirs(out, exist_ok=True)

    aaguid = Aaguid(derive("aaguid", 16))
    pki = AttestationPKI(aaguid)
    rogue_pki = AttestationPKI(aaguid, "rogue:", "Latch fido2 Rogue Attestation Root CA")
    creds = {
        "es256": Credential("es256", p256_key("credential-es256"), ES256.ALGORITHM, aaguid),
        "rs256": Credential("rs256", rsa_key("credential-rs256"), RS256.ALGORITHM, aaguid),
        "eddsa": Credential("eddsa", ed25519_key("credential-eddsa"), EdDSA.ALGORITHM, aaguid),
        "u2f": Credential("u2f", p256_key("credential-u2f"), ES256.ALGORITHM, Aaguid.NONE),
    }

    results = []
    failures = []
    for fname, cname, fmt, desc in POSITIVES:
        doc = build_case(creds[cname], fmt, pki, fname)
        doc["description"] = desc
        if not (doc["fido2ServerAccepted"]["registration"]
                and doc["fido2ServerAccepted"]["authentication"]):
            failures.append((fname, doc["fido2ServerErrors"]))
        if (doc["fido2AttestationType"] or "").upper() != doc["expected"]["attestationType"].upper():
            failures.append((fname, "fido2 attestation type " + str(doc["fido2AttestationType"])))
        results.append((fname, doc))

    for fname, cname, fmt, mutation, desc in NEGATIVES:
        doc = build_case(creds[cname], fmt, pki, fname, mutate=mutation, rogue_pki=rogue_pki)
        doc["description"] = desc
        ceremony = "registration" if mutation.startswith("reg-") else "authentication"
        doc["negative"] = {"mutation": mutation, "ceremony": ceremony}
        if doc["fido2ServerAccepted"][ceremony] is not False:
            failures.append((fname, "fido2 server did NOT reject"))
        if ceremony == "authentication" and not doc["fido2ServerAccepted"]["registration"]:
            failures.append((fname, "base registration rejected"))
        results.append((fname, doc))

    for fname, doc in results:
        with open(os.path.join(out, fname + ".json"), "w") as f:
            json.dump(doc, f, indent=2)
            f.write("\n")

    pip_line = (
        f"fido2=={FIDO2_VERSION} cryptography=={pkg_version('cryptography')}"
    )
    with open(os.path.join(out, "README.md"), "w") as f:
        f.write(readme(results, pip_line))

    for fname, doc in results:
        print(
            f"{fname:42s} reg={doc['fido2ServerAccepted']['registration']!s:5s} "
            f"auth={doc['fido2ServerAccepted']['authentication']!s:5s} "
            f"{doc['fido2ServerErrors']}"
        )
    if failures:
        print("UNEXPECTED:", failures, file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
