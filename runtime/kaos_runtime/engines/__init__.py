"""Model servers the control side runs as programs (``python -m kaos_runtime.engines.<name>``)."""
