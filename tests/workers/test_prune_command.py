"""``threadfold prune``: an operator's cleanup by tenant, id prefix, metadata and idle age,
counted first with --dry-run, never touching a pinned thread; a bad selection is refused
before anything is removed."""

from __future__ import annotations

from typing import Any

import pytest

from tests.workers.harness import make_settings
from threadfold import Client, NotFound
from threadfold.workers.ops.cli import main
from threadfold.workers.ops.processes import settings_env


class _NoWake:
    def wake(self, refs: Any) -> None:
        pass


def test_prune_counts_then_removes_what_it_selects(
    redis_url: str, monkeypatch: Any, capsys: pytest.CaptureFixture[str]
) -> None:
    settings = make_settings(redis_url, key_prefix="pc", buckets=8)
    for name, value in settings_env(settings).items():
        monkeypatch.setenv(name, value)
    msg = [{"role": "user", "content": "x"}]
    with Client(settings=settings, waker=_NoWake()) as acme, Client(
        settings=settings, waker=_NoWake(), tenant="globex"
    ) as globex:
        for i in range(6):
            acme.append(f"run-{i}", msg, metadata={"batch": i % 2})
        acme.append("keep", msg)
        acme.update("run-0", pinned=True)
        globex.append("run-9", msg, metadata={"batch": 1})

        assert main(["prune", "--tenant", "_", "--prefix", "run-", "--dry-run"]) == 0
        out, err = capsys.readouterr()
        assert "would remove 5 thread(s)" in out and "8/8 buckets" in err
        assert acme.count() == 7  # nothing removed by a dry run

        assert main(["prune", "--prefix", "run-", "--metadata", "batch=1"]) == 0
        assert "removed 4 thread(s)" in capsys.readouterr().out  # 3 of acme's, globex's
        with pytest.raises(NotFound):
            globex.status("run-9")

        assert main(["prune", "--tenant", "_", "--idle", "3600"]) == 0
        assert "removed 0 thread(s)" in capsys.readouterr().out  # none idle an hour
        assert main(["prune", "--tenant", "_"]) == 0
        assert "removed 3 thread(s)" in capsys.readouterr().out  # run-2, run-4, keep
        assert acme.status("run-0").pinned  # a pinned thread stays

        assert main(["prune"]) == 2  # every thread of every tenant is never one command
        assert "give a tenant, a prefix" in capsys.readouterr().err
        assert main(["prune", "--metadata", "nokey"]) == 2
        assert main(["prune", "--tenant", "bad tenant"]) == 2
        assert acme.count() == 1
