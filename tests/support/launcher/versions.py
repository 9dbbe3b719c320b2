"""scripts/versions, the one pin table of the tools KAOS builds, read (pure parsing; the file is
read by `pins`). A line: ``name=version  [go:<go.mod>@<module>]  # note``."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

TABLE = Path(__file__).resolve().parents[3] / "scripts" / "versions"


@dataclass(frozen=True)
class Pin:
    name: str
    version: str
    go_mod: str | None  # the wrapper module's go.mod (relative to the root) that pins it too
    module: str | None  # the Go module that go.mod requires
    note: str


def parse(text: str) -> list[Pin]:
    pins = []
    for number, line in enumerate(text.splitlines(), 1):
        body, _, note = line.partition("#")
        fields = body.split()
        if not fields:
            continue
        name, equals, version = fields[0].partition("=")
        if not equals or not version.startswith("v"):
            raise ValueError(f"scripts/versions line {number}: expected name=v<version>, got {fields[0]!r}")
        go_mod = module = None
        for extra in fields[1:]:
            if not extra.startswith("go:") or "@" not in extra:
                raise ValueError(f"scripts/versions line {number}: expected go:<go.mod>@<module>, got {extra!r}")
            go_mod, module = extra[3:].split("@", 1)
        pins.append(Pin(name, version, go_mod, module, note.strip()))
    names = [pin.name for pin in pins]
    if len(set(names)) != len(names):
        raise ValueError(f"scripts/versions names a tool twice: {sorted({n for n in names if names.count(n) > 1})}")
    return pins


def pins(table: Path = TABLE) -> dict[str, Pin]:
    return {pin.name: pin for pin in parse(table.read_text())}


def required_version(go_mod_text: str, module: str) -> str | None:
    """The version a go.mod requires of a module (in a require block or on a require line)."""
    for line in go_mod_text.splitlines():
        fields = line.split()
        if fields[:1] == ["require"]:
            fields = fields[1:]
        if len(fields) >= 2 and fields[0] == module and fields[1].startswith("v"):
            return fields[1]
    return None
