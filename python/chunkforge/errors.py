"""The errors chunkforge raises on bad input: one base, :class:`ChunkforgeError`.

Each subclasses ``ValueError`` (bad values), so ``except ValueError`` keeps working;
:class:`ArgumentTypeError` (an argument of the wrong type) is a ``TypeError`` too. The
message names the parameter, flag or file (and line) at fault; an error about one parameter
carries its name as data, :attr:`ChunkforgeError.param`, and the command line spells it as
its own flag (:meth:`ChunkforgeError.named`), never by reading the message.

>>> from chunkforge import ChunkforgeError, InputError
>>> issubclass(InputError, ChunkforgeError) and issubclass(ChunkforgeError, ValueError)
True
>>> error = ArgumentError("must be >= 1, got 0", param="max_tokens")
>>> str(error), error.param, error.named("--max-tokens")
('max_tokens must be >= 1, got 0', 'max_tokens', '--max-tokens must be >= 1, got 0')
>>> str(InputError('has no "text"', param="text_column", where="docs.jsonl:3"))
'docs.jsonl:3: text_column has no "text"'
"""

from __future__ import annotations

from typing import TypeVar

_E = TypeVar("_E", bound="ChunkforgeError")


def spell(reason: str, name: str | None, where: str | None, aside: bool = False) -> str:
    """A message from its parts: ``where`` (a file and line, a batch), then the parameter's
    ``name`` (a space after it unless ``reason`` starts with a colon, comma or an index ``[``),
    then ``reason``; with ``aside``, the name in parentheses after the reason.

    >>> spell("nowhere: no such file or folder", "--reuse", None)
    '--reuse nowhere: no such file or folder'
    >>> spell('record has no "text"', "text_column", "d.jsonl:3", aside=True)
    'd.jsonl:3: record has no "text" (text_column)'
    """
    if name is None:
        text = reason
    elif aside:
        text = f"{reason} ({name})"
    else:
        text = f"{name}{'' if reason[:1] in (':', ',', '[') else ' '}{reason}"
    return text if where is None else f"{where}: {text}"


class ChunkforgeError(ValueError):
    """Base of chunkforge's input errors; the message names what is at fault.

    ``param`` (keyword): the parameter the error is about, put before ``message``
    (``ChunkforgeError("must be >= 1, got 0", param="max_tokens")`` reads ``max_tokens must be
    >= 1, got 0``), or after it in parentheses with ``aside=True``; ``where``: what comes
    before both (a file and line). They are kept as attributes with :attr:`reason` (the message
    without them), so that a caller can spell the parameter its own way (:meth:`named`)."""

    param: str | None
    """The parameter (argument, field of a spec, option) the error is about, or None."""

    def __init__(
        self, message: str = "", *, param: str | None = None, where: str | None = None, aside: bool = False
    ) -> None:
        self.reason, self.param, self.where, self.aside = message, param, where, aside
        super().__init__(spell(message, param, where, aside))

    def named(self, name: str) -> str:
        """The message with the parameter called ``name`` (a command's flag), as it would read
        had the error been raised with ``param=name``; the message itself when it has no parameter."""
        return spell(self.reason, name if self.param is not None else None, self.where, self.aside)

    @classmethod
    def of(cls: type[_E], exc: BaseException, where: str | None = None) -> _E:
        """This class of error for ``exc`` (raised by a callee), with its parameter, reason and
        place kept where it is a :class:`ChunkforgeError`, and ``where`` put before its place."""
        if not isinstance(exc, ChunkforgeError):
            return cls(str(exc), where=where)
        inner = exc.where if where is None else where if exc.where is None else f"{where}: {exc.where}"
        return cls(exc.reason, param=exc.param, where=inner, aside=exc.aside)


class ChunkforgeWarning(UserWarning):
    """Base of chunkforge's warnings about a parameter: ``param``, ``where``, :attr:`reason` and
    :meth:`named` as for :class:`ChunkforgeError`."""

    def __init__(
        self, message: str = "", *, param: str | None = None, where: str | None = None, aside: bool = False
    ) -> None:
        self.reason, self.param, self.where, self.aside = message, param, where, aside
        super().__init__(spell(message, param, where, aside))

    def named(self, name: str) -> str:
        """The message with the parameter called ``name`` (a command's flag)."""
        return spell(self.reason, name if self.param is not None else None, self.where, self.aside)


class InputError(ChunkforgeError):
    """Bad input or arguments to a command or job; the message names the flag or file (and line)."""


class ArgumentError(ChunkforgeError):
    """A bad argument value (a ``ValueError``): out of range, not one of the choices; ``param`` names it."""


class ArgumentTypeError(ChunkforgeError, TypeError):
    """An argument of the wrong type (a ``TypeError`` as well as a ``ValueError``, for callers
    that expect either); ``param`` names it."""


class TokenizerError(ChunkforgeError):
    """A ``tokenizer.json`` that cannot be loaded, or a text its model fails on."""


class ModelError(InputError):
    """A model folder, graph or checkpoint that cannot be used (unreadable, or not a model this
    runtime or converter takes); ``where`` names the file or folder."""


class NotInIndexError(ChunkforgeError):
    """A leaf label or document slot that is not in the index (deleted, or from another index)."""


class DatasetError(ChunkforgeError):
    """A bad corpus, queries or config file of ``chunkforge eval``; the message names the file (and line)."""


__all__ = [
    "ArgumentError",
    "ArgumentTypeError",
    "ChunkforgeError",
    "ChunkforgeWarning",
    "DatasetError",
    "InputError",
    "ModelError",
    "NotInIndexError",
    "TokenizerError",
]
