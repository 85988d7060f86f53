"""What the import tests share: the `stoker` program (STOKER) and a way to run it alone or as
the ranks of `$MPIRUN -np N` (MPIRUN: mpirun and its flags, as CTest sets them,
tests/import/CMakeLists.txt). Each test makes its inputs in its own pytest tmp_path."""

import os
import shlex
import subprocess

import pytest

TIMEOUT = 120  # seconds for one run of stoker; a run here takes about one


@pytest.fixture(scope="session")
def stoker() -> str:
    """The stoker program, from STOKER."""
    path = os.environ.get("STOKER")
    if not path:
        pytest.fail("set STOKER to the stoker program (CTest sets it)")
    return path


@pytest.fixture(scope="session")
def mpirun() -> list:
    """mpirun and its flags, from MPIRUN, split as a shell would."""
    command = os.environ.get("MPIRUN")
    if not command:
        pytest.fail("set MPIRUN to mpirun and its flags (CTest sets it)")
    return shlex.split(command)


@pytest.fixture
def run(stoker, mpirun):
    """run(*args, ranks=None) -> (returncode, output): `stoker ARGS` alone, or with `ranks` as
    `$MPIRUN -np RANKS stoker ARGS`; output is stdout and stderr together."""
    def run_stoker(*args, ranks=None):
        command = [stoker, *map(str, args)]
        if ranks is not None:
            command = [*mpirun, "-np", str(ranks), *command]
        done = subprocess.run(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                              stdin=subprocess.DEVNULL, text=True, errors="replace",
                              timeout=TIMEOUT)
        return done.returncode, done.stdout
    return run_stoker
