"""The error tree of ``core``.

::

    ThreadfoldError                 root of every error threadfold raises on purpose
    ├── InvalidMessage (ValueError) a message-like that LangChain would not accept
    ├── ReducerError (ValueError)   a reducer refused its inputs (add_messages' own errors)
    └── ChunkMergeError (ValueError) two chunks LangChain cannot add together

Each carries enough for a user-facing message: which item, which field, what was
expected. ``lc_error`` names the exception class LangChain raises for the same input,
so the differential tests can check that threadfold refuses exactly where LangChain does.
"""

from __future__ import annotations


class ThreadfoldError(Exception):
    """Root of every error threadfold raises on purpose."""


class InvalidMessage(ThreadfoldError, ValueError):
    """Raised when a message-like cannot become a message.

    ``path`` locates the offending value (``messages[3].tool_call_id``), ``reason``
    says what was expected. ``str(err)`` is ``"<path>: <reason>"`` and is meant to be
    shown to users as is.
    """

    def __init__(self, path: str, reason: str, lc_error: str = "ValueError") -> None:
        self.path = path
        self.reason = reason
        self.lc_error = lc_error
        super().__init__(f"{path}: {reason}" if path else reason)

    def under(self, prefix: str) -> InvalidMessage:
        """The same error, located under ``prefix`` (e.g. ``deltas[2].``)."""
        path = f"{prefix}{self.path}" if self.path else prefix.rstrip(".")
        return InvalidMessage(path, self.reason, self.lc_error)


class ReducerError(ThreadfoldError, ValueError):
    """Raised by ``add_messages`` where LangGraph raises ``ValueError``.

    The message text is LangGraph's, word for word, so callers matching on it keep working.
    """


class ChunkMergeError(ThreadfoldError, ValueError):
    """Raised when two chunks cannot be added, where LangChain's ``+`` raises.

    ``lc_error`` names LangChain's exception class for the same pair.
    """

    def __init__(self, reason: str, lc_error: str = "ValueError") -> None:
        self.reason = reason
        self.lc_error = lc_error
        super().__init__(reason)
