"""The `kaos` command, on top of the local control plane.

- ``commands``: argument parsing and the commands (`kaos up`, apply, delete, get, logs, chat, down);
- ``client``: the client of a running control plane's admin API (also used by the e2e suite),
  and starting/stopping one in the background;
- ``display``: what the commands print (tables, progress lines, the "try it" summary).
"""

from kaos.cli.commands import main

__all__ = ["main"]
