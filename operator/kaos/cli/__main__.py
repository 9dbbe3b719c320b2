"""``python -m kaos.cli``: the `kaos` command."""

import sys

from kaos.cli.commands import main

sys.exit(main())
