"""A ``threadfold.Client`` in another shell finds the stack ``threadfold up`` started.

The private Redis and broker listen on free ports, so ``up`` writes the settings a
client needs to ``<data-dir>/env`` (0600) and prints the line to source it.
"""

from __future__ import annotations

import re
import signal
import stat
import subprocess
from pathlib import Path

from tests.infra.processes import ManagedProcess, wait_until
from tests.workers.test_up_restarts import THREADFOLD, _environment

CLIENT = """
from threadfold import Client
with Client() as client:
    done = client.append("t1", [{"role": "user", "content": "hi from another shell"}])
    state = client.state("t1", min_version=done.version, wait=20)
    print([m["content"] for m in state.messages])
"""


def test_a_client_in_another_shell_sources_the_env_file_up_wrote(tmp_path: Path) -> None:
    up = ManagedProcess(
        [THREADFOLD, "up", "--port", "0", "--workers", "1", "--data-dir", str(tmp_path / "stack")],
        env=_environment(),
        log_path=tmp_path / "up.txt",
        cwd=tmp_path,
    )
    try:
        wait_until(lambda: "Running." in up.read_log(), 120, message="threadfold up did not start")
        found = re.search(r"clients +source (\S+)", up.read_log())
        assert found is not None, up.read_log()
        env_file = Path(found[1])
        assert stat.S_IMODE(env_file.stat().st_mode) == 0o600
        script = f". {env_file} && exec {Path(THREADFOLD).with_name('python')} -c '{CLIENT}'"
        shell_env = {k: v for k, v in _environment().items() if v is not None}
        shell_env["PATH"] = "/usr/bin:/bin"
        done = subprocess.run(
            ["bash", "-c", script], env=shell_env, capture_output=True, text=True, timeout=60,
            check=False, cwd=tmp_path,
        )
        assert done.returncode == 0, done.stderr
        assert done.stdout.strip() == "['hi from another shell']", done.stdout
    finally:
        up.send_signal(signal.SIGTERM)
        up.wait_for_exit(60)
        up.kill()
    assert up.returncode == 0, up.read_log()
