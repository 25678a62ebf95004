"""A token issuer made the way a Kubernetes API server makes one: an RSA and an EC signing key, their JWKS
served over HTTP on loopback (with an OpenID configuration), and tokens with
``sub=system:serviceaccount:<namespace>:<name>``, ``aud``, ``iat`` and ``exp``. It also answers the OAuth2
client-credentials grant (``POST /oauth2/token``), as an identity provider's token endpoint does.

The tests can rotate its keys, take its JWKS endpoint down and count the fetches."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs

import jwt
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec, rsa

AUDIENCE = "lance-rest"
#: What a real cluster's tokens carry as ``iss`` (not where the JWKS is: that is the loopback server)
K8S_ISSUER = "https://kubernetes.default.svc.cluster.local"


def service_account(namespace: str, name: str) -> str:
    """A Kubernetes service account's token subject."""
    return f"system:serviceaccount:{namespace}:{name}"


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


class TokenIssuer:
    """Signing keys by ``kid`` (``rsa-1`` and ``ec-1`` at first) and the JWKS that publishes them."""

    def __init__(self, issuer: str = K8S_ISSUER) -> None:
        self.issuer = issuer
        self.keys: dict[str, tuple[Any, str]] = {}
        self.published: list[str] = []
        self.jwks_fetches = 0
        self.down = False
        self.clients: dict[str, str] = {}  # OAuth2 client id -> secret
        self.issued = 0  # client-credentials tokens handed out
        self.client_token_seconds = 60
        self.url = ""
        self.add_key("rsa-1", rsa.generate_private_key(public_exponent=65537, key_size=2048), "RS256")
        self.add_key("ec-1", ec.generate_private_key(ec.SECP256R1()), "ES256")

    def add_key(self, kid: str, private_key: Any, alg: str, publish: bool = True) -> None:
        """A signing key; published in the JWKS unless ``publish`` is false."""
        self.keys[kid] = (private_key, alg)
        if publish:
            self.published.append(kid)

    def rotate(self) -> str:
        """A new RSA key in the JWKS, the old RSA key out of it (what a key rotation does); the new kid."""
        kid = f"rsa-{len(self.keys) + 1}"
        self.add_key(kid, rsa.generate_private_key(public_exponent=65537, key_size=2048), "RS256")
        self.published = [k for k in self.published if k == kid or not k.startswith("rsa-")]
        return kid

    def jwks(self) -> dict[str, Any]:
        keys = []
        for kid in self.published:
            private_key, alg = self.keys[kid]
            algorithm = jwt.get_algorithm_by_name(alg)
            keys.append(
                {**algorithm.to_jwk(private_key.public_key(), as_dict=True), "kid": kid, "alg": alg, "use": "sig"}
            )
        return {"keys": keys}

    def token(
        self,
        subject: str,
        kid: str = "rsa-1",
        audience: str | list[str] = AUDIENCE,
        lifetime: float = 600,
        **claims: Any,
    ) -> str:
        """A signed token of ``subject`` (``claims`` add to or override the standard ones; None removes one)."""
        now = int(time.time())
        payload = {"iss": self.issuer, "sub": subject, "aud": audience, "iat": now, "nbf": now, "exp": now + lifetime}
        payload.update(claims)
        payload = {key: value for key, value in payload.items() if value is not None}  # None: leave it out
        private_key, alg = self.keys[kid]
        return jwt.encode(payload, private_key, algorithm=alg, headers={"kid": kid})

    def public_pem(self, kid: str = "rsa-1") -> bytes:
        return (
            self.keys[kid][0]
            .public_key()
            .public_bytes(serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo)
        )

    def hmac_with_public_key(self, subject: str, kid: str = "rsa-1") -> str:
        """The algorithm-confusion forgery: HS256 "signed" with the RSA public key (PyJWT refuses to make one)."""
        now = int(time.time())
        header = _b64(json.dumps({"alg": "HS256", "typ": "JWT", "kid": kid}).encode())
        claims = {"iss": self.issuer, "sub": subject, "aud": AUDIENCE, "iat": now, "exp": now + 600}
        signing_input = f"{header}.{_b64(json.dumps(claims).encode())}"
        signature = hmac.new(self.public_pem(kid), signing_input.encode(), hashlib.sha256).digest()
        return f"{signing_input}.{_b64(signature)}"

    def unsigned(self, subject: str, kid: str = "rsa-1") -> str:
        """A token with ``alg: none`` (no signature)."""
        now = int(time.time())
        header = _b64(json.dumps({"alg": "none", "typ": "JWT", "kid": kid}).encode())
        claims = {"iss": self.issuer, "sub": subject, "aud": AUDIENCE, "iat": now, "exp": now + 600}
        return f"{header}.{_b64(json.dumps(claims).encode())}."

    def client_credentials_token(self, client_id: str) -> tuple[str, int]:
        """What the token endpoint hands a client: a token of ``sub=client_id`` and its lifetime."""
        self.issued += 1
        token = self.token(client_id, lifetime=self.client_token_seconds, client_id=client_id, jti=str(self.issued))
        return token, self.client_token_seconds


def _handler(issuer: TokenIssuer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            if self.path == "/openid/v1/jwks":
                issuer.jwks_fetches += 1
                if issuer.down:
                    self._send(503, {"error": "down"})
                else:
                    self._send(200, issuer.jwks())
            elif self.path == "/.well-known/openid-configuration":
                self._send(200, {"issuer": issuer.issuer, "jwks_uri": f"{issuer.url}/openid/v1/jwks"})
            else:
                self._send(404, {})

        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0)).decode()
            form = {k: v[0] for k, v in parse_qs(body).items()}
            scheme, _, encoded = (self.headers.get("Authorization") or "").partition(" ")
            client_id, _, secret = (
                base64.b64decode(encoded).decode().partition(":") if scheme == "Basic" else ("", "", "")
            )
            if self.path != "/oauth2/token" or form.get("grant_type") != "client_credentials":
                self._send(400, {"error": "unsupported_grant_type"})
            elif issuer.clients.get(client_id) != secret:
                self._send(401, {"error": "invalid_client"})
            else:
                token, lifetime = issuer.client_credentials_token(client_id)
                self._send(200, {"access_token": token, "token_type": "Bearer", "expires_in": lifetime})

        def _send(self, status: int, document: dict[str, Any]) -> None:
            data = json.dumps(document).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, format: str, *args: Any) -> None:  # quiet
            pass

    return Handler


@contextmanager
def serve_issuer(issuer: TokenIssuer | None = None) -> Iterator[TokenIssuer]:
    """Serve an issuer's JWKS (``/openid/v1/jwks``), OpenID configuration and token endpoint on loopback."""
    issuer = issuer or TokenIssuer()
    server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(issuer))
    issuer.url = f"http://127.0.0.1:{server.server_port}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield issuer
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)


def issuer_entry(issuer: TokenIssuer, **settings: Any) -> dict[str, Any]:
    """The principals file's entry trusting ``issuer`` (named ``k8s``)."""
    return {
        "name": "k8s",
        "issuer": issuer.issuer,
        "audience": AUDIENCE,
        "jwks_uri": f"{issuer.url}/openid/v1/jwks",
        **settings,
    }
