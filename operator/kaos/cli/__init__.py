"""The `kaos` command, on top of the local control plane.

- ``commands``: the parser, put together from one module per verb group, and ``main``;
- the verb groups: ``lifecycle`` (up, down), ``resources`` (apply, delete, get, logs), ``chat``,
  ``triggers``, ``approvals``, ``memory``, ``audit``, ``models``, ``login`` (login, logout);
- ``context``: what the commands share (settings, the control plane's client, the token, name checks);
- ``client``: the client of a running control plane's admin API (also used by the e2e suite),
  and starting/stopping one in the background;
- ``display``: what the commands print (tables, progress lines, the "try it" summary).
"""

from kaos.cli.commands import main

__all__ = ["main"]
