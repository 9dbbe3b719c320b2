"""Helpers shared by the test suites (never shipped in the kaos packages)."""
