"""stoker: the MPI data loader for LLM pre-training, for PyTorch trainers written in Python.

Every rank of a job launched by ``mpirun`` or ``srun`` streams its own batches of packed token
rows from a corpus of HDF5 shards: globally shuffled without an index, mixed across datasets by
weight, every document once per epoch over the ranks. Its state is saved into the job's
checkpoint, one file per rank, and a job restarted on another number of ranks goes on with no
token lost and none repeated. The same loader as the C++ library (same order, same checkpoints).

    import stoker
    loader = stoker.Loader("/lustre/corpus", weights={"web": 0.7, "code": 0.3},
                           seq_len=4096, batch_size=8, seed=1234)
    for batch in loader:
        logits = model(batch["input_ids"])
        ...

``help(stoker.Loader)`` explains the loader; docs/python.md in the source tree is the guide.
Importing the package initializes MPI through mpi4py, unless ``mpi4py.rc.initialize`` was set
to False first (a process that only checks settings with ``config_problems``). It does not import
torch: a loader hands over torch tensors where torch can be imported (any PyTorch from 1.13 on),
numpy arrays otherwise or with ``tensors="numpy"``; ``LoaderDataset`` imports torch when first
used.
"""

from mpi4py import MPI  # noqa: F401  (initializes MPI before any loader is made)

from ._stoker import (BusyError, ConfigError, DataError, Error, Hdf5Error, InternalError,
                      IoError, MpiError)
from ._stoker import init_logging as _init_logging
from .config import config_problems, parse_weight_schedule, parse_weights
from .loader import (LayoutComms, Loader, find_resume_step, layout_comms, prepare_fresh_start,
                     prepare_resume)
from .session import (RunSession, check_run_settings, install_stop_handlers, parse_settings,
                      run_settings)

__all__ = [
    "Loader", "LoaderDataset", "LayoutComms", "layout_comms", "find_resume_step", "prepare_resume", "prepare_fresh_start",
    "RunSession", "run_settings", "parse_settings", "check_run_settings", "install_stop_handlers",
    "config_problems", "parse_weights", "parse_weight_schedule",
    "Error", "ConfigError", "BusyError", "DataError", "IoError", "MpiError", "Hdf5Error",
    "InternalError",
]


def __getattr__(name: str):
    """``LoaderDataset``, a torch ``IterableDataset``: imported (with torch) when first asked for."""
    if name == "LoaderDataset":
        from .dataset import LoaderDataset  # pylint: disable=import-outside-toplevel
        return LoaderDataset
    raise AttributeError(f"module 'stoker' has no attribute {name!r}")


# The library's log lines (a resume, a rescale, warnings) on stderr, each with its world rank;
# rank 0 logs progress, the others warnings and errors only.
if MPI.Is_initialized():
    _init_logging(MPI.COMM_WORLD.Get_rank())
