"""Spark processes a test starts and stops itself: a standalone master and worker, a Spark
Connect server. Each is a JVM started by pyspark's own launch scripts, bound to loopback,
writing its log to a file, and stopped by its process id. Also a Python for executors
that has what wisp needs but not wisp, and the documented zip of wisp to ship to them."""

from __future__ import annotations

import fcntl
import importlib.metadata
import json
import os
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyspark
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

SPARK_HOME = Path(pyspark.__file__).resolve().parent
SPARK_CLASS = SPARK_HOME / "bin" / "spark-class"
SPARK_SUBMIT = SPARK_HOME / "bin" / "spark-submit"
LOOPBACK = "127.0.0.1"

# What the test run's own environment says about Python that a cluster process must not
# inherit: the processes started here choose their Python themselves.
PYTHON_SETTINGS = ("PYTHONPATH", "PYSPARK_PYTHON", "PYSPARK_DRIVER_PYTHON")


EXECUTOR_NEEDS = ("numpy", "pyarrow", "pandas")
"""What an executor's Python needs besides wisp (docs/cluster.md)."""


def distributions(names: tuple[str, ...]) -> list[importlib.metadata.Distribution]:
    """The installed distributions `names` and everything they require (no extras)."""
    found: dict[str, importlib.metadata.Distribution] = {}
    todo = list(names)
    while todo:
        dist = importlib.metadata.distribution(todo.pop())
        name = canonicalize_name(dist.metadata["Name"])
        if name in found:
            continue
        found[name] = dist
        for text in dist.requires or []:
            requirement = Requirement(text)
            if requirement.marker is None or requirement.marker.evaluate({"extra": ""}):
                todo.append(requirement.name)
    return list(found.values())


def executor_python(root: Path) -> Path:
    """A virtual environment holding numpy, pyarrow, pandas and their requirements (links
    to this run's installed copies) and nothing else: no wisp. Returns its python."""
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    version = f"python{sys.version_info.major}.{sys.version_info.minor}"
    site = root / "lib" / version / "site-packages"
    for dist in distributions(EXECUTOR_NEEDS):
        installed = Path(str(dist.locate_file("")))
        tops = {f.parts[0] for f in dist.files or [] if f.parts[0] != ".."}
        for top in sorted(tops):
            (site / top).symlink_to(installed / top)
    return root / "bin" / "python"


def wisp_zip(target: Path) -> Path:
    """`target`, a zip of the wisp package directory made as docs/cluster.md says:
    `python -m zipfile -c wisp.zip <the directory of wisp/__init__.py>`."""
    import wisp

    subprocess.run([sys.executable, "-m", "zipfile", "-c", str(target),
                    str(Path(wisp.__file__).parent)], check=True)
    return target


def free_port() -> int:
    """A TCP port on loopback that nothing listens on now."""
    with socket.socket() as probe:
        probe.bind((LOOPBACK, 0))
        return int(probe.getsockname()[1])


LOCAL_CONNECT_LOCK = Path(tempfile.gettempdir()) / "wisp-tests-local-connect-15002.lock"
"""The file whose lock a process holds while it runs a local Spark Connect server from
`SparkSession.builder.remote("local[...]")`: pyspark binds that server to Connect's
fixed default port (15002) and the client to `sc://localhost`, so two such processes at
once (two test processes) would collide on the port."""


def run_local_connect(script: str) -> dict[str, Any]:
    """The result `script` prints, run in its own Python (which starts a local Connect
    server), holding LOCAL_CONNECT_LOCK meanwhile: one such server at a time."""
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable)
    with open(LOCAL_CONNECT_LOCK, "a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            done = subprocess.run([sys.executable, "-c", script], capture_output=True,
                                  text=True, timeout=240, env=env, check=False)
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)
    return script_result(done)


def script_result(done: subprocess.CompletedProcess[str]) -> dict[str, Any]:
    """What a test script printed as JSON on its line starting "RESULT "; a test failure
    with its exit code and the end of its output when it printed none."""
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert lines, f"exit {done.returncode}\n{done.stdout[-2000:]}\n{done.stderr[-4000:]}"
    found: dict[str, Any] = json.loads(lines[0].removeprefix("RESULT "))
    return found


def spark_env(**settings: str) -> dict[str, str]:
    """This process's environment without its Python settings, with Spark on loopback
    (SPARK_LOCAL_IP), plus `settings`."""
    env = {k: v for k, v in os.environ.items() if k not in PYTHON_SETTINGS}
    env["SPARK_LOCAL_IP"] = LOOPBACK
    env.update(settings)
    return env


@dataclass
class SparkProcess:
    """A running Spark JVM (the launch scripts `exec` java, so the pid is the JVM's) and
    the file its output goes to."""

    name: str
    process: subprocess.Popen[bytes]
    log: Path

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def wait_for(self, text: str, timeout: float = 60.0) -> None:
        """Wait until `text` appears in the log; fail with the log's tail if the process
        ends first or `timeout` seconds pass."""
        deadline = time.monotonic() + timeout
        while text not in self.log_text():
            if self.process.poll() is not None:
                raise AssertionError(f"{self.name} exited ({self.process.returncode}) "
                                     f"before {text!r}:\n{self.log_text()[-4000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{self.name}: no {text!r} after {timeout:.0f} s:\n"
                                     f"{self.log_text()[-4000:]}")
            time.sleep(0.2)

    def stop(self) -> None:
        """SIGTERM to the process by its id (Spark's shutdown hooks stop what it started),
        then SIGKILL if it has not ended 30 s later."""
        if self.process.poll() is None:
            os.kill(self.process.pid, signal.SIGTERM)
            try:
                self.process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.kill(self.process.pid, signal.SIGKILL)
                self.process.wait(timeout=30)


@contextmanager
def spark_process(name: str, command: Sequence[str | Path], log_dir: Path,
                  env: Mapping[str, str]) -> Iterator[SparkProcess]:
    """Start `command` (a pyspark launch script and its arguments) with its output in
    `log_dir/<name>.log`; stop it on leaving, whatever happened."""
    log = log_dir / f"{name}.log"
    with log.open("wb") as out:
        process = subprocess.Popen([str(part) for part in command], stdout=out,
                                   stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                                   env=dict(env), cwd=log_dir)
    running = SparkProcess(name, process, log)
    try:
        yield running
    finally:
        running.stop()


@contextmanager
def connect_server(work_dir: Path, python: str) -> Iterator[str]:
    """A Spark Connect server on loopback (`local[2]`, executors running `python`);
    yields its `sc://` address."""
    port = free_port()
    command = [SPARK_SUBMIT, "--class", "org.apache.spark.sql.connect.service.SparkConnectServer",
               "--name", "wisp test Connect server", "--master", "local[2]",
               "--conf", f"spark.connect.grpc.binding.address={LOOPBACK}",
               "--conf", f"spark.connect.grpc.binding.port={port}",
               "--conf", "spark.ui.enabled=false",
               "--conf", "spark.sql.shuffle.partitions=2",
               "--conf", f"spark.pyspark.python={python}"]
    with spark_process("connect-server", command, work_dir,
                       spark_env(PYSPARK_PYTHON=python)) as server:
        server.wait_for(f"Spark Connect server started at: {LOOPBACK}:{port}", timeout=120)
        yield f"sc://{LOOPBACK}:{port}"
