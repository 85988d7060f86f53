"""Every argument of every public call is taken by the type hint of its parameter, by one check
(stoker/arguments.py): a wrong type (None where the hint is not Optional) is a TypeError, a wrong
value (a negative number, an empty path) a ConfigError (a ValueError), both naming the argument,
on every rank alike and before anything is written; paths are made absolute. The upper bounds
are the C++ fields' (a number of 2**32); BOS equal to EOS is refused."""

import inspect
import os
import pathlib
import re
import typing

import pytest

import stoker
from conftest import WORLD, agree, loader

WRONG = [  # the settings, the error, its words after the call's name
    (dict(seq_len=-1), stoker.ConfigError, "(seq_len=-1): a whole number of 0 or more"),
    (dict(seq_len=None), TypeError, "(seq_len=None): a whole number, not None"),
    (dict(seq_len=True), TypeError, "(seq_len=True): a whole number, not bool"),
    (dict(batch_size=2.5), TypeError, "(batch_size=2.5): a whole number, not float"),
    (dict(seed=-3), stoker.ConfigError, "(seed=-3): a whole number of 0 or more"),
    (dict(prefetch=2**32), stoker.ConfigError,
     "prefetch=4294967296 is not a whole number from 0 to 4294967295"),
    (dict(boundaries="no"), TypeError, "(boundaries='no'): True or False, not str"),
    (dict(eos_id=2**63), stoker.ConfigError, "eos_id=9223372036854775808 is not a whole number"),
    (dict(bos_id="1"), TypeError, "(bos_id='1'): a whole number, not str"),
    (dict(io_depth="deep"), stoker.ConfigError, "io_depth='deep' is not a whole number"),
    (dict(io_engine=1), TypeError, "(io_engine=1): a str, not int"),
    (dict(io_engine="fast"), stoker.ConfigError, "io_engine='fast': unknown I/O engine 'fast'"),
    (dict(weights="a=1"), TypeError, "(weights='a=1'): a mapping, not str"),
    (dict(layout=""), stoker.ConfigError, "(layout=''): an empty str"),
]


@pytest.mark.parametrize("settings,error,words", WRONG)
def test_a_wrong_argument_is_an_error_naming_it(corpus, settings, error, words):
    with pytest.raises(error) as raised:
        loader(corpus, **settings)
    assert words in str(raised.value)
    with pytest.raises(error) as raised:
        stoker.config_problems(corpus, **settings)
    assert words in str(raised.value)


def test_bos_equal_to_eos_is_refused(corpus):
    words = "--bos-id 7 is the EOS id (--eos-id)"
    assert any(words in p for p in stoker.config_problems(corpus, eos_id=7, bos_id=7))
    with pytest.raises(stoker.ConfigError, match=r"--bos-id 7 is the EOS id \(--eos-id\)"):
        loader(corpus, eos_id=7, bos_id=7)
    # The EOS id the corpus gives (its eos_id attribute, else 0) is checked at construction.
    eos = loader(corpus).eos_id
    with pytest.raises(stoker.ConfigError) as raised:
        loader(corpus, bos_id=eos)
    assert f"--bos-id {eos} is the EOS id (the corpus's" in str(raised.value)
    assert len(set(WORLD.allgather(str(raised.value)))) == 1


def test_the_reported_misuses_are_refused(corpus):
    made = loader(corpus)
    misuses = [
        (lambda: loader(corpus, seq_len=None), TypeError, "Loader(seq_len=None): a whole number"),
        (lambda: loader(corpus, trace_dir=5), TypeError, "Loader(trace_dir=5): a path"),
        (lambda: stoker.prepare_resume(None), TypeError, "prepare_resume(checkpoint_dir=None)"),
        (lambda: made.load_state_dict(None), TypeError, "Loader.load_state_dict(state=None)"),
        (lambda: made.save(""), ValueError, "Loader.save(step_dir=''): an empty path"),
        (lambda: stoker.run_settings(corpus, checkpoint_dir=""), ValueError,
         "run_settings(checkpoint_dir=''): an empty path")]
    for call, error, words in misuses:
        with pytest.raises(error) as raised:
            call()
        assert str(raised.value).startswith(words), raised.value


class BytesPath(os.PathLike):
    def __fspath__(self):
        return b"step"


def test_a_save_to_no_path_writes_nothing(corpus, shared_dir, monkeypatch):
    here = os.path.join(shared_dir, "cwd")
    os.makedirs(here, exist_ok=True)
    monkeypatch.chdir(here)
    made = loader(corpus)
    next(made)
    root_had = os.path.exists("/loader")
    for path, error in ((None, TypeError), ("", ValueError), (123, TypeError),
                        (b"step", TypeError), (BytesPath(), TypeError)):
        with pytest.raises(error, match=r"Loader\.save\(step_dir="):
            made.save(path)
    made.wait_for_save()
    assert os.listdir(here) == [] and os.path.exists("/loader") == root_had


def test_relative_paths_are_made_absolute(corpus, shared_dir, monkeypatch):
    monkeypatch.chdir(shared_dir)
    step_dir = os.path.join(os.getcwd(), "step-1")
    made = loader(corpus)
    next(made)
    made.save("step-1")
    assert made.state_dict()["step_dir"] == step_dir
    WORLD.Barrier()  # every rank's file written
    assert loader(corpus, resume_from="step-1").state_dict()["step_dir"] == step_dir
    settings = stoker.run_settings("corpus", checkpoint_dir=pathlib.Path("ck"), trace_dir=".")
    assert (settings.loader.data, settings.checkpoint_dir, settings.trace_dir) == (
        os.path.join(os.getcwd(), "corpus"), os.path.join(os.getcwd(), "ck"), os.getcwd())


# Arguments whose "" the call gives a meaning.
EMPTY_MEANS = {("parse_settings", "description"): "no description"}


def public_calls():
    """The names of the package's calls that take arguments: its functions, its classes'
    constructors and their public methods (not the errors it raises, nor LayoutComms, the named
    tuple layout_comms returns)."""
    names = []
    for name in stoker.__all__:
        thing = getattr(stoker, name)
        if not isinstance(thing, type):
            names += [name] if callable(thing) else []
        elif not issubclass(thing, (BaseException, tuple)):
            names += [name] + [f"{name}.{m}" for m, f in vars(thing).items()
                               if not m.startswith("_") and inspect.isfunction(f)]
    return sorted(n for n in names if takes_arguments(function_of(n)))


def function_of(name):
    thing = stoker
    for part in name.split("."):
        thing = getattr(thing, part)
    return thing.__init__ if isinstance(thing, type) else thing


def takes_arguments(function):
    return any(p != "self" for p in inspect.signature(function).parameters)


@pytest.fixture
def valid_calls(corpus, shared_dir):
    """A valid call of each public call that takes arguments: the call and its arguments."""
    made = loader(corpus)
    checkpoint_dir = os.path.join(shared_dir, "ck")
    settings = stoker.run_settings(corpus, steps=1, checkpoint_dir=checkpoint_dir)
    session = stoker.RunSession(settings)
    dataset = stoker.LoaderDataset(made)
    state = made.state_dict()
    return {
        "Loader": (stoker.Loader, dict(data=corpus, seq_len=31)),
        "Loader.save": (made.save, dict(step_dir=checkpoint_dir)),
        "Loader.shares": (made.shares, dict(since_step_zero=True)),
        "Loader.set_weights": (made.set_weights, dict(weights={"a": 1.0})),
        "Loader.load_state_dict": (made.load_state_dict, dict(state=state,
                                                              checkpoint_dir=checkpoint_dir)),
        "LoaderDataset": (stoker.LoaderDataset, dict(loader=made)),
        "LoaderDataset.load_state_dict": (dataset.load_state_dict, dict(state=state)),
        "layout_comms": (stoker.layout_comms, dict(layout="dp=1", comm=WORLD)),
        "find_resume_step": (stoker.find_resume_step, dict(
            checkpoint_dir=checkpoint_dir, required_files=["model.pt"], comm=WORLD)),
        "prepare_resume": (stoker.prepare_resume, dict(
            checkpoint_dir=checkpoint_dir, required_files=["model.pt"], comm=WORLD)),
        "prepare_fresh_start": (stoker.prepare_fresh_start, dict(
            checkpoint_dir=checkpoint_dir, start_over=False, comm=WORLD)),
        "config_problems": (stoker.config_problems, dict(data=corpus)),
        "parse_weights": (stoker.parse_weights, dict(text="a=1")),
        "parse_weight_schedule": (stoker.parse_weight_schedule, dict(text="0:a=1")),
        "run_settings": (stoker.run_settings, dict(data=corpus)),
        "parse_settings": (stoker.parse_settings, dict(
            args=[], program="trainer", name="t.py", description="", quiet=True)),
        "check_run_settings": (stoker.check_run_settings, dict(
            settings=settings, more=None, program="t.py", comm=WORLD)),
        "install_stop_handlers": (stoker.install_stop_handlers, dict(pending=0)),
        "RunSession": (stoker.RunSession, dict(settings=settings, files=[], tag="t", comm=WORLD)),
        "RunSession.end_step": (session.end_step, dict(stop=False, write=None)),
        "RunSession.finish": (session.finish, dict(fields={}, write=None)),
    }


def test_every_public_call_has_a_valid_call_and_is_checked(valid_calls):
    assert sorted(valid_calls) == public_calls()
    for name in valid_calls:
        assert getattr(function_of(name), "checked_call", None), f"{name} is not @checked"


def wrong_arguments(name, function):
    """(parameter, wrong value, error) of each parameter of ``function``; those of a
    ``**settings`` are the Loader's settings the call has no parameter of its own for."""
    own = inspect.signature(inspect.unwrap(function)).parameters
    hints = typing.get_type_hints(inspect.unwrap(function))
    for each in own.values():
        if each.kind is each.VAR_KEYWORD:
            del hints[each.name]
            loader_hints = typing.get_type_hints(inspect.unwrap(stoker.Loader.__init__))
            hints.update({k: v for k, v in loader_hints.items() if k not in own})
    for parameter, hint in hints.items():
        if parameter == "return":
            continue
        members = typing.get_args(hint) if typing.get_origin(hint) is typing.Union else (hint,)
        if type(None) not in members:
            yield parameter, None, TypeError
        yield parameter, object(), TypeError
        if int in members:
            yield parameter, -1, ValueError
        if set(members) - {type(None)} == set(typing.get_args(stoker.arguments.Path)):
            yield parameter, "", ValueError
        elif any(m in (str, stoker.arguments.Text) for m in members):
            if (name, parameter) not in EMPTY_MEANS:
                yield parameter, "", (TypeError, ValueError)


def test_every_argument_of_every_public_call_is_checked(valid_calls):
    """None (unless Optional), another type, -1 for a number, "" for a path or text: each an
    error naming the argument, the same on every rank."""
    messages = []
    for name, (call, arguments) in valid_calls.items():
        for parameter, value, error in wrong_arguments(name, function_of(name)):
            with pytest.raises(error) as raised:
                call(**dict(arguments, **{parameter: value}))
            message = str(raised.value)
            assert re.search(rf"\b{parameter}\b", message), (name, parameter, value, message)
            messages.append(message)
    assert len(messages) > 200, len(messages)
    ranks = WORLD.allgather(messages)
    agree(all(m == ranks[0] for m in ranks), "the errors differ between ranks")
