"""YAML that a user wrote, parsed within bounds: the one loader for manifests and for the YAML a
resource carries (a ModelAPI's ``proxyConfig.configYaml``).

PyYAML's safe loader makes an alias a second reference to the same object, so a "billion laughs"
document (ten aliases of ten aliases of ...) loads at once into a small shared structure, and
grows past gigabytes as soon as anything walks it: the JSON sent to the control plane, a deep
copy, ``str()``. Each input is therefore refused

- before parsing, when it is larger than MAX_BYTES (a file's reader stops reading there:
  kaos.local.manifests);
- while composing, before anything is built from it, when its aliases add more than
  MAX_ALIAS_NODES nodes (each alias counts the nodes it stands for, aliases inside it included),
  when an alias refers to a node that contains it, or when it nests deeper than MAX_DEPTH
  levels with its aliases expanded (what a recursive walk of the result would descend).

Without aliases a document has at most a node per two bytes, so MAX_BYTES bounds it; with them,
the expanded document holds at most MAX_ALIAS_NODES more.
"""

from __future__ import annotations

from typing import Any

import yaml

MAX_BYTES = 4 * 1024 * 1024
MAX_ALIAS_NODES = 100_000
MAX_DEPTH = 64


class YAMLInputError(ValueError):
    """YAML refused: not valid, or past a bound. The message starts with the input's name."""


def too_large(source: str) -> str:
    """The refusal of an input larger than MAX_BYTES (a reader that stops at the bound says it too)."""
    return f"{source}: larger than {MAX_BYTES} bytes, the limit of one YAML input"


def load_all(text: str | bytes, source: str) -> list[Any]:
    """Every document of ``text`` (None for an empty one), or YAMLInputError naming ``source``."""
    data = text.encode() if isinstance(text, str) else text
    if len(data) > MAX_BYTES:
        raise YAMLInputError(too_large(source))
    try:
        loader = _BoundedLoader(data.decode("utf-8"), source)
    except UnicodeDecodeError as error:
        raise YAMLInputError(f"{source}: not valid YAML: not UTF-8 ({error.reason} at byte {error.start})") from None
    try:
        documents = []
        while loader.check_data():
            documents.append(loader.get_data())
        return documents
    except yaml.YAMLError as error:
        raise YAMLInputError(f"{source}: not valid YAML: {error}") from None
    finally:
        loader.dispose()


def load(text: str | bytes, source: str) -> Any:
    """The one document of ``text`` (None when empty), or YAMLInputError naming ``source``."""
    documents = load_all(text, source)
    if len(documents) > 1:
        raise YAMLInputError(f"{source}: expected one YAML document, found {len(documents)}")
    return documents[0] if documents else None


# The attribute a composed node carries: (its nodes, its depth), aliases expanded. A node still
# being composed has none yet.
MEASURED = "kaos_measured"


class _BoundedLoader(yaml.SafeLoader):
    """The safe loader, measuring each node as it is composed."""

    def __init__(self, stream: str, source: str):
        super().__init__(stream)
        self.source = self.name = source  # PyYAML's own messages name the input too
        self.alias_nodes = 0
        self.depth = 0

    def compose_node(self, parent, index):
        if self.check_event(yaml.AliasEvent):
            event = self.peek_event()
            target = self.anchors.get(event.anchor)
            if target is not None:  # an undefined alias is PyYAML's own error
                measured = getattr(target, MEASURED, None)
                if measured is None:
                    raise YAMLInputError(f"{self.source}: the alias *{event.anchor} {_at(event)} refers to a node "
                                         "that contains it (a recursive alias)")
                self.alias_nodes += measured[0]
                if self.alias_nodes > MAX_ALIAS_NODES:
                    raise YAMLInputError(
                        f"{self.source}: its aliases stand for more than {MAX_ALIAS_NODES} nodes (refused at "
                        f"*{event.anchor} {_at(event)}), the limit on YAML aliases; write the values out instead")
            return super().compose_node(parent, index)
        self.depth += 1
        try:
            if self.depth > MAX_DEPTH:
                raise YAMLInputError(f"{self.source}: nested deeper than {MAX_DEPTH} levels {_at(self.peek_event())}")
            node = super().compose_node(parent, index)
        finally:
            self.depth -= 1
        self._measure(node)
        return node

    def _measure(self, node: yaml.Node) -> None:
        if isinstance(node, yaml.SequenceNode):
            children = node.value
        elif isinstance(node, yaml.MappingNode):
            children = [child for pair in node.value for child in pair]
        else:
            children = []
        sizes = [getattr(child, MEASURED) for child in children]
        depth = 1 + max((d for _, d in sizes), default=0)
        if depth > MAX_DEPTH:
            raise YAMLInputError(f"{self.source}: nested deeper than {MAX_DEPTH} levels with its aliases expanded "
                                 f"{_at(node)}")
        setattr(node, MEASURED, (1 + sum(n for n, _ in sizes), depth))


def _at(mark_holder) -> str:
    mark = mark_holder.start_mark
    return f"(line {mark.line + 1}, column {mark.column + 1})"
