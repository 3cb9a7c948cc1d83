"""Fixtures for the sweep tests: a throw-away PostgreSQL server."""

from __future__ import annotations

import glob
import os
import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest


def _pg_bin(name: str) -> str | None:
    found = shutil.which(name)
    if found:
        return found
    candidates = sorted(glob.glob(f"/usr/lib/postgresql/*/bin/{name}"))
    return candidates[-1] if candidates else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@dataclass(frozen=True)
class PostgresServer:
    """A running throw-away server: its URL, and a restart (what a database failover looks like to a sweep)."""

    url: str
    command: tuple[str, ...]  # runuser prefix + pg_ctl
    data: Path
    env: dict[str, str]

    def stop(self) -> None:
        subprocess.run([*self.command, "-D", str(self.data), "-m", "fast", "-w", "-t", "60", "stop"],
                       check=True, capture_output=True, env=self.env, timeout=90)

    def start(self) -> None:
        """Start it again after ``stop`` (the options of the first start, kept in postmaster.opts)."""
        self.restart()

    def restart(self) -> None:
        subprocess.run([*self.command, "-D", str(self.data), "-l", str(self.data.parent / "log"), "-m", "fast",
                        "-w", "-t", "60", "restart"],
                       check=True, capture_output=True, env=self.env, timeout=90)


@pytest.fixture(scope="session")
def postgres_url(postgres_server: PostgresServer) -> str:
    return postgres_server.url


@pytest.fixture(scope="session")
def postgres_server() -> Iterator[PostgresServer]:
    """A PostgreSQL server on a free loopback port (initdb into a temp dir, pg_ctl start); its URL.

    As root the server runs as ``nobody`` (PostgreSQL refuses to run as root). Skips only when no server
    binary exists or the server cannot be started.
    """
    initdb, pg_ctl = _pg_bin("initdb"), _pg_bin("pg_ctl")
    if not (initdb and pg_ctl):
        pytest.skip("no PostgreSQL server binaries (initdb, pg_ctl) on PATH or in /usr/lib/postgresql/*/bin")
    root = Path(tempfile.mkdtemp(prefix="antsim-pg-"))
    prefix: list[str] = []
    if os.geteuid() == 0:
        os.chmod(root, 0o755)
        shutil.chown(root, "nobody")
        prefix = ["runuser", "-u", "nobody", "--"]
    data, port = root / "data", _free_port()
    env = {**os.environ, "LC_ALL": "C"}
    try:
        subprocess.run(prefix + [initdb, "-D", str(data), "-U", "postgres", "--auth=trust", "-E", "UTF8"],
                       check=True, capture_output=True, env=env, timeout=120)
        subprocess.run(prefix + [pg_ctl, "-D", str(data), "-l", str(root / "log"), "-w", "-t", "60", "-o",
                                 f"-p {port} -k {root} -c listen_addresses=127.0.0.1 -c fsync=off", "start"],
                       check=True, capture_output=True, env=env, timeout=90)
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired, OSError) as exc:
        log = (root / "log").read_text()[-500:] if (root / "log").exists() else ""
        shutil.rmtree(root, ignore_errors=True)
        pytest.skip(f"cannot start a PostgreSQL server: {exc}; {getattr(exc, 'stderr', b'')!r} {log}")
    try:
        yield PostgresServer(f"postgresql://postgres@127.0.0.1:{port}/postgres", (*prefix, pg_ctl), data, env)
    finally:
        subprocess.run(prefix + [pg_ctl, "-D", str(data), "-m", "immediate", "-w", "stop"],
                       capture_output=True, env=env, timeout=60)
        time.sleep(0.2)
        shutil.rmtree(root, ignore_errors=True)
