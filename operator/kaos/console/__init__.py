"""The KAOS console: a web UI to see the agent network, chat with agents and read their memory.

The front end is plain static files (``static/``: HTML, CSS and JavaScript modules, no build
step, nothing fetched from elsewhere). The server side is one small ASGI app, :class:`Console`,
that serves those files and ``/_console/api/resources`` (every KAOS resource with its status)
from a :class:`Catalog`. The front end reaches the workloads with the gateway's URL layout,
``/<namespace>/<agent|modelapi|mcp>/<name>/...``, on the same origin:

- under ``kaos up`` the local gateway serves those paths and mounts the console at ``/``
  (the control plane lists the resources: :class:`LocalCatalog`);
- in a cluster ``kaos-console`` (``python -m kaos.console``) runs on its own: it lists the
  resources through the Kubernetes API with its own ServiceAccount
  (:class:`kaos.console.kubernetes.KubernetesCatalog`) and serves the same paths itself,
  forwarding them to the workloads' Services (:class:`kaos.console.kubernetes.ServiceProxy`).

The console imports neither the operator nor the local control plane; they hand it what it needs.
"""

from kaos.console.app import CONSOLE_PREFIX, Console
from kaos.console.catalog import Catalog, CatalogError, Health, LocalCatalog

__all__ = ["CONSOLE_PREFIX", "Catalog", "CatalogError", "Console", "Health", "LocalCatalog"]
