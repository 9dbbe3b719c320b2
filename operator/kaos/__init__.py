"""KAOS: control plane, operator and CLI."""
