"""Token trees: many prompt+option sequences that share prefixes, packed into one forward pass.

Every option of an item continues the same prompt, and neighbouring items share their context (the
system prompt, the names, the attribute sentences), so scoring each (prompt, option) as its own sequence
computes the same prefix again and again. A trie stores each shared prefix once; the forward pass runs
over its nodes with positions = depth and an attention mask that lets a node see only its ancestors and
itself. That is the same computation, token for token, as running every path on its own (masked keys
get weight exactly 0), so the option log-likelihoods are those of separate sequences up to float
rounding (tests/test_backend_hf_causal.py holds them to 1e-4 nats).
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

    def new_nodes(self, parent: int, ids: list[int]) -> int:
        """How many nodes `extend(parent, ids)` would add (to keep a tree under its token budget)."""
        for offset, token in enumerate(ids):
            node = self._children.get((parent, token))
            if node is None:
                return len(ids) - offset
            parent = node
        return 0

    def ancestor_mask(self) -> torch.Tensor:
        """(nodes, nodes) bool: row i is True at i and at every ancestor of i."""
        size = len(self.tokens)
        mask = torch.zeros(size, size, dtype=torch.bool)
        for node, parent in enumerate(self.parents):
            if parent >= 0:
                mask[node] = mask[parent]
            mask[node, node] = True
        return mask
