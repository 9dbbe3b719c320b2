"""cluster/*'s templates rendered: ``${NAME}`` (or ``$NAME``) replaced by its value, as envsubst
did, except that a name without a value is an error rather than an empty string. Pure."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path

from tests.support.launcher.layout import TEMPLATES

_REFERENCE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}|\$([A-Za-z_][A-Za-z0-9_]*)")


def names(text: str) -> set[str]:
    return {braced or bare for braced, bare in _REFERENCE.findall(text)}


def render(text: str, variables: Mapping[str, str]) -> str:
    missing = names(text) - variables.keys()
    if missing:
        raise KeyError(f"no value for {', '.join(sorted(missing))}")
    return _REFERENCE.sub(lambda m: variables[m.group(1) or m.group(2)], text)


def render_template(name: str, variables: Mapping[str, str], folder: Path = TEMPLATES) -> str:
    try:
        return render((folder / name).read_text(), variables)
    except KeyError as error:
        raise KeyError(f"{folder / name}: {error.args[0]}") from None
