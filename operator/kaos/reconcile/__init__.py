"""The reconcile core: resource + dependencies -> validation, chart values, status. No I/O.

Used unchanged by the operator (kaos.operator) and the local control plane (kaos.local).
"""

from kaos.reconcile.endpoints import cluster_endpoint_of, cluster_url, endpoint, service_port
from kaos.reconcile.models import admits, offered_models
from kaos.reconcile.plan import DEPLOY, FAILED, WAITING, Plan, failed_plan, plan, resolve_model
from kaos.reconcile.refs import AGENT, CHART_OF, KINDS, MCPSERVER, MODELAPI, Ref, dependencies, ref_of, release_name
from kaos.reconcile.status import PENDING, READY, failed, status

__all__ = [
    "AGENT", "CHART_OF", "DEPLOY", "FAILED", "KINDS", "MCPSERVER", "MODELAPI", "PENDING", "READY",
    "WAITING", "Plan", "Ref", "admits", "cluster_endpoint_of", "cluster_url", "dependencies",
    "endpoint", "failed", "failed_plan", "offered_models", "plan", "ref_of", "release_name", "resolve_model",
    "service_port", "status",
]
