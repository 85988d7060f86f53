"""pip's side of the Python package (pyproject.toml): the compiled module `stoker._stoker` is
built by the project's CMake (target stoker_python: pybind11, the system's MPI and HDF5, no
libtorch), the Python files come from src/python/stoker. The version is the CMake project's.

    pip install --no-build-isolation .      # into the active environment (a venv included)
    pip uninstall stoker

CMake builds into build/pip (STOKER_PIP_BUILD_DIR: another folder; one that a CMake build of
the project already configured, scripts/build.sh's build/, is built as it is: its objects are
reused and its settings left alone). Needs what scripts/setup.sh installs (cmake, a compiler,
Open MPI, parallel HDF5, pybind11); setuptools' own files go to build/pip too."""

import os
import pathlib
import re
import shutil
import subprocess
import sys

from setuptools import Extension, setup
from setuptools.command.build_ext import build_ext

ROOT = pathlib.Path(__file__).resolve().parent
BUILD = pathlib.Path(os.environ.get("STOKER_PIP_BUILD_DIR", ROOT / "build" / "pip")).resolve()


def version() -> str:
    """project(stoker VERSION x.y.z) of CMakeLists.txt: the one place it is written."""
    found = re.search(r"project\(stoker VERSION ([0-9.]+)", (ROOT / "CMakeLists.txt").read_text())
    return found.group(1)


class CMakeBuild(build_ext):
    """Builds stoker_python with CMake and puts the module where setuptools packs it."""

    def build_extension(self, ext: Extension) -> None:
        if not (BUILD / "CMakeCache.txt").exists():
            subprocess.run(["cmake", "-S", str(ROOT), "-B", str(BUILD),
                            "-DCMAKE_BUILD_TYPE=RelWithDebInfo", "-DSTOKER_BUILD_TESTS=OFF",
                            "-DSTOKER_BUILD_BENCHMARKS=OFF", "-DSTOKER_BUILD_TORCH=OFF",
                            "-DSTOKER_BUILD_PYTHON=ON", f"-DPython_EXECUTABLE={sys.executable}"],
                           check=True)
        subprocess.run(["cmake", "--build", str(BUILD), "--target", "stoker_python", "-j",
                        str(os.cpu_count() or 1)], check=True)
        built = sorted((BUILD / "python" / "stoker").glob("_stoker*.so"))
        if not built:
            raise RuntimeError(f"CMake built no _stoker module into {BUILD}/python/stoker")
        target = pathlib.Path(self.get_ext_fullpath(ext.name))
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(built[0], target)


setup(
    version=version(),
    packages=["stoker"],
    package_dir={"stoker": "src/python/stoker"},
    ext_modules=[Extension("stoker._stoker", sources=[])],
    cmdclass={"build_ext": CMakeBuild},
    options={"build": {"build_base": str(BUILD / "setuptools")},
             "egg_info": {"egg_base": str(BUILD)}},
)
