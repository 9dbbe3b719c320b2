"""The bottom of the runtime: settings, errors, auth, budgets, metrics, telemetry; imports nothing above it."""
