"""``kaos-console`` (``python -m kaos.console``): the console on its own, for a cluster.

In a pod it reads the resources with the pod's ServiceAccount; elsewhere give the API server
(``--api-server``, with ``--token-file``/``--ca-file`` as needed, e.g. through ``kubectl proxy``:
``--api-server http://127.0.0.1:8001``). Under ``kaos up`` there is nothing to run: the local
gateway serves the console at its root.

The console forwards chats, approvals and MCP calls to the workloads: like the local server, it
refuses requests from other sites and state-changing requests that are not JSON
(kaos.request_guard). It answers to any Host: a cluster reaches it under names it cannot know.
"""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys
from pathlib import Path

from kaos.console.app import Console
from kaos.console.catalog import CachedCatalog, CatalogError
from kaos.console.kubernetes import KubernetesCatalog, ServiceProxy
from kaos.console.signin import SignIn, SignInConfig
from kaos.request_guard import Policy, RequestGuard


def parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="kaos-console", description="The KAOS web console for a Kubernetes cluster.")
    p.add_argument("--host", default="127.0.0.1", help="address to listen on (0.0.0.0 in a pod)")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--api-server", help="Kubernetes API URL (default: the pod's, from KUBERNETES_SERVICE_HOST)")
    p.add_argument("--token-file", type=Path, help="bearer token for --api-server")
    p.add_argument("--ca-file", type=Path, help="CA bundle for --api-server")
    p.add_argument("--namespace", action="append", default=[], dest="namespaces",
                   help="show only this namespace (repeat for several; default: every namespace)")
    sign_in = p.add_argument_group("sign-in", "people sign in with OpenID Connect (docs/local.md, \"Sign-in\")")
    sign_in.add_argument("--oidc-issuer", default="", help="the issuer URL; with --oidc-client-id the page requires sign-in")
    sign_in.add_argument("--oidc-client-id", default="", help="the console's public client at the issuer")
    sign_in.add_argument("--oidc-audience", default="",
                         help="the audience asked for the access token (the agents' spec.auth.oidc.audience)")
    sign_in.add_argument("--oidc-scopes", default="", help="scopes asked for (default: openid profile)")
    sign_in.add_argument("--oidc-groups-claim", default="", help="the ID token's claim naming the groups (default: groups)")
    p.add_argument("--log-level", default="INFO", choices=["DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL"])
    return p


def catalog_of(args: argparse.Namespace) -> KubernetesCatalog:
    if args.api_server:
        return KubernetesCatalog.connect(args.api_server, args.token_file, args.ca_file, tuple(args.namespaces))
    return KubernetesCatalog.in_cluster(tuple(args.namespaces))


def signin_of(args: argparse.Namespace) -> SignIn | None:
    """The sign-in of the --oidc-* options (None: none asked); ValueError on a half-given one."""
    config = SignInConfig.of(args.oidc_issuer, args.oidc_client_id, args.oidc_audience, args.oidc_scopes,
                             args.oidc_groups_claim)
    return SignIn(config) if config else None


def application(catalog, proxy: ServiceProxy, signin: SignIn | None = None) -> RequestGuard:
    """The console behind the request guard: no request from another site, JSON bodies; any Host."""
    return RequestGuard(Console(catalog, proxy=proxy, signin=signin), Policy(hosts=None))


async def serve(args: argparse.Namespace) -> None:
    import uvicorn

    catalog = catalog_of(args)
    cached = CachedCatalog(catalog, ttl=1.0)
    proxy = ServiceProxy(cached)
    signin = signin_of(args)
    app = application(cached, proxy, signin)
    server = uvicorn.Server(uvicorn.Config(app, host=args.host, port=args.port, lifespan="off",
                                           log_level=args.log_level.lower(), access_log=False))
    try:
        await server.serve()
    finally:
        await proxy.aclose()
        await catalog.aclose()
        if signin is not None:
            await signin.aclose()


def main(argv: list[str] | None = None) -> int:
    p = parser()
    args = p.parse_args(argv)
    try:
        SignInConfig.of(args.oidc_issuer, args.oidc_client_id)
    except ValueError as error:
        p.error(str(error))
    logging.basicConfig(level=args.log_level, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        asyncio.run(serve(args))
    except CatalogError as error:
        print(f"kaos-console: {error}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
