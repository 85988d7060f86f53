#!/usr/bin/env bash
# Installs what stoker needs from Debian 12's packages. Idempotent: when every package is already
# installed it only checks, in well under a second. Needs root (or sudo) when something is missing.
#   scripts/setup.sh           what stoker needs to build, run and test
#   scripts/setup.sh --slurm   the same, plus Slurm (munge slurmctld slurmd slurm-client) for the
#                              single-node Slurm test of the job scripts (tests/slurm), which
#                              runs its own daemons from a temporary folder (not the system's)
set -euo pipefail

packages=(
  build-essential cmake pkg-config
  # Ninja builds in the order of the dependency graph and logs what each file cost
  # (build/.ninja_log); ccache keeps every build folder from compiling a file twice.
  ninja-build ccache
  libopenmpi-dev openmpi-bin
  libhdf5-openmpi-dev hdf5-tools
  libtorch-dev
  libcli11-dev libspdlog-dev libfmt-dev nlohmann-json3-dev libxxhash-dev
  # io_uring: the reading path's many reads in flight (src/os/read_queue.h).
  liburing-dev
  # toml++: weight schedule files in TOML (--weights-schedule; compiled in from its headers).
  libtomlplusplus-dev
  # zstd: `stoker import mds` of compressed MDS shards; python3-zstandard: the tests' MDS writer.
  libzstd-dev python3-zstandard
  # OpenSSL's libcrypto: the md5, sha* and blake2* hashes an MDS index lists (`stoker import
  # mds`); python3-xxhash: the tests' MDS writer lists xxh* hashes as MDSWriter does.
  libssl-dev python3-xxhash
  libgtest-dev libbenchmark-dev
  # fio: the random-read figures of `bench_loader --mode cold` (O_DIRECT, queue depth 1 and 32).
  fio
  # clang and its runtimes for libFuzzer and the sanitizers: the ASan and fuzzing stages' build.
  clang-14 libclang-rt-14-dev
  python3
  # h5py: tests write shards as other tools do (tests/cli/foreign_corpus.sh).
  python3-h5py
  # The Python package `stoker` (src/python): pybind11, numpy (its batches' arrays), mpi4py (on
  # Debian's Open MPI), and for its tests Debian's PyTorch (tensors made of the arrays) and pytest.
  pybind11-dev python3-pybind11 python3-numpy python3-torch python3-mpi4py python3-pytest
  # `pip install .` of the package into a virtual environment (tests/install/pip.sh), offline.
  python3-pip python3-venv python3-setuptools python3-wheel
  # libtorch links the reference BLAS by default; OpenBLAS takes its place (through Debian's
  # alternatives) and makes the example trainer's steps about 12x faster.
  libopenblas0-pthread
  # iproute2: the network namespaces, links and bridge of the multi-node test bed
  # (tests/multinode/testbed.sh).
  iproute2
)
for arg in "$@"; do
  case "$arg" in
    --slurm) packages+=(munge slurmctld slurmd slurm-client) ;;
    *) echo "setup: unknown argument $arg (usage: scripts/setup.sh [--slurm])" >&2; exit 2 ;;
  esac
done

missing=()
for p in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$p")
  fi
done
if [ ${#missing[@]} -eq 0 ]; then
  echo "setup: all ${#packages[@]} packages present"
  exit 0
fi

echo "setup: installing ${missing[*]}"
sudo=""
if [ "$(id -u)" -ne 0 ]; then
  command -v sudo >/dev/null || { echo "setup: need root or sudo to install packages" >&2; exit 1; }
  sudo="sudo"
fi
export DEBIAN_FRONTEND=noninteractive
$sudo apt-get update -qq
$sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
echo "setup: done"
