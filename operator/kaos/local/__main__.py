"""``python -m kaos.local --port 8080``: run the control plane in this process (what `kaos up --detach` spawns)."""

from __future__ import annotations

import argparse
import asyncio
import logging
import sys

from kaos.local.ports import PortInUse
from kaos.local.server import serve
from kaos.settings import Settings


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m kaos.local")
    parser.add_argument("--port", type=int, default=8080)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        settings = Settings.from_env()
        asyncio.run(serve(settings.home, args.port, settings))
    except (PortInUse, ValueError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
