"""stoker.RunSession: the job contract of a trainer written in Python, the C++ run session's
(include/stoker/run_session.h) as stoker-train and ``stoker run`` use it.

The session owns what a training job is; the trainer owns its model and its loop::

    stoker.install_stop_handlers()            # first: SIGUSR1/SIGTERM ask for a stop
    settings = stoker.run_settings("/lustre/corpus", steps=1000, checkpoint_dir="ck",
                                   save_every=100, resume=True, seq_len=2048, batch_size=8)
    if not stoker.check_run_settings(settings, program="my_trainer"):
        sys.exit(2)                           # rank 0 said why, every rank returns False
    session = stoker.RunSession(settings, files=["model.pt"])   # ready file, resume prepared
    ... build the model; if session.resumed_from: load model.pt from it ...
    session.start()                           # a fresh start refuses earlier steps; the trace
    while session.running:
        batch = next(session)                 # timed (data-wait share) and traced
        ... forward, backward; fold session.stop_requested() into the all-reduce ...
        session.end_step(stop, write)         # saves when due: rank 0 calls write(step_dir)
    session.finish({"loss_end": loss}, write)  # last step saved; the result line on stdout

A save: rank 0 calls ``write(step_dir)``, which writes the trainer's files (``files``) into the
step folder; the session checks they are there, records their names in step_dir/trainer.files
and every rank saves its loader file. ``stoker steps`` and the job scripts then know a complete
step without being told the file names. Collective over ``comm`` (default the world): the
constructor, ``start``, ``stop_together``, ``end_step`` and ``finish``.
"""

from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from mpi4py import MPI

from . import _stoker
from .arguments import Path, Text, checked
from .config import _make_config
from .loader import Batch, Loader, _handle

WriteFiles = Optional[Callable[[str], None]]


@checked(keywords_of=lambda: Loader.__init__)
def run_settings(data: Path, *, steps: Optional[int] = None,
                 checkpoint_dir: Optional[Path] = None, save_every: Optional[int] = None,
                 save_last: bool = True, resume: bool = False, start_over: bool = False,
                 trace_dir: Optional[Path] = None, result_file: Optional[Path] = None,
                 ready_file: Optional[Path] = None, weights: Optional[Text] = None,
                 weights_schedule: Optional[Text] = None,
                 **loader_settings: Any) -> "_stoker.RunSettings":
    """The settings of a run (C++ RunSettings): the Loader's (``loader_settings``, as
    ``Loader`` takes them, but ``weights`` and ``weight_schedule``), ``weights`` and
    ``weights_schedule`` as the command line gives them (``--weights``, ``--weights-schedule``),
    and the run's: ``steps``, ``checkpoint_dir``, ``save_every`` (a step folder every K steps, 0:
    none on a schedule), ``save_last`` (also the last step), ``resume``, ``start_over``,
    ``trace_dir``, ``result_file``, ``ready_file`` (paths, made absolute). None: the C++
    default (no such file or folder, no weights given)."""
    settings = _stoker.RunSettings()
    if "weight_schedule" in loader_settings:
        raise TypeError("run_settings(weight_schedule=...): a run takes weights_schedule, the "
                        "--weights-schedule text or file")
    settings.loader = _make_config(data, **loader_settings)
    settings.weights, settings.weights_schedule = weights or "", weights_schedule or ""
    if steps is not None:
        settings.steps = steps
    if save_every is not None:
        settings.save_every = save_every
    settings.save_last, settings.resume, settings.start_over = save_last, resume, start_over
    settings.checkpoint_dir, settings.trace_dir = checkpoint_dir or "", trace_dir or ""
    settings.result_file, settings.ready_file = result_file or "", ready_file or ""
    return settings


@checked
def parse_settings(args: Optional[Sequence[str]] = None, *, program: Text = "trainer",
                   name: Text = "train.py", description: str = "",
                   quiet: bool = False) -> "_stoker.ProgramSettings":
    """The settings of a trainer's command line (``args``, default ``sys.argv[1:]``) and, under
    it, the environment: the flags, variables, defaults and help of stoker's programs
    (``stoker settings`` lists them; ``program``: "trainer", stoker-train's, or "run", ``stoker
    run``'s). ``.run`` is the ``RunSettings`` for ``check_run_settings`` and ``RunSession``,
    ``.trainer`` the example trainers' model and log settings, ``.check`` whether --check was
    given, ``.variable_lines`` the settings that have a variable as NAME=VALUE. --help prints the
    help and a wrong flag or variable its error (unless ``quiet``: the ranks but 0), and both
    raise SystemExit (0, or 2), as argparse would. Needs no MPI."""
    import sys
    argv = list(sys.argv[1:] if args is None else args)
    return _stoker.parse_settings(argv, program, name, description, not quiet)


@checked
def check_run_settings(settings: "_stoker.RunSettings",
                       more: Optional[Callable[[], List[str]]] = None, program: Text = "train.py",
                       comm: Optional[MPI.Comm] = None) -> bool:
    """Collective: rank 0 finds every problem of ``settings`` and of ``more()`` (the trainer's
    own, one line each; rank 0 alone calls it) and logs them under "``program``: wrong
    settings"; every rank returns False then, True when there are none."""
    return _stoker.check_run_settings(_handle(comm), settings, more, program)


@checked
def install_stop_handlers(pending: int = 0) -> None:
    """SIGUSR1 and SIGTERM ask the run session to stop at the next step (on every rank
    together) instead of ending the process. ``pending``: a signal the trainer's own handler
    caught before (while the package was imported), raised again for the session to note."""
    _stoker.install_stop_handlers(pending)


class RunSession:
    """The run session of ``settings`` (``run_settings``): writes the ready file, prepares the
    resume and makes ``loader``, the ``stoker.Loader`` of the run. ``files``: the names of the
    files the trainer saves in every step folder (relative to it); ``tag``: the word before the
    session's log lines. Collective."""

    @checked
    def __init__(self, settings: "_stoker.RunSettings", *, files: Sequence[str] = (),
                 tag: Text = "train", comm: Optional[MPI.Comm] = None) -> None:
        self._session = _stoker.RunSession(_handle(comm), settings, list(files), tag)
        self.loader = Loader._of_config(self._session.loader_config, comm)

    def start(self) -> None:
        """Collective, once the trainer's state is built (and loaded from ``resumed_from``): a
        fresh start refuses (or with start_over deletes) step folders already there; the piece
        trace opens."""
        self._session.start(self.loader._loader)

    def __iter__(self) -> "RunSession":
        return self

    def __next__(self) -> Batch:
        """The loader's next batch (``stoker.Loader`` documents its keys), timed for the
        data-wait share and traced; Ctrl-C reaches the trainer while it waits."""
        return self._session.next()

    @property
    def running(self) -> bool:
        """Whether the loop goes on: the last step is below ``steps`` and no stop was agreed."""
        return self._session.running

    def stop_requested(self) -> bool:
        """This rank caught SIGUSR1 or SIGTERM: a flag to fold into the trainer's all-reduce."""
        return self._session.stop_requested()

    def stop_together(self) -> bool:
        """Collective: whether any rank's ``stop_requested()`` (one all-reduce)."""
        return self._session.stop_together()

    @checked
    def end_step(self, stop: bool, write: WriteFiles = None) -> None:
        """Collective, after each step's update; ``stop``: the ranks' agreed stop. Saves when a
        save is due (every save_every steps, and at the stop, which ends the loop): rank 0 calls
        ``write(step_dir)``."""
        self._session.end_step(stop, write)

    @checked
    def finish(self, fields: Mapping[str, Any], write: WriteFiles = None) -> Dict[str, Any]:
        """Collective, after the loop: saves the last step (save_last), waits for the saves, and
        rank 0 prints the result line on stdout (the session's figures and ``fields``) and writes
        it into result_file. Returns the line's object."""
        return json.loads(self._session.finish(json.dumps(dict(fields)), write))

    @property
    def resumed_from(self) -> Optional[str]:
        """The step folder resumed from, or None for a fresh start."""
        return self._session.resumed_from or None

    @property
    def layout(self) -> str:
        """The run's parallel layout as given (--layout, or the one of --tensor-parallel,
        --context-parallel and --pipeline-parallel; ``layout_comms`` takes it), "" for none."""
        return self._session.loader_config.layout

    @property
    def saved_world(self) -> int:
        """The world size that saved ``resumed_from`` (0 for a fresh start)."""
        return self._session.saved_world

    @property
    def start_step(self) -> int:
        return self._session.start_step

    @property
    def seconds(self) -> float:
        """This rank's seconds in the loop (from ``start`` until ``running`` first said False)."""
        return self._session.seconds

    @property
    def waiting(self) -> float:
        """This rank's seconds spent waiting for batches."""
        return self._session.waiting

    @property
    def stopped_early(self) -> bool:
        return self._session.stopped_early
