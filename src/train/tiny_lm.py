"""The Python example trainer's model (src/train/train.py): a tiny causal language model in plain
PyTorch, the same architecture as stoker-train's (src/train/model.h): token and position
embeddings, pre-norm transformer blocks with causal self-attention and a GELU MLP, a final norm
and a linear head. Small enough to train on CPUs in minutes, big enough for its loss to fall
visibly on real text. It exists to show the loader under a real trainer, not as part of stoker.

With the loader's document boundaries (``stoker.Loader(boundaries=True)``) it attends only within
each document of a packed row (block-diagonal causal attention from ``segment_ids``) and takes
each token's position in its document from ``position_ids``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Dict, Optional

import torch
import torch.nn.functional as F
from torch import nn


@dataclass(frozen=True)
class Shape:
    vocab: int         # token ids are below it
    dim: int = 128     # width of the residual stream
    layers: int = 2    # transformer blocks
    heads: int = 4     # attention heads (must divide dim)
    context: int = 128  # longest input: the loader's seq_len

    def as_dict(self) -> Dict[str, int]:
        return asdict(self)

    def problems(self) -> list[str]:
        """Every reason this shape cannot be built, one line each (named by the trainer's
        flags)."""
        out = []
        if self.vocab < 1:
            out.append(f"the vocabulary is empty (vocab {self.vocab})")
        if self.dim < 1:
            out.append("--dim must be at least 1")
        if self.layers < 1:
            out.append("--layers must be at least 1")
        if self.heads < 1 or (self.dim >= 1 and self.dim % self.heads != 0):
            out.append(f"--heads ({self.heads}) must divide --dim ({self.dim})")
        if self.context < 1:
            out.append("--seq-len must be at least 1")
        return out


class Block(nn.Module):
    def __init__(self, dim: int, heads: int) -> None:
        super().__init__()
        self.heads = heads
        self.norm1, self.norm2 = nn.LayerNorm(dim), nn.LayerNorm(dim)
        self.qkv, self.out = nn.Linear(dim, 3 * dim), nn.Linear(dim, dim)
        self.up, self.down = nn.Linear(dim, 4 * dim), nn.Linear(4 * dim, dim)

    def forward(self, x: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        """x [batch, time, dim]; mask True where a query may not see a key, [time, time] or
        [batch, 1, time, time]."""
        batch, time, dim = x.shape
        q, k, v = (self.qkv(self.norm1(x)).view(batch, time, 3, self.heads, dim // self.heads)
                   .permute(2, 0, 3, 1, 4).unbind(0))
        scores = q @ k.transpose(-2, -1) / math.sqrt(dim // self.heads)
        mixed = torch.softmax(scores.masked_fill(mask, float("-inf")), -1) @ v
        h = x + self.out(mixed.transpose(1, 2).reshape(batch, time, dim))
        return h + self.down(F.gelu(self.up(self.norm2(h))))


class TinyLm(nn.Module):
    def __init__(self, shape: Shape) -> None:
        super().__init__()
        self.shape = shape
        self.tokens = nn.Embedding(shape.vocab, shape.dim)
        self.positions = nn.Embedding(shape.context, shape.dim)
        self.blocks = nn.ModuleList(Block(shape.dim, shape.heads) for _ in range(shape.layers))
        self.norm = nn.LayerNorm(shape.dim)
        self.head = nn.Linear(shape.dim, shape.vocab)
        with torch.no_grad():  # small embeddings: the first losses are near log(vocab)
            self.tokens.weight.normal_(0, 0.02)
            self.positions.weight.normal_(0, 0.02)

    def forward(self, inputs: torch.Tensor, position_ids: Optional[torch.Tensor] = None,
                segment_ids: Optional[torch.Tensor] = None) -> torch.Tensor:
        """inputs int64 [batch, time] -> logits [batch, time, vocab]. Without ``segment_ids``
        a row is one sequence (plain causal attention); without ``position_ids`` positions are
        0, 1, ... along the row."""
        time = inputs.shape[1]
        if position_ids is None:
            position_ids = torch.arange(time)
        x = self.tokens(inputs) + self.positions(position_ids)
        mask = torch.ones(time, time, dtype=torch.bool).triu(1)
        if segment_ids is not None:  # a key of another document is masked as the future is
            mask = (mask | (segment_ids.unsqueeze(2) != segment_ids.unsqueeze(1))).unsqueeze(1)
        for block in self.blocks:
            x = block(x, mask)
        return self.head(self.norm(x))

    def loss(self, inputs: torch.Tensor, labels: torch.Tensor, **documents) -> torch.Tensor:
        """Mean cross-entropy of predicting ``labels`` from ``inputs``."""
        logits = self.forward(inputs, **documents)
        return F.cross_entropy(logits.reshape(-1, self.shape.vocab), labels.reshape(-1))
