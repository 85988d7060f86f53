"""The one check of the arguments of the package's public calls (``@checked``): each argument is
taken as the type hint of its parameter says, by ``checked_argument``.

- ``Optional[X]``: None, or an X; None anywhere else is a TypeError (it never means "the
  default" where the signature does not say so).
- ``Path``: a ``str`` or an ``os.PathLike`` of a str path, not empty, made absolute.
- ``int``: an int or anything with ``__index__`` (a numpy integer) but a bool, 0 or more (every
  int of the interface is a size, an id, a step, a seed or a signal number). Upper bounds are
  the C++ fields' (config_binding.h), checked there.
- ``bool``: True or False; ``str``: a str (its values are the callee's to check, "" included);
  ``Text``: a str that is not empty (a name, a layout, weights: "" would say nothing).
- ``Mapping[...]``: a mapping; ``Sequence[X]``: a sequence (not a str) of X; ``Callable``: a
  callable; a class: an instance of it; ``Union[...]``: any of them; ``Any``: anything.

A wrong type is a TypeError, a wrong value of the right type a ``ConfigError`` (a ValueError);
both name the call, the argument and its value, e.g. ``Loader(seq_len=None): a whole number, not
None``. The check is local and the same on every rank: a collective call raises it on every rank
alike, before it communicates or writes anything.
"""

from __future__ import annotations

import collections.abc
import functools
import inspect
import operator
import os
import typing
from typing import Any, Callable, Dict, NewType, Optional, Union

from . import _stoker

# The path of a file or folder: a call takes it made absolute.
Path = Union[str, os.PathLike[str]]
# A str that must say something (a name, a layout, weights): not empty.
Text = NewType("Text", str)

_NONE = type(None)
_PATH_TYPES = set(typing.get_args(Path))


class _WrongType(Exception):
    """What the value should have been, and what it is."""


class _WrongValue(Exception):
    """What is wrong with a value of the right type."""


def checked(function: Optional[Callable] = None, *,
            keywords_of: Optional[Callable[[], Callable]] = None) -> Callable:
    """Decorates a public call: its arguments go through ``checked_argument`` by the hints of
    its parameters before it runs (defaults are not checked). ``keywords_of``: for a call taking
    ``**settings``, gives the function whose hints those settings follow (a name without a hint
    there is left to the call)."""
    if function is None:
        return functools.partial(checked, keywords_of=keywords_of)
    signature = inspect.signature(function)
    call = function.__qualname__.replace(".__init__", "")

    @functools.lru_cache(maxsize=None)
    def hints() -> tuple:  # at the first call: every class they name is defined by then
        keywords = typing.get_type_hints(inspect.unwrap(keywords_of())) if keywords_of else {}
        return typing.get_type_hints(function), keywords

    @functools.wraps(function)
    def checking(*args: Any, **kwargs: Any) -> Any:
        bound = signature.bind(*args, **kwargs)
        own, keywords = hints()
        for name, value in bound.arguments.items():
            if signature.parameters[name].kind is inspect.Parameter.VAR_KEYWORD:
                bound.arguments[name] = {k: checked_argument(call, k, v, keywords[k])
                                         if k in keywords else v for k, v in value.items()}
            elif name != "self":
                bound.arguments[name] = checked_argument(call, name, value, own[name])
        return function(*bound.args, **bound.kwargs)

    checking.checked_call = call
    return checking


def checked_argument(call: str, name: str, value: Any, hint: Any) -> Any:
    """``value``, the argument ``name`` of ``call``, as ``hint`` takes it (a path made absolute,
    an integer an int); TypeError for a value of another type, ConfigError for a value of the
    right type that none can be, naming the call and the argument."""
    try:
        return _taken(value, hint)
    except _WrongType as wrong:
        raise TypeError(f"{call}({name}={_shown(value)}): {wrong}") from None
    except _WrongValue as wrong:
        raise _stoker.ConfigError(f"{call}({name}={_shown(value)}): {wrong}") from None


def _taken(value: Any, hint: Any) -> Any:
    """``value`` as ``hint`` takes it; _WrongType or _WrongValue."""
    if hint is Any:
        return value
    origin, args = typing.get_origin(hint), typing.get_args(hint)
    if origin is Union:
        return _one_of(value, args)
    if origin is collections.abc.Sequence:
        return _sequence(value, args[0])
    return _of_kind(value, _KINDS.get(origin or hint) or
                    (_words(hint), lambda v: isinstance(v, hint), None))


def _of_kind(value: Any, kind: tuple) -> Any:
    """``value`` as a kind of _KINDS takes it."""
    words, fits, check = kind
    if not fits(value):
        raise _WrongType(f"{words}, not {_type_name(value)}")
    return check(value) if check else value


def _one_of(value: Any, members: tuple) -> Any:
    """``value`` as the first of a Union's ``members`` whose type it has; None where one is."""
    if value is None and _NONE in members:
        return None
    members = tuple(m for m in members if m is not _NONE)
    if set(members) == _PATH_TYPES:
        return _of_kind(value, _KINDS[Path])
    for member in members:
        try:
            return _taken(value, member)
        except _WrongType:
            continue
    raise _WrongType(f"{' or '.join(_words(m) for m in members)}, not {_type_name(value)}")


def _sequence(value: Any, item: Any) -> list:
    """A list of the items of ``value``, a sequence (not a str), each as ``item`` takes it."""
    if not isinstance(value, collections.abc.Sequence) or isinstance(value, (str, bytes)):
        raise _WrongType(f"{_words(typing.Sequence[item])}, not {_type_name(value)}")
    taken = []
    for index, each in enumerate(value):
        try:
            taken.append(_taken(each, item))
        except _WrongType as wrong:
            raise _WrongType(f"a sequence whose items are each {wrong} (item {index})") from None
    return taken


def _whole_number(value: Any) -> int:
    number = operator.index(value)
    if number < 0:
        raise _WrongValue("a whole number of 0 or more")
    return number


def _path(value: Any) -> str:
    path = os.fspath(value)
    if not isinstance(path, str):
        raise _WrongType(f"a path of str, not of {_type_name(path)}")
    if not path:
        raise _WrongValue("an empty path")
    return os.path.abspath(path)


def _text(value: str) -> str:
    if not value:
        raise _WrongValue("an empty str")
    return value


# By hint (or its origin): the words for what it takes, whether a value's type fits, and the
# check and conversion of a value that fits (None: taken as it is).
_KINDS: Dict[Any, tuple] = {
    int: ("a whole number",
          lambda v: not isinstance(v, bool) and hasattr(type(v), "__index__"), _whole_number),
    bool: ("True or False", lambda v: v is True or v is False, None),
    str: ("a str", lambda v: isinstance(v, str), None),
    Text: ("a str", lambda v: isinstance(v, str), _text),
    Path: ("a path (str or os.PathLike)", lambda v: isinstance(v, (str, os.PathLike)), _path),
    os.PathLike: ("an os.PathLike", lambda v: isinstance(v, os.PathLike), _path),
    collections.abc.Mapping: ("a mapping", lambda v: isinstance(v, collections.abc.Mapping),
                              None),
    dict: ("a mapping", lambda v: isinstance(v, collections.abc.Mapping), None),
    collections.abc.Callable: ("a callable", callable, None),
}


def _words(hint: Any) -> str:
    """What a value of ``hint`` is, in words."""
    origin = typing.get_origin(hint)
    if hint in _KINDS:  # Path, before the Union it is
        return _KINDS[hint][0]
    if origin is collections.abc.Sequence:
        return f"a sequence of {_words(typing.get_args(hint)[0]).split(' ', 1)[1]}"
    if origin is Union:
        return " or ".join(_words(m) for m in typing.get_args(hint) if m is not _NONE)
    kind = _KINDS.get(origin or hint)
    if kind is not None:
        return kind[0]
    name = getattr(hint, "__qualname__", str(hint))
    return f"{'an' if name[0] in 'AEIOU' else 'a'} {name}"


def _type_name(value: Any) -> str:
    return "None" if value is None else type(value).__name__


def _shown(value: Any) -> str:
    """``value`` in a message: its repr when it is plain data, else its type (a repr with an
    address would differ from rank to rank)."""
    if isinstance(value, (type(None), bool, int, float, str, bytes)):
        text = repr(value)
        return text if len(text) <= 80 else text[:77] + "..."
    return f"<{type(value).__name__}>"
