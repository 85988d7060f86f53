"""stoker.Loader: every rank's stream of batches, its checkpoints and the resume helpers."""

from __future__ import annotations

import atexit
import hashlib
import json
import os
import sys
import weakref
from typing import Any, Dict, Iterator, List, Mapping, NamedTuple, Optional, Sequence, Union

from mpi4py import MPI

from . import _stoker
from .arguments import Path, Text, checked
from .config import ScheduleEntry, WeightSchedule, _make_config

# The C++ loader's defaults: the signature of Loader shows them, written nowhere else.
_DEFAULT = _stoker.LoaderConfig()

Batch = Dict[str, Any]

_STATE_FORMAT = "stoker.loader/2"  # the state inline, and the step folder of a save at its step
_STATE_FORMAT_1 = "stoker.loader/1"  # the step folder alone


def _converter(tensors: Optional[str]) -> Any:
    """What each array of a batch goes through: ``torch.from_numpy`` (a tensor sharing its
    memory) for "torch", None for "numpy"; by default torch where it can be imported."""
    if tensors not in (None, "torch", "numpy"):
        raise _stoker.ConfigError(f"tensors={tensors!r}: give \"torch\" or \"numpy\"")
    if tensors == "numpy":
        return None
    try:
        import torch  # pylint: disable=import-outside-toplevel
    except ImportError as error:
        if tensors is None:
            return None
        raise _stoker.ConfigError(f"tensors=\"torch\", but torch cannot be imported: {error}")
    return torch.from_numpy


def _handle(comm: Optional[MPI.Comm]) -> int:
    """The Fortran handle of an mpi4py communicator (the world by default)."""
    return (comm if comm is not None else MPI.COMM_WORLD).py2f()


def _handle_or_null(comm: Optional[MPI.Comm]) -> int:
    """The Fortran handle of an mpi4py communicator, MPI_COMM_NULL's for None."""
    return (comm if comm is not None else MPI.COMM_NULL).py2f()


class LayoutComms(NamedTuple):
    """The groups of a parallel layout for this rank (stoker/layout.h's LayoutComms)."""
    data_parallel: MPI.Comm  # the ranks of the same tp, cp and pp coordinates, by dp coordinate
    replica: MPI.Comm  # the ranks of this rank's dp coordinate: one model replica
    gradient: MPI.Comm  # the ranks of the same tp and pp coordinates (dp x cp), in job order


@checked
def layout_comms(layout: Text, comm: Optional[MPI.Comm] = None) -> LayoutComms:
    """This rank's data-parallel, replica and gradient groups of a parallel layout (``layout``
    of ``Loader``) over ``comm`` (default the world), as mpi4py communicators the caller frees
    (``Free()``): for a trainer that has no groups of its own yet, to pass the first two to
    ``Loader`` and to average gradients over the third (with context parallelism each cp rank's
    gradients are of its part of the rows). Collective; ``ConfigError`` on every rank for a
    layout that does not parse or whose sizes' product is not the size of ``comm``."""
    handles = _stoker.layout_comms(_handle(comm), layout)
    return LayoutComms(*(MPI.Comm.f2py(h) for h in handles))


class Loader:
    """Every rank's stream of batches of packed token rows, for a data-parallel trainer.

    Construction is collective over ``comm`` (an mpi4py communicator, default ``MPI.COMM_WORLD``;
    the loader duplicates it): it discovers the corpus and checks the configuration on every rank,
    and fails on every rank together with one of stoker's errors (``stoker.ConfigError``,
    ``DataError``, ``IoError``, ...; all are ``stoker.Error``) carrying the same message as the C++
    loader. After that each rank iterates on its own; a background thread per rank reads ahead.

    Iterating gives one dict per training step of torch tensors (on the CPU) or, with
    ``tensors="numpy"`` (the default where torch cannot be imported), of numpy arrays (for JAX or
    other frameworks), sharing the loader's memory (no copy; the compiled module has no libtorch:
    any PyTorch from 1.13 on takes the arrays with ``torch.from_numpy``):

    - ``tokens``: int64 [batch_size, seq_len + 1], the packed rows;
    - ``input_ids``: int64 [batch_size, seq_len], a view of ``tokens`` without its last column;
      ``labels``: int64 [batch_size, seq_len], ``tokens`` without its first column in a buffer of
      its own, which the trainer may change in place (``labels[loss_mask == 0] = -100``) without
      touching ``input_ids`` or ``tokens``;
    - ``step``: int, the global step of this batch (1 for the first batch of a fresh run);
    - ``dataset_tokens``: dict, dataset name -> tokens of this batch from it;
    - with ``boundaries=True``, where documents begin and end in the rows, computed from what
      the loader packed (never guessed from EOS ids): ``position_ids`` int64 [B, S] (positions
      within each document; ``positions="restart"``, the default, also restarts them at each
      row, ``"continue"`` carries on from the previous row), ``cu_seqlens`` int32 and
      ``max_seqlen`` int (FlashAttention's variable-length form over the flattened inputs),
      ``segment_ids`` int32 [B, S] (1, 2, ... per row), ``loss_mask`` float32 [B, S] (0.0 where
      the label is the first token of the next document).

    The stream does not end: it wraps from epoch to epoch. Every call that waits (``next()``, a
    save waiting for the previous write, construction and ``load_state_dict``) releases the GIL
    and lets the signal handlers run every 50 ms meanwhile: Ctrl-C (a ``KeyboardInterrupt``)
    arrives while storage is slow. The batch it interrupted is not counted as delivered
    (``save()`` in the handler saves the state after the last batch the trainer received; the
    next ``next()`` hands that batch over); a write goes on in the background; an interrupted
    construction or load goes on to its end on a thread of the package, its result dropped
    (docs/python.md, "Threads, processes and signals").

    Threads: calls from several threads are serialized, each waiting for the one before (two
    threads taking batches get one batch each, in turn; ``set_weights`` waits for a ``next()``
    in progress). Processes: a loader belongs to the process that made it; in a fork of it (a
    ``DataLoader`` worker, ``multiprocessing``) taking a batch, saving or setting weights raises
    ``ConfigError`` at once: make a loader in each process, or take the batches in this one.

    Arguments (all but ``data`` by keyword): ``weights`` dataset name -> relative weight (default
    by tokens; datasets not named are not read); ``weight_schedule`` weights that change with the
    step (below; not with ``weights``); ``seq_len``; ``batch_size`` rows per rank;
    ``seed``; ``logical_shards`` (units of the order ranks own; any rank count up to it works);
    ``deal_max_docs`` (a dataset of at most this many documents is dealt to the ranks, its
    epochs the dataset's over all ranks; docs/loader.md, "Epochs: dealt and walked");
    ``tensors`` ("torch", "numpy"; default torch where it can be imported);
    ``eos_id`` / ``bos_id`` (default: the corpus's eos_id attribute, no BOS); ``prefetch``
    finished batches kept ready; ``resume_from`` a checkpoint step folder to go on from (see
    ``prepare_resume``); ``comm``; ``boundaries`` and ``positions`` as above; ``io_depth``
    (reads in flight, "auto" or a number), ``io_engine`` ("auto", "uring", "threads"),
    ``direct_io`` ("auto", "on", "off"), ``read_ahead_bytes`` and ``offset_cache_bytes``: how it
    reads (docs/loader.md, "Reading from storage"); ``trace_dir``: every rank writes what it was
    handed there, batch by batch, for ``stoker audit TRACE_DIR`` (no token lost or repeated
    across a chain of resumes on any rank counts; docs/operations.md). The trace opens with the
    first batch, at the step the loader starts from (a ``load_state_dict`` before it included),
    so that first ``next()`` is collective. The defaults are the C++ loader's, written once in
    include/stoker/loader.h (``stoker.LoaderConfig()`` shows them).

    Parallel layouts. In a job that splits its model (tensor, context, pipeline parallel), only
    the data-parallel dimension takes different data: ``layout="tp=2,cp=2,dp=4,pp=2"`` (sizes in
    rank order, the first varying fastest, as Megatron numbers ranks; names left out have size 1)
    makes every rank of one model replica hold the same batches, its data-parallel rank's.
    ``data_parallel_comm`` and ``replica_comm`` give a trainer's own groups instead (both;
    ``layout_comms`` makes them). ``replica_feed``: "broadcast" (the replica's first rank reads
    and broadcasts each batch a step ahead) or "read" (every member reads the same batches
    itself). ``fields_by_stage``: with pp > 1 the first pipeline stage takes the rows and the
    fields of the inputs, the last the rows and ``loss_mask``, the stages between nothing (an
    empty batch of the step). ``comm`` is then the whole job, and a save writes one file per
    data-parallel rank (docs/loader.md, "Parallel layouts").

    Every argument is of the type its hint says, None only where it says ``Optional``: another
    (``seq_len=None``, ``seq_len=True``, ``boundaries="no"``, ``trace_dir=5``) is a TypeError
    naming it; a value out of range (``seq_len=-1``, ``eos_id=2**63``) or one the loader
    refuses (``seq_len=0``, ``bos_id`` equal to the EOS id) a ``ConfigError``. ``data``,
    ``resume_from`` and ``trace_dir`` are ``str`` or ``os.PathLike`` paths, made absolute.

    Dynamic mixing. ``weight_schedule`` is a list of entries ``{"step": S, "weights": {name: w},
    "ramp": False}``, the first at step 0, steps increasing: a jump rules from batch S + 1 on
    (batch["step"] > S; S counts the batches delivered before), a ramp (``"ramp": True``) takes
    the weights linearly from the entry before's, at its step, to its own, reached at S. It may
    also be given as text: the inline form of ``parse_weight_schedule``, or the path of a TOML or
    JSON schedule file (as ``stoker run --weights-schedule``). ``set_weights`` changes them from
    the next batch on. A resume follows this configuration's schedule for the steps not yet run,
    not the weights the saved run set online: a trainer that sets them sets them again after it
    resumes.
    """

    @checked
    def __init__(self, data: Path, *, weights: Optional[Mapping[str, float]] = None,
                 weight_schedule: Optional[WeightSchedule] = None,
                 seq_len: int = _DEFAULT.seq_len, batch_size: int = _DEFAULT.batch_size,
                 seed: int = _DEFAULT.seed, logical_shards: int = _DEFAULT.logical_shards,
                 deal_max_docs: int = _DEFAULT.deal_max_docs,
                 eos_id: Optional[int] = None, bos_id: Optional[int] = None,
                 prefetch: int = _DEFAULT.prefetch,
                 resume_from: Optional[Path] = None, comm: Optional[MPI.Comm] = None,
                 boundaries: bool = False, positions: str = "restart",
                 io_depth: Union[int, str] = "auto", io_engine: str = _DEFAULT.io_engine,
                 direct_io: str = _DEFAULT.direct_io, read_ahead_bytes: Optional[int] = None,
                 offset_cache_bytes: Optional[int] = None, trace_dir: Optional[Path] = None,
                 layout: Optional[Text] = None, data_parallel_comm: Optional[MPI.Comm] = None,
                 replica_comm: Optional[MPI.Comm] = None, replica_feed: str = "broadcast",
                 fields_by_stage: bool = False, tensors: Optional[str] = None) -> None:
        config = _make_config(
            data, weights=weights, weight_schedule=weight_schedule, seq_len=seq_len,
            batch_size=batch_size, seed=seed,
            logical_shards=logical_shards, deal_max_docs=deal_max_docs, eos_id=eos_id, bos_id=bos_id, prefetch=prefetch,
            boundaries=boundaries, positions=positions, io_depth=io_depth, io_engine=io_engine,
            direct_io=direct_io, read_ahead_bytes=read_ahead_bytes,
            offset_cache_bytes=offset_cache_bytes, layout=layout, replica_feed=replica_feed,
            fields_by_stage=fields_by_stage)
        config.resume_from = resume_from or ""
        if data_parallel_comm is not None or replica_comm is not None:
            config.set_layout_comms(_handle_or_null(data_parallel_comm),
                                    _handle_or_null(replica_comm))
        self._open(config, comm, trace_dir or "", tensors)

    def _open(self, config: "_stoker.LoaderConfig", comm: Optional[MPI.Comm], trace_dir: str,
              tensors: Optional[str]) -> None:
        """The C++ loader of ``config``, with this object's bookkeeping. Collective."""
        convert = _converter(tensors)  # before the collective: refused on every rank alike
        self._config = config
        self._loader = _stoker.Loader(_handle(comm), config, trace_dir)
        self._loader.set_convert(convert)
        self.tensors = "numpy" if convert is None else "torch"
        self._weights_set = False  # by set_weights, which load_state_dict would undo
        _LOADERS.add(self)

    @classmethod
    def _of_config(cls, config: "_stoker.LoaderConfig", comm: Optional[MPI.Comm],
                   tensors: Optional[str] = None) -> "Loader":
        """A loader of a C++ LoaderConfig made elsewhere (a run session's). Collective."""
        loader = cls.__new__(cls)
        loader._open(config, comm, "", tensors)
        return loader

    def __del__(self) -> None:
        _check_last_save(self)

    def close(self) -> None:
        """Ends the loader: waits for its last save to be written (raising its error, as
        ``wait_for_save``), then stops its reading thread and frees its buffers on a thread of
        their own, so that a read storage holds up does not hold up the caller (the process
        waits for it at exit). Every later call but ``close()`` raises ``ConfigError``. Deleting
        the loader (or leaving a ``with`` block) ends it the same way."""
        if not self._loader.closed:
            self._loader.close()

    @property
    def closed(self) -> bool:
        """Whether ``close()`` ended the loader."""
        return self._loader.closed

    def __enter__(self) -> "Loader":
        return self

    def __exit__(self, *exception: Any) -> None:
        self.close()

    def __iter__(self) -> Iterator[Batch]:
        # The compiled loader itself: a for loop takes each batch straight from it, with no
        # Python code between the batch counted as delivered and the loop's variable.
        return self._loader

    def __next__(self) -> Batch:
        return self._loader.next()

    @checked
    def save(self, step_dir: Path) -> None:
        """Saves this rank's state after the last batch into ``step_dir``/loader/ (one file per
        rank, no communication; every rank calls it for the same step). Returns once the state is
        copied; the file is written in the background (``wait_for_save``). Raises the error of
        the previous save, if it failed (waiting for it with the GIL released). A failed write
        that nobody waited for ends the program with exit code 1 (docs/python.md). ``step_dir``
        is a ``str`` or ``os.PathLike``, made absolute (``state_dict()`` names it so): an empty
        one or another type is refused (ValueError, TypeError) before anything is written."""
        self._loader.save(step_dir)

    def wait_for_save(self) -> None:
        """Waits for the last save's file to be written; raises its error. Nothing to wait for
        once closed."""
        if not self._loader.closed:
            self._loader.wait_for_save()

    @property
    def step(self) -> int:
        """The global step of the last batch taken (the resumed step before the first)."""
        return self._loader.step

    @property
    def rank(self) -> int:
        return self._loader.rank

    @property
    def world_size(self) -> int:
        return self._loader.world_size

    @property
    def weights(self) -> Dict[str, float]:
        """The mixing weights of the next batch (step ``self.step + 1``), normalized, by dataset
        name: along a ramp they change from batch to batch."""
        return self._loader.weights

    @property
    def schedule(self) -> List[ScheduleEntry]:
        """The weight schedule in force, ``set_weights`` included: a list of entries
        ``{"step": int, "ramp": bool, "weights": {name: w}}`` with normalized weights, every
        dataset named. Kept beside a checkpoint and given back as ``weight_schedule`` when
        resuming from it on the same number of ranks, it gives the stream the run would have
        given, bit for bit (a ramp cut short by ``set_weights`` is stored as a shorter ramp, whose
        earlier steps may differ in the last bits of their weights)."""
        return self._loader.schedule

    @checked
    def shares(self, since_step_zero: bool = False) -> Dict[str, Any]:
        """What the mixer promises, measured over the data-parallel ranks (a replica's batches
        counted once), exact through resumes and rescales: each dataset's tokens since the
        weights last changed (a jump, a ramp's start, ``set_weights``) when this loader delivered
        that step, else since step 0; with ``since_step_zero``, since step 0 (the whole run). A
        dict: ``from_step``, ``to_step`` (``self.step``), ``tokens`` and ``promised`` (name ->
        its framed tokens, and the tokens the weights of those steps give it), ``weights`` (name
        -> the last step's), ``largest_gap`` (tokens: the largest |tokens - promised|, which the
        mixer keeps within about a document per rank), ``text`` (as the trainers log it).
        Collective: every rank calls it after the same step."""
        return self._loader.shares(since_step_zero)

    @checked
    def set_weights(self, weights: Mapping[str, float]) -> None:
        """Mixes by ``weights`` (dataset name -> relative weight; datasets not named: 0) from
        the next batch on, for good: they replace the rest of the schedule (a ramp in progress
        stops where it stood), as a jump of the schedule would.

        Collective over the loader's communicator: every rank calls it after the same step
        with the same weights (the ranks' streams are then those of the schedule that jumps at
        this step); a call whose step or weights differ between ranks raises ``ConfigError`` on
        every rank, naming them and their ranks, and changes nothing. The batches read ahead
        are dropped and read again (the GIL is released meanwhile). The next ``save()``
        records the change, but a resume follows its own configuration's schedule: a trainer
        that sets weights online sets them again after it resumes (or resumes with
        ``weight_schedule=`` the ``schedule`` it kept with the checkpoint, for the very same
        stream). ``ConfigError`` naming the problem for weights the corpus cannot follow (an
        unknown dataset, all 0, a dataset without tokens or without documents on some rank):
        the loader goes on as before then."""
        self._loader.set_weights(dict(weights))
        self._weights_set = True

    @property
    def eos_id(self) -> int:
        return self._loader.eos_id

    @property
    def bos_id(self) -> Optional[int]:
        return self._loader.bos_id

    @property
    def vocab_size(self) -> Optional[int]:
        """The largest ``vocab_size`` attribute of the corpus's shards (``stoker pack`` and
        ``stoker import`` write one); None when no shard has one."""
        return self._loader.vocab_size

    def _order(self) -> Dict[str, Any]:
        """What fixes the order of documents; a checkpoint of another order is refused."""
        c = self._config
        return {"corpus": self._loader.corpus_fingerprint, "seed": c.seed,
                "logical_shards": c.logical_shards, "seq_len": c.seq_len,
                "eos_id": self._loader.eos_id, "bos_id": self._loader.bos_id}

    def state_dict(self) -> Dict[str, Any]:
        """A small picklable value for trainers that checkpoint through a state-dict protocol
        (torchdata's StatefulDataLoader, Fabric's state, a distributed checkpoint's state per
        rank). It never raises, and holds:

        - ``state``: this rank's state after the last batch, inline (bytes, a few KB: a cursor
          per owned logical shard and dataset: 197 KB for one rank of the default 65,536 logical
          shards and 3 datasets, less the more ranks): on as many ranks ``load_state_dict`` goes
          on from it bit for bit, with no step folder;
        - ``step_dir`` and ``step_name``: the step folder of a ``save()`` made at this step (its
          path, and its name under the checkpoint folder), or None: on another number of ranks
          ``load_state_dict`` resumes from that folder, where the state is redistributed;
        - ``step``, ``world`` and ``rank``, and the order's fingerprint.

        Use: take ``loader.state_dict()`` as often as the trainer's state is (every N batches,
        between saves); at a checkpoint that may resume on another number of ranks, every rank
        calls ``loader.save(step_dir)`` first. A save at this step is waited for (the GIL
        released); if it failed, ``step_dir`` is None and the process exits with code 1 naming
        the error, unless ``save`` or ``wait_for_save`` raise it first."""
        step = self._loader.step
        step_dir = None
        saved = self._loader.saved  # (step folder, step), recorded by the call that made it
        if saved is not None and saved[1] == step:
            try:
                self.wait_for_save()
                step_dir = saved[0]
            except _stoker.Error:  # not named; unseen by the program, it fails the exit
                _FAILED_SAVES.append(f"stoker: rank {self.rank}: {self._loader.save_failed}")
        order = self._order()
        fingerprint = hashlib.sha256(json.dumps(order, sort_keys=True).encode()).hexdigest()[:32]
        return {"format": _STATE_FORMAT, "step": step, "world": self._loader.world_size,
                "rank": self._loader.rank, "state": self._loader.encoded_state(),
                "step_dir": step_dir,
                "step_name": os.path.basename(os.path.normpath(step_dir)) if step_dir else None,
                "order": order, "order_fingerprint": fingerprint}

    @checked
    def load_state_dict(self, state: Mapping[str, Any],
                        checkpoint_dir: Optional[Path] = None) -> str:
        """Goes on from a ``state_dict()``, on this communicator's ranks: on as many ranks as it
        was taken on, from the state inline (each rank its own); on another number, from its step
        folder (the state is redistributed): ``checkpoint_dir``/``step_name`` when
        ``checkpoint_dir`` is given (a checkpoint folder moved since), else ``step_dir``.
        Returns which: "inline", or the step folder's path (the library logs it). Collective,
        like construction. Only before the first batch is taken; a state of another order
        (corpus, seed, logical shards, seq_len, EOS, BOS) is refused naming what differs. The
        weights follow the configured ``weights`` or ``weight_schedule``, not those the saved
        run set with ``set_weights`` (call it again after this; before, it is refused). When it
        fails, the loader is as it was before the call. With ``trace_dir``, the trace starts at
        the resumed step, as with ``resume_from``. States of format 1 (a step folder only) are
        read too."""
        if self._weights_set:
            raise _stoker.ConfigError(
                "load_state_dict() after set_weights(): the resumed loader follows the "
                "configured schedule; call set_weights() after load_state_dict()")
        if (state.get("format") not in (_STATE_FORMAT, _STATE_FORMAT_1)
                or not isinstance(state.get("order"), Mapping)):
            raise _stoker.ConfigError(
                f"load_state_dict(): not a stoker loader state (format {state.get('format')!r}, "
                f"expected {_STATE_FORMAT!r})")
        mine, theirs = self._order(), dict(state["order"])
        differ = [f"{k}: saved {theirs.get(k)!r}, now {v!r}" for k, v in mine.items()
                  if theirs.get(k) != v]
        if differ:
            raise _stoker.ConfigError(
                f"load_state_dict(): the state of step {state.get('step')} is of another order: " +
                "; ".join(differ))
        step_dir = state.get("step_dir")
        if checkpoint_dir is not None and state.get("step_name"):
            step_dir = os.path.join(checkpoint_dir, state["step_name"])
        if state.get("state") and state.get("world") == self._loader.world_size:
            self._loader.resume("", state["state"], str(step_dir or ""))
            used = "inline"
        elif step_dir:
            self._loader.resume(str(step_dir), b"", str(step_dir))
            used = str(step_dir)
        else:
            raise _stoker.ConfigError(
                f"load_state_dict(): the state of step {state.get('step')} was taken on "
                f"{state.get('world')} ranks with no save at that step; on "
                f"{self._loader.world_size} ranks it resumes from the step folder of a save: "
                "save at the steps whose state may be loaded on another number of ranks")
        return used

    def _holds_filled_buffer(self, batch: Batch) -> bool:
        """Whether ``batch["tokens"]`` holds the very buffer the loader filled (no copy); for
        tests."""
        tokens = batch["tokens"]
        address = tokens.data_ptr() if self.tensors == "torch" else tokens.ctypes.data
        return address == self._loader.last_tokens_buffer


# The loaders alive in this process, whose last save is waited for at exit, and the saves that
# failed unseen (loaders gone before). A forked child's exit leaves its parent's saves alone.
_LOADERS: "weakref.WeakSet[Loader]" = weakref.WeakSet()
_FAILED_SAVES: List[str] = []
_FORKED = False


def _forked() -> None:
    """In a forked child: the parent's loaders and saves are not the child's, nor is MPI, which
    counts as finalized here so that the child's exit does not hang in MPI_Finalize."""
    global _FORKED
    _FORKED = True
    _stoker.leave_mpi_to_the_parent()


os.register_at_fork(after_in_child=_forked)


def _check_last_save(loader: Loader) -> None:
    """Waits for the loader's last save; notes its failure, if nobody saw it yet."""
    if _FORKED or not hasattr(loader, "_loader") or loader._loader.closed:
        return
    try:
        loader.wait_for_save()
    except _stoker.Error:
        _FAILED_SAVES.append(f"stoker: rank {loader.rank}: {loader._loader.save_failed}")


@atexit.register
def _exit_with_failed_saves() -> None:
    """At exit: waits for the loaders' last saves and for the work left in the background (the
    loaders ending, calls Ctrl-C left); a save that failed unseen by the program (no save(),
    wait_for_save() or state_dict() raised it) makes the process exit with code 1, naming the
    error. Ctrl-C during this wait ends the process at once, with code 130 and without MPI's
    finalize, which the work left would hold up: a checkpoint file still being written is
    left as its temporary file, never under its own name."""
    try:
        for loader in list(_LOADERS):
            _check_last_save(loader)
            if not _FORKED:  # ended now, in the background, not after MPI in the teardown
                try:
                    loader._loader.close()
                except _stoker.Error:  # its save's error, noted by _check_last_save
                    pass
        if not _FORKED:  # before MPI ends
            _stoker.wait_for_background_work()
    except KeyboardInterrupt:
        print("stoker: interrupted while waiting for storage at exit: exit code 130, the work "
              "left unfinished", file=sys.stderr)
        sys.stderr.flush()
        os._exit(130)
    if _FAILED_SAVES:
        print("\n".join(_FAILED_SAVES) +
              "\nstoker: a loader checkpoint was not written: exit code 1", file=sys.stderr)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(1)


@checked
def find_resume_step(checkpoint_dir: Path, required_files: Sequence[str] = (),
                     comm: Optional[MPI.Comm] = None) -> Optional[str]:
    """Collective: the newest complete step folder under ``checkpoint_dir``, or None. A trainer
    that saves files of its own into the step folder names them in ``required_files`` (relative
    to the step folder, e.g. "model.pt"): a step without one of them is incomplete."""
    return _stoker.find_resume_step(_handle(comm), checkpoint_dir, list(required_files))


@checked
def prepare_resume(checkpoint_dir: Path, required_files: Sequence[str] = (),
                   comm: Optional[MPI.Comm] = None) -> Optional[str]:
    """Collective: ``find_resume_step``, then the step folders newer than the one found (a killed
    run's partial saves) are renamed to step-<N>.interrupted. A job that will save into
    ``checkpoint_dir`` calls this and passes the result as ``resume_from``."""
    return _stoker.prepare_resume(_handle(comm), checkpoint_dir, list(required_files))


@checked
def prepare_fresh_start(checkpoint_dir: Path, start_over: bool = False,
                        comm: Optional[MPI.Comm] = None) -> None:
    """Collective: for a run that starts at step 0 and will save into ``checkpoint_dir``. Step
    folders of an earlier run there are refused (``ConfigError`` naming them) unless
    ``start_over``, when they are deleted."""
    _stoker.prepare_fresh_start(_handle(comm), checkpoint_dir, start_over)
