"""Token trees: many prompt+option sequences that share prefixes, computed once per node.

Every option of an item continues the same prompt, and neighbouring items share their context (the
system prompt, the names, the attribute sentences), so scoring each (prompt, option) as its own sequence
computes the same prefix again and again. A trie stores each shared prefix once; forward passes run over
windows of its nodes with positions = depth and an attention mask that lets a node see only its ancestors
and itself, those in earlier windows read from their stored keys and values. That is the same
computation, token for token, as running every path on its own (masked keys get weight exactly 0), so the
option log-likelihoods are those of separate sequences up to float rounding
(tests/backends/test_backend_hf_causal.py holds them to 1e-4 nats).
"""

from __future__ import annotations

from dataclasses import dataclass, field

import torch


@dataclass
class TokenTree:
    """A trie of token ids in insertion order (a parent always precedes its children)."""

    tokens: list[int] = field(default_factory=list)
    parents: list[int] = field(default_factory=list)  # negative for a root
    depths: list[int] = field(default_factory=list)
    _children: dict[tuple[int, int], int] = field(default_factory=dict)
    _namespaces: int = 1  # root namespaces handed out: -1 is the shared one

    def private_root(self) -> int:
        """A root namespace of its own: a path started there shares no node with any other path."""
        self._namespaces += 1
        return -self._namespaces

    def __len__(self) -> int:
        return len(self.tokens)

    def extend(self, parent: int, ids: list[int]) -> list[int]:
        """Walk `ids` down from `parent`, adding missing nodes; returns the path's nodes.

        A negative `parent` starts at the roots of that namespace: paths started from -1 share their
        prefixes; a path started from `private_root()` shares nothing (a separate sequence).
        """
        path = []
        for token in ids:
            node = self._children.get((parent, token))
            if node is None:
                node = len(self.tokens)
                self._children[(parent, token)] = node
                self.tokens.append(token)
                self.parents.append(parent)
                self.depths.append(self.depths[parent] + 1 if parent >= 0 else 0)
            path.append(node)
            parent = node
        return path

    def shared_with(self, other: TokenTree) -> dict[int, int]:
        """This tree's nodes whose whole path from the shared roots is in `other` too, each with its node there."""
        found: dict[int, int] = {}
        for node, (token, parent) in enumerate(zip(self.tokens, self.parents, strict=True)):
            if parent == -1 or parent in found:
                match = other._children.get((found.get(parent, -1), token))
                if match is not None:
                    found[node] = match
        return found

    def window_mask(self, nodes: list[int]) -> tuple[torch.Tensor, torch.Tensor]:
        """What `nodes` (ascending) attend to when they are computed in one forward pass after the rest.

        Returns `context`, their ancestors outside `nodes` (ascending; their keys and values were computed
        before), and a (len(nodes), len(context) + len(nodes)) bool mask over context then `nodes`: row i is
        True at nodes[i] and at each of its ancestors.
        """
        row_of = {node: row for row, node in enumerate(nodes)}
        rows = torch.zeros(len(nodes), nodes[-1] + 1, dtype=torch.bool)
        for row, node in enumerate(nodes):
            parent = self.parents[node]
            if parent in row_of:
                rows[row] = rows[row_of[parent]]
            else:  # the path enters `nodes` here: its ancestors, walked up to the root
                ancestors = []
                while parent >= 0:
                    ancestors.append(parent)
                    parent = self.parents[parent]
                rows[row, ancestors] = True
            rows[row, node] = True
        own = torch.tensor(nodes)
        outside = rows.any(0)
        outside[own] = False
        context = outside.nonzero().squeeze(1)
        return context, torch.cat([rows[:, context], rows[:, own]], 1)
