"""The settings of a stoker.Loader: the C++ LoaderConfig they make, their problems without MPI
(config_problems), and the command line's forms of weights and weight schedules."""

from __future__ import annotations

import os
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

from . import _stoker
from .arguments import Path, Text, checked

# A weight schedule entry: {"step": int, "ramp": bool, "weights": {dataset name: weight}}.
ScheduleEntry = Dict[str, Any]
WeightSchedule = Union[Text, os.PathLike[str], Sequence[ScheduleEntry]]


def _schedule_entries(schedule: WeightSchedule) -> List[ScheduleEntry]:
    """A ``weight_schedule`` argument as the list of entries the C++ side takes: a string is a
    file's path when that file exists, else the inline form, as ``--weights-schedule``; a list
    of entries as it is (``checked`` took the argument by its hint)."""
    if isinstance(schedule, (str, os.PathLike)):
        return _stoker.weight_schedule_argument(os.fspath(schedule))
    if not schedule:
        raise _stoker.ConfigError("weight_schedule has no entries: give None for a run of "
                                  "fixed weights")
    return list(schedule)


def _make_config(data: Path, *, weights: Optional[Mapping[str, float]] = None,
                 weight_schedule: Optional[WeightSchedule] = None, boundaries: bool = False,
                 positions: str = "restart", io_depth: Union[int, str, None] = None,
                 **fields: Any) -> "_stoker.LoaderConfig":
    """The C++ LoaderConfig of the Loader's settings (``Loader`` documents them). ``fields`` are
    LoaderConfig's own (seq_len, batch_size, seed, ...): one left out or None keeps the default
    of include/stoker/loader.h, the one place it is written."""
    config = _stoker.LoaderConfig()
    config.data = data
    if weights is not None:
        config.weights = dict(weights)
    if weight_schedule is not None:  # with weights too: a problem Problems() names
        config.weight_schedule = _schedule_entries(weight_schedule)
    config.set_boundaries(boundaries, positions)
    if io_depth is not None:
        config.io_depth = 0 if isinstance(io_depth, str) and io_depth == "auto" else io_depth
    for name, value in fields.items():
        if name not in _FIELDS:
            raise TypeError(f"unexpected setting {name!r}: the Loader takes "
                            f"{', '.join(sorted(_FIELDS))} and those it names")
        if value is not None:
            setattr(config, name, value)
    return config


# LoaderConfig's fields that a Loader takes as they are.
_FIELDS = ("seq_len", "batch_size", "seed", "logical_shards", "deal_max_docs", "eos_id", "bos_id", "prefetch",
           "io_engine", "direct_io", "read_ahead_bytes", "offset_cache_bytes", "layout",
           "replica_feed", "fields_by_stage")


def _loader_init() -> Any:
    """The Loader's constructor, whose hints ``config_problems``'s settings follow."""
    from .loader import Loader  # pylint: disable=import-outside-toplevel (loader imports this)
    return Loader.__init__


@checked(keywords_of=_loader_init)
def config_problems(data: Path, **settings: Any) -> List[str]:
    """Every problem of these ``Loader`` settings that shows without MPI and without reading the
    corpus (sizes of 0, more memory than a rank may use, ...), one line each, as the loader words
    them; empty when there is none. Takes the Loader's settings, of the Loader's types, but
    ``resume_from``, ``comm``, ``trace_dir`` and ``tensors``. Needs no communicator and makes no
    MPI call: a trainer's ``--check`` can run it in a process started without ``mpirun``. A
    setting of the wrong type (``seq_len=None``) raises TypeError, a value none can be
    (``seq_len=-1``, ``positions="x"``) ``ConfigError`` instead; a ``weight_schedule`` that does
    not parse is one of the problems listed."""
    schedule = settings.pop("weight_schedule", None)
    config = _make_config(data, **settings)
    problems = []
    if schedule is not None:
        try:
            config.weight_schedule = _schedule_entries(schedule)
        except _stoker.ConfigError as error:  # listed with the others, for a trainer's --check
            problems.append(str(error))
    return problems + list(config.problems())


@checked
def parse_weights(text: Text) -> Dict[str, float]:
    """Mixing weights from the command line's form ``NAME=W,NAME=W`` (as ``stoker run
    --weights``), for ``Loader(weights=...)``; ``ConfigError`` naming the entry that does not
    parse."""
    return dict(_stoker.parse_weights(text))


@checked
def parse_weight_schedule(text: Text) -> List[ScheduleEntry]:
    """A weight schedule from the command line's inline form (as ``stoker run
    --weights-schedule``): entries separated by ';', ``STEP:NAME=W,...`` a jump to those weights
    at STEP, ``~STEP:NAME=W,...`` a linear ramp from the entry before's weights, reached at STEP;
    e.g. ``"0:web=0.7,code=0.3;~10000:web=0.5,code=0.5"``. Gives the list of entries
    ``Loader(weight_schedule=...)`` takes, ``{"step": int, "ramp": bool, "weights": {name: w}}``
    (weights as written, not normalized); ``ConfigError`` quoting the entry that does not parse
    or naming the one of a bad shape (the first entry not at step 0, steps not increasing,
    negative weights). ``Loader(weight_schedule=...)`` takes the text itself, or a schedule
    file's path, as well."""
    return _stoker.parse_weight_schedule(text)
