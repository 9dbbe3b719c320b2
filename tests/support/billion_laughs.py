"""The "billion laughs": YAML whose aliases stand for 10**9 strings in a few hundred bytes."""

from __future__ import annotations


def billion_laughs(indent: str = "", levels: int = 9) -> str:
    """A mapping lol0..lol<levels>: lol0 is one string, each next one a list of ten aliases of the one
    before, so lol9 stands for 10**9 strings. Each line starts with ``indent``."""
    lines = ['lol0: &lol0 "lol"']
    lines += [f"lol{level}: &lol{level} [{', '.join([f'*lol{level - 1}'] * 10)}]" for level in range(1, levels + 1)]
    return "".join(f"{indent}{line}\n" for line in lines)
