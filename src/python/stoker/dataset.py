"""stoker.LoaderDataset: a stoker.Loader as a torch IterableDataset, for code that wants a
torch.utils.data.DataLoader."""

from __future__ import annotations

from typing import Any, Dict, Iterator, Mapping

import torch.utils.data

from .arguments import checked
from .loader import Loader


class LoaderDataset(torch.utils.data.IterableDataset):
    """Yields the batches of ``loader`` as they are (dicts of tensors, see ``stoker.Loader``).

    Use it as ``DataLoader(LoaderDataset(loader), batch_size=None, num_workers=0)``:
    ``batch_size=None`` because each item already is a whole batch (rows packed and batched by
    stoker); ``num_workers=0`` because stoker reads ahead on its own thread, in the training
    process, and a worker process would be a fork of an MPI rank holding a copy of the loader's
    state: its batches would not be this rank's. Taking a batch in a worker raises
    ``ConfigError`` at once (as for any use of a loader in a forked process). Without workers
    the DataLoader takes one batch at a time, so ``loader.set_weights`` between two batches
    rules from the next one it yields, as on the loader itself."""

    @checked
    def __init__(self, loader: Loader) -> None:
        super().__init__()
        self.loader = loader

    def __iter__(self) -> Iterator[Dict[str, Any]]:
        return iter(self.loader)

    def state_dict(self) -> Dict[str, Any]:
        """The loader's ``state_dict()``: a StatefulDataLoader (torchdata) or a trainer that
        checkpoints the dataset checkpoints the loader."""
        return self.loader.state_dict()

    @checked
    def load_state_dict(self, state: Mapping[str, Any]) -> None:
        """The loader's ``load_state_dict(state)``."""
        self.loader.load_state_dict(state)
