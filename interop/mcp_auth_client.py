"""The example server behind an OAuth 2.1 authorization server, driven by the
official Python MCP SDK.

    mcp_auth_client.py --server PATH/TO/examples/server [--audience mcp|origin]

With `--audience origin` the server is started as the README shows it, with the
origin alone as the audience (`--auth-audience http://127.0.0.1:PORT`): the
challenges of `/mcp` and `/api` then name `/.well-known/oauth-protected-resource`,
which must answer with the origin as the resource. Default: the `/mcp` URL.

Runs a small authorization server of its own (RFC 8414 metadata, a JWKS, and a
token endpoint that grants `client_credentials` tokens signed with ES256 for the
scopes and resource asked), starts the example server with `--auth-issuer` and
`--auth-audience`, and checks that:

- a request without a token gets 401 and a `WWW-Authenticate` challenge whose
  `resource_metadata` names this server's protected-resource metadata, which names
  the authorization server and the scopes the tools declare;
- the SDK's client without credentials is refused;
- with a token that has no scope, the client lists only what it may call, runs
  `add`, and is refused `users_post` with 403 `insufficient_scope` naming
  `users:write`;
- the SDK's own OAuth flow (`ClientCredentialsOAuthProvider`) reads the challenge,
  finds the authorization server through the metadata, gets a token and calls the
  tools, `users_post` included.

Prints one line per check and ends with `mcp auth client: N checks passed` (exit
0), or prints the failing check and exits 1.
"""

import argparse
import base64
import json
import socket
import subprocess
import sys
import time
from urllib.parse import unquote

import anyio
import httpx2
import jwt
import uvicorn
from cryptography.hazmat.primitives.asymmetric import ec
from jwt.algorithms import ECAlgorithm
from mcp import Client, MCPError
from mcp.client.auth.extensions.client_credentials import ClientCredentialsOAuthProvider
from mcp.shared._httpx_utils import create_mcp_http_client
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse
from starlette.routing import Route

CLIENT_ID = "ci-client"
CLIENT_SECRET = "ci-secret"

checks = 0


def check(name, ok, detail=""):
    global checks
    if not ok:
        print(f"FAIL {name}: {detail}", flush=True)
        sys.exit(1)
    checks += 1
    print(f"ok {name}", flush=True)


def free_socket():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    return sock


class Issuer:
    """An authorization server: metadata, keys, and a client_credentials token endpoint."""

    def __init__(self, url):
        self.url = url
        self.key = ec.generate_private_key(ec.SECP256R1())
        jwk = json.loads(ECAlgorithm.to_jwk(self.key.public_key()))
        jwk.update({"kid": "k1", "alg": "ES256", "use": "sig"})
        self.jwks = {"keys": [jwk]}
        self.granted = []

    def mint(self, audience, scope):
        now = int(time.time())
        claims = {"iss": self.url, "aud": audience, "sub": CLIENT_ID, "iat": now,
                  "nbf": now, "exp": now + 600}
        if scope:
            claims["scope"] = scope
        return jwt.encode(claims, self.key, algorithm="ES256", headers={"kid": "k1"})

    def app(self):
        async def metadata(_request):
            return JSONResponse({
                "issuer": self.url,
                "authorization_endpoint": f"{self.url}/authorize",
                "token_endpoint": f"{self.url}/token",
                "jwks_uri": f"{self.url}/jwks",
                "response_types_supported": ["code"],
                "grant_types_supported": ["client_credentials"],
                "token_endpoint_auth_methods_supported": ["client_secret_basic", "client_secret_post"],
                "code_challenge_methods_supported": ["S256"],
            })

        async def keys(_request):
            return JSONResponse(self.jwks)

        async def token(request: Request):
            form = await request.form()
            client_id, secret = form.get("client_id"), form.get("client_secret")
            basic = request.headers.get("authorization", "")
            if basic.lower().startswith("basic "):
                decoded = base64.b64decode(basic[6:]).decode()
                client_id, _, secret = (unquote(part) for part in decoded.partition(":"))
            if (client_id, secret) != (CLIENT_ID, CLIENT_SECRET):
                return JSONResponse({"error": "invalid_client"}, status_code=401)
            if form.get("grant_type") != "client_credentials":
                return JSONResponse({"error": "unsupported_grant_type"}, status_code=400)
            resource = form.get("resource")
            if not resource:
                return JSONResponse({"error": "invalid_target"}, status_code=400)
            scope = form.get("scope") or ""
            self.granted.append(scope)
            return JSONResponse({"access_token": self.mint(resource, scope), "token_type": "Bearer",
                                 "expires_in": 600, "scope": scope})

        return Starlette(routes=[
            Route("/.well-known/oauth-authorization-server", metadata),
            Route("/jwks", keys),
            Route("/token", token, methods=["POST"]),
        ])


def tool_names(listed):
    return sorted(tool.name for tool in listed.tools)


async def follow_challenge(http, label, refused, audience):
    """A 401's challenge names metadata that exists and names `audience`."""
    check(f"{label}: 401", refused.status_code == 401, refused.status_code)
    challenge = refused.headers.get("www-authenticate", "")
    marker = 'resource_metadata="'
    check(f"{label}: challenge names the metadata", marker in challenge, challenge)
    metadata_url = challenge.split(marker, 1)[1].split('"', 1)[0]
    answer = await http.get(metadata_url)
    check(f"{label}: the metadata exists", answer.status_code == 200,
          f"{metadata_url}: {answer.status_code}")
    metadata = answer.json()
    check(f"{label}: metadata resource is the audience", metadata.get("resource") == audience,
          metadata)


async def checks_against(mcp_url, issuer, audience):
    # 1. No token: 401 and a challenge naming the metadata.
    async with httpx2.AsyncClient() as http:
        api_url = mcp_url.rsplit("/", 1)[0] + "/api"
        await follow_challenge(http, "api", await http.get(api_url), audience)
        await follow_challenge(http, "api call", await http.post(
            api_url + "/add", json={"a": 1, "b": 2}), audience)
        refused = await http.post(mcp_url, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-11-25", "capabilities": {},
                       "clientInfo": {"name": "raw", "version": "1"}}},
            headers={"Accept": "application/json, text/event-stream"})
        check("no token: 401", refused.status_code == 401, refused.status_code)
        challenge = refused.headers.get("www-authenticate", "")
        check("no token: bearer challenge", challenge.startswith("Bearer "), challenge)
        marker = 'resource_metadata="'
        check("challenge names the metadata", marker in challenge, challenge)
        metadata_url = challenge.split(marker, 1)[1].split('"', 1)[0]
        metadata = (await http.get(metadata_url)).json()
        check("metadata: resource", metadata.get("resource") == audience, metadata)
        check("metadata: authorization server",
              metadata.get("authorization_servers") == [issuer.url], metadata)
        check("metadata: scopes", metadata.get("scopes_supported") == ["users:write"], metadata)

    # 2. The SDK's client without credentials is refused.
    refused = False
    try:
        async with Client(mcp_url, mode="legacy", read_timeout_seconds=10) as client:
            await client.list_tools()
    except Exception:  # noqa: BLE001 - any refusal will do; the status is checked above
        refused = True
    check("the SDK without a token is refused", refused)

    # 3. A token without scopes: the writes are hidden and refused with 403.
    plain = issuer.mint(audience, "")
    transport_client = create_mcp_http_client(headers={"Authorization": f"Bearer {plain}"})
    async with transport_client:
        from mcp.client.streamable_http import streamable_http_client

        async with Client(streamable_http_client(mcp_url, http_client=transport_client),
                          mode="legacy", read_timeout_seconds=10) as client:
            names = tool_names(await client.list_tools())
            check("no scope: add listed", "add" in names, names)
            check("no scope: users_get listed", "users_get" in names, names)
            check("no scope: users_post hidden", "users_post" not in names, names)
            result = await client.call_tool("add", {"a": 2, "b": 3})
            check("no scope: add runs", not result.is_error, result)
            failed = None
            try:
                await client.call_tool("users_post", {"val": {"name": "Eve"}})
            except Exception as err:  # noqa: BLE001 - the transport's HTTP error
                failed = err
            check("no scope: users_post refused", failed is not None)
        async with httpx2.AsyncClient() as http:
            answer = await http.post(mcp_url, json={
                "jsonrpc": "2.0", "id": 9, "method": "tools/call",
                "params": {"name": "users_post", "arguments": {"val": {"name": "Eve"}}}},
                headers={"Accept": "application/json, text/event-stream",
                         "Authorization": f"Bearer {plain}"})
            check("no scope: 403", answer.status_code == 403, f"{answer.status_code} {answer.text}")
            step_up = answer.headers.get("www-authenticate", "")
            check("403 names the scope", 'error="insufficient_scope"' in step_up
                  and 'scope="users:write"' in step_up, step_up)

    # 4. The SDK's own OAuth flow: challenge → metadata → token → calls.
    class Memory:
        def __init__(self):
            self.tokens = None
            self.info = None

        async def get_tokens(self):
            return self.tokens

        async def set_tokens(self, tokens):
            self.tokens = tokens

        async def get_client_info(self):
            return self.info

        async def set_client_info(self, info):
            self.info = info

    provider = ClientCredentialsOAuthProvider(
        server_url=mcp_url, storage=Memory(), client_id=CLIENT_ID,
        client_secret=CLIENT_SECRET, issuer=issuer.url)
    oauth_client = create_mcp_http_client(auth=provider)
    async with oauth_client:
        from mcp.client.streamable_http import streamable_http_client

        for mode in ("legacy", "auto"):
            async with Client(streamable_http_client(mcp_url, http_client=oauth_client),
                              mode=mode, read_timeout_seconds=10) as client:
                names = tool_names(await client.list_tools())
                check(f"oauth ({mode}): users_post listed", "users_post" in names, names)
                made = await client.call_tool("users_post", {"val": {"name": f"Eve {mode}"}})
                check(f"oauth ({mode}): users_post runs", not made.is_error, made)
    check("the authorization server granted users:write",
          any("users:write" in scope.split() for scope in issuer.granted), issuer.granted)


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--server", required=True)
    parser.add_argument("--audience", choices=["mcp", "origin"], default="mcp")
    args = parser.parse_args()

    issuer_socket = free_socket()
    issuer_url = "http://127.0.0.1:%d" % issuer_socket.getsockname()[1]
    issuer = Issuer(issuer_url)
    config = uvicorn.Config(issuer.app(), log_level="warning", lifespan="off")
    server = uvicorn.Server(config)

    placeholder = free_socket()
    port = placeholder.getsockname()[1]
    placeholder.close()
    mcp_url = f"http://127.0.0.1:{port}/mcp"
    audience = mcp_url if args.audience == "mcp" else f"http://127.0.0.1:{port}"

    async with anyio.create_task_group() as group:
        group.start_soon(lambda: server.serve(sockets=[issuer_socket]))
        while not server.started:
            await anyio.sleep(0.05)
        process = subprocess.Popen(
            [args.server, "--addr", f"127.0.0.1:{port}", "--auth-issuer", issuer_url,
             "--auth-audience", audience],
            stdout=subprocess.DEVNULL)
        try:
            async with httpx2.AsyncClient() as http:
                for _ in range(200):
                    try:
                        await http.get(f"http://127.0.0.1:{port}/.well-known/oauth-protected-resource/mcp")
                        break
                    except httpx2.TransportError:
                        if process.poll() is not None:
                            check("the example server starts", False, f"exit {process.returncode}")
                        await anyio.sleep(0.05)
            await checks_against(mcp_url, issuer, audience)
        finally:
            process.terminate()
            process.wait()
            server.should_exit = True
    print(f"mcp auth client: {checks} checks passed", flush=True)


anyio.run(main)
