"""The agent's step and memory defaults and bounds, as pydantic Field arguments per variable.

Written by scripts/generate from the Agent CRD (charts/kaos/files/crds/agent.yaml), their one
source; do not edit (a test checks it)."""

FIELDS = {
    'AGENTIC_LOOP_MAX_STEPS': {'default': 5, 'ge': 1, 'le': 20},
    'MEMORY_ENABLED': {'default': True},
    'MEMORY_CONTEXT_LIMIT': {'default': 6, 'ge': 1},
    'MEMORY_MAX_SESSIONS': {'default': 1000, 'ge': 1},
    'MEMORY_MAX_SESSION_EVENTS': {'default': 500, 'ge': 1},
}
