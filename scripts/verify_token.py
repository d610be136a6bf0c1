#!/usr/bin/env python3
"""Verify a Latch token with a third-party JWT library against the published JWKS.

Usage: verify_token.py ISSUER_URL TOKEN AUDIENCE
Uses PyJWT when installed, else joserfc. Prints the library used and the verified claims as JSON;
exits 1 when the token does not verify (bad signature, wrong issuer or audience, expired).
"""
import json
import sys
import urllib.request


def jwks_for(issuer):
    with urllib.request.urlopen(issuer + "/.well-known/openid-configuration", timeout=10) as r:
        metadata = json.load(r)
    with urllib.request.urlopen(metadata["jwks_uri"], timeout=10) as r:
        return json.load(r)


def verify_pyjwt(jwt, issuer, token, audience):
    header = jwt.get_unverified_header(token)
    jwk = next(k for k in jwks_for(issuer)["keys"] if k["kid"] == header["kid"])
    key = jwt.PyJWK(jwk).key
    return jwt.decode(token, key, algorithms=[jwk["alg"]], audience=audience, issuer=issuer)


def verify_joserfc(issuer, token, audience):
    from joserfc import jwt
    from joserfc.jwk import KeySet
    keys = KeySet.import_key_set(jwks_for(issuer))
    decoded = jwt.decode(token, keys, algorithms=["ES256", "RS256"])
    registry = jwt.JWTClaimsRegistry(iss={"essential": True, "value": issuer}, aud={"essential": True, "value": audience})
    registry.validate(decoded.claims)
    return decoded.claims


def main():
    issuer, token, audience = sys.argv[1], sys.argv[2], sys.argv[3]
    try:
        try:
            import jwt as pyjwt
            library, claims = "PyJWT " + pyjwt.__version__, verify_pyjwt(pyjwt, issuer, token, audience)
        except ImportError:
            import joserfc
            library, claims = "joserfc " + getattr(joserfc, "__version__", "?"), verify_joserfc(issuer, token, audience)
    except ImportError:
        print("neither PyJWT nor joserfc is installed (pip install pyjwt cryptography)", file=sys.stderr)
        sys.exit(2)
    except Exception as error:  # any verification failure
        print("verification failed: %s: %s" % (type(error).__name__, error), file=sys.stderr)
        sys.exit(1)
    print(json.dumps({"library": library, "claims": claims}, sort_keys=True))


if __name__ == "__main__":
    main()
