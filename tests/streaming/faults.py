"""Failures injected into a stream's handlers, for the tests of failures and restarts:
a marker file in a folder of the test run's own makes the next data handler (`rows`)
or timer handler (`timer`) of any key fail once; the worker that removes the marker
raises. The failing kernels that call `Faults.fail_once` reach Spark's Python workers
pickled by value (`pickled_by_value`), with this module: the workers need not import
the tests."""

from __future__ import annotations

import os
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path
from types import ModuleType

from pyspark import cloudpickle


@dataclass(frozen=True)
class Faults:
    """The markers of one test module's injected failures, in `folder` (`named`: fixed
    in the test process, so that a worker reads the same folder)."""

    folder: Path

    @classmethod
    def named(cls, name: str) -> Faults:
        return cls(Path(tempfile.gettempdir()) / f"wisp-{name}-faults-{os.getpid()}")

    def arm(self, kind: str) -> None:
        """Make the next `kind` handler (`rows` or `timer`) of any key fail once."""
        self.folder.mkdir(exist_ok=True)
        (self.folder / kind).touch()

    def fail_once(self, kind: str) -> None:
        """Raise if a marker for `kind` is armed, removing it (so once)."""
        try:
            (self.folder / kind).unlink()
        except FileNotFoundError:
            return
        raise RuntimeError(f"injected failure in the {kind} handler")


def pickled_by_value(module: ModuleType) -> None:
    """Send `module`'s failing kernels, and this module, to Spark's workers by value."""
    cloudpickle.register_pickle_by_value(sys.modules[__name__])
    cloudpickle.register_pickle_by_value(module)
