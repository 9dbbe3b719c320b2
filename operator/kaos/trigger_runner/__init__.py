"""Runs Triggers for a control plane (the I/O edge of ``kaos.triggers``).

- ``executor``: one run: the message to the agent's endpoint, bounded by the run's limits
- ``engine``: every Trigger of one control plane: schedules, webhook calls and manual runs,
  each Trigger's runs, and the status to write (through the control plane's ``TriggerHost``)
"""
