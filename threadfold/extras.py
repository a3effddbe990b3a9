"""The optional integrations' dependencies: a missing one is named with the extra that
brings it, instead of a bare ``No module named 'langgraph'``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator


@contextlib.contextmanager
def needs(module: str, *packages: str, extra: str = "langchain") -> Iterator[None]:
    """Import ``packages`` inside this block for ``module``; if one of them is not
    installed, raise an ImportError that says how to install it. Any other import
    error (a broken install, an incompatible version) passes through as it is."""
    try:
        yield
    except ModuleNotFoundError as exc:
        if (exc.name or "").split(".")[0] not in packages:
            raise
        raise ModuleNotFoundError(
            f"{module} needs the {extra!r} extra (no module named {exc.name!r}): "
            f"pip install 'threadfold[{extra}]'",
            name=exc.name,
        ) from exc
