"""Walking a physical plan from Python (py4j), for the A/B scripts that read a node's metrics."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any


def find_node(node: Any, matches: Callable[[Any], bool]) -> Any:
    """The first node of a physical plan, depth first, for which `matches` holds, or None.

    Adaptive execution wraps finished stages (`ResultQueryStage`, `ShuffleQueryStage`, ...) whose
    plan is not among their children, so the walk enters them explicitly.
    """
    if matches(node):
        return node
    if node.nodeName().endswith("QueryStage"):
        return find_node(node.plan(), matches)
    children = node.children()
    for i in range(children.size()):
        found = find_node(children.apply(i), matches)
        if found is not None:
            return found
    return None


def named(prefix: str) -> Callable[[Any], bool]:
    """A `find_node` test for nodes whose name starts with `prefix`."""
    return lambda n: n.nodeName().startswith(prefix)
