"""Token trees: many prompt+option sequences that share prefixes, computed once per node.

Every option of an item continues the same prompt, and neighbouring items share their context (the
system prompt, the names, the attribute sentences), so scoring each (prompt, option) as its own sequence
computes the same prefix again and again. A trie stores each shared prefix once; forward passes run over
windows of its nodes with positions = depth and an attention mask that lets a node see only its ancestors
and itself, those in earlier windows read from their stored keys and values. That is the same
computation, token for token, as running every path on its own (masked keys get weight exactly 0), so the
option log-likelihoods are those of separate sequences up to float rounding
(tests/test_backend_hf_causal.py holds them to 1e-4 nats).
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

    def window_mask(self, start: int, end: int) -> tuple[torch.Tensor, torch.Tensor]:
        """What nodes start..end-1 attend to when they are computed in one forward pass after the nodes before.

        Returns `context`, the earlier nodes among their ancestors (ascending; their keys and values come from
        the passes before), and a (end - start, len(context) + end - start) bool mask over context then window:
        row i is True at node start+i and at each of its ancestors.
        """
        rows = torch.zeros(end - start, end, dtype=torch.bool)
        for node in range(start, end):
            parent = self.parents[node]
            if parent >= start:
                rows[node - start] = rows[parent - start]
            else:  # the path leaves the window here: its earlier part, walked up to the root
                earlier = []
                while parent >= 0:
                    earlier.append(parent)
                    parent = self.parents[parent]
                rows[node - start, earlier] = True
            rows[node - start, node] = True
        context = rows[:, :start].any(0).nonzero().squeeze(1)
        return context, torch.cat([rows[:, context], rows[:, start:]], 1)
