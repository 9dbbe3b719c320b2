"""``python -m kaos.operator`` / ``kaos-operator``: run the operator with settings from KAOS_* env."""

from __future__ import annotations

import logging
import sys

import kopf
from prometheus_client import start_http_server

from kaos.metrics import REGISTRY
from kaos.settings import Settings


def main() -> int:
    try:
        settings = Settings.from_env()
    except ValueError as error:
        print(f"kaos-operator: invalid settings: {error}", file=sys.stderr)
        return 2
    kopf.configure(log_format=kopf.LogFormat.JSON, verbose=settings.log_level == "DEBUG")
    logging.getLogger().setLevel(settings.log_level)
    logging.getLogger("aiohttp.access").setLevel(logging.WARNING)  # one line per probe otherwise

    import kaos.operator.handlers  # noqa: F401  (registers the handlers)

    if settings.metrics_port:  # reconcile counts and durations (kaos.metrics) at :<port>/metrics
        try:
            start_http_server(settings.metrics_port, addr=settings.health_host, registry=REGISTRY)
        except OSError as error:
            print(f"kaos-operator: cannot serve metrics on {settings.health_host}:{settings.metrics_port}: "
                  f"{error.strerror or error}", file=sys.stderr)
            return 2

    namespaces = list(settings.watch_namespaces)
    kopf.run(
        standalone=True,
        clusterwide=not namespaces,
        namespaces=namespaces,
        liveness_endpoint=f"http://{settings.health_host}:{settings.health_port}/healthz",
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
