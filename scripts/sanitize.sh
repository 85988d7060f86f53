#!/usr/bin/env bash
# Builds and runs one sanitizer configuration of stoker's tests (scripts/test.sh runs both):
#   scripts/sanitize.sh address,undefined [ctest args...]   -> build-asan/
#       AddressSanitizer + LeakSanitizer + UndefinedBehaviorSanitizer: the unit tests, the MPI
#       tests at 1, 2 and 4 ranks, and the command-line tests (real `stoker` runs under mpirun).
#   scripts/sanitize.sh thread [ctest args...]              -> build-tsan/
#       ThreadSanitizer: the threaded parts, i.e. the Loader's reading (prefetch) thread and the
#       background checkpoint writer (MPI loader, checkpoint and faults tests at 1, 2 and 4
#       ranks; the layouts' test at 8) and the unit tests that start threads (HDF5 layer: concurrent readers, a writer;
#       the read queue's engines: reader threads and io_uring).
# Each: configure (scripts/sanitizer_build.sh: STOKER_SANITIZE, no libtorch, no benchmarks; the
# ASan build with clang, as it also holds the fuzz targets of scripts/fuzz.sh), build only the
# test targets it runs, run them with ctest at one test more than the cores, as the main ctest.
# Any sanitizer report fails its test: the runtime options (STOKER_SANITIZER_ENV in the top-level
# CMakeLists.txt) make the process exit non-zero, and tests/sanitizers/*.supp only name
# uninstrumented libraries (Open MPI's), never stoker code.
# STOKER_ASAN_BUILD_DIR / STOKER_TSAN_BUILD_DIR choose other build folders.
set -euo pipefail
cd "$(dirname "$0")/.."
kind=${1:?usage: scripts/sanitize.sh address,undefined|thread [ctest args...]}
shift

case "$kind" in
  address,undefined)
    build_dir=${STOKER_ASAN_BUILD_DIR:-build-asan}
    fixed_targets=(unit_tests stoker_cli)
    mpi_pattern='mpi_[a-z0-9_]*_test'   # every MPI test binary
    tests='^(unit|mpi|cli)\.'
    # The soak test only SIGKILLs and resumes `stoker run` (a killed process never runs its leak
    # check); cli.run, cli.rescale, cli.audit and cli.checkpoint_faults cover the same code.
    # cli.empty_documents repeats cli.run's paths at up to 8 ranks (10x slower here); the
    # planner's passing over empty documents runs here in unit RowPlanner.EmptyDocuments*.
    # cli.options is some 40 refusals of settings, each a process start (2.5 s here): the code
    # behind them runs here in mpi LoaderTest.BadConfiguration* and the config parser in the
    # fuzzing stage. cli.errors (a corpus's bad entries named by discovery, 100 s here) and
    # cli.synth_inspect_verify (115 s) run the code of mpi DiscoveryTest, SynthTest, VerifyTest
    # and InspectTest, which run here at 1, 2 and 4 ranks, behind the command line that
    # cli.checkpoint_tools and cli.run run here. cli.checkpoint_lock (84 s here) waits on real
    # runs that hold and lose a folder's lock; the lock's code runs here in every CLI test that
    # saves (cli.run, cli.checkpoint_faults: Loader::PrepareResume, PrepareFreshStart) and in
    # cli.checkpoint_tools (a whole-folder reshard). cli.interrupted_steps repeats resumes that
    # cli.checkpoint_faults runs here; the listing and removal run here in unit InterruptedSteps.
    # cli.audit_runs (two runs at once, slowed on purpose) checks run records whose rule runs
    # here in unit RunRecords and RunRecordFiles, and whose writer runs in cli.audit.
    # cli.rescale (150 s here: resumes on 1 to 7 ranks of 2 cores) runs the rescale that mpi
    # CheckpointTest.Rescaled* and FromFewerRanks* run here at 1, 2 and 4 ranks (there and back,
    # the offline reshard against the MPI rescale, every token once).
    # cli.corpus_changed (resumes refused on a changed corpus) runs the diff that unit CorpusDiff
    # and CorpusRecord check here; every save here writes the corpus record, every reshard
    # copies it. cli.job_rules (100 s here, 36 s in the main build) runs `stoker job` on the pure
    # rules that unit JobSettings, DecideRequeue and SlurmTime check here. cli.corpus_views (ranks
    # in mount namespaces of their own) runs the comparison of the ranks' views that mpi
    # AgreementTest.ACorpusSeenOtherwise* and ACopyOfTheCorpus* run here at 2 and 4 ranks, and
    # the checksums that mpi VerifyTest.*Checksum* run here.
    exclude='^cli\.(soak|empty_documents|options|errors|synth_inspect_verify|checkpoint_lock|interrupted_steps|audit_runs|corpus_changed|corpus_views|rescale|job_rules)$'
    ;;
  thread)
    build_dir=${STOKER_TSAN_BUILD_DIR:-build-tsan}
    fixed_targets=(unit_tests)
    mpi_pattern='mpi_(loader|checkpoint|faults|layout)_test'
    # The unit tests that start threads (readers and a writer through the HDF5 layer; the read
    # queue's pool of reader threads), and the MPI tests of the Loader: its reading thread, the
    # checkpoint writer's thread, and errors (injected I/O faults) crossing from those threads to
    # the trainer's; and the layouts' broadcast of a replica's batches (nonblocking broadcasts on
    # the trainer's thread beside the reading thread; 8 s here).
    tests='^(unit\.(H5Test\.Threads|Engines/ReadQueueTest\.)|mpi\.(loader|checkpoint|faults|layout)\.)'
    exclude='^$'
    ;;
  *) echo "sanitize: unknown configuration '$kind' (address,undefined or thread)" >&2; exit 2 ;;
esac

source scripts/env.sh
source scripts/sanitizer_build.sh
stoker_stage "sanitize[$kind]: configure" sanitizer_configure "$kind" "$build_dir"
mapfile -t mpi_targets < <(cmake --build "$build_dir" --target help |
                           grep -oE "\b${mpi_pattern}\b" | sort -u)
targets=()
for t in "${fixed_targets[@]}" "${mpi_targets[@]}"; do targets+=(--target "$t"); done
stoker_stage "sanitize[$kind]: build" \
  cmake --build "$build_dir" -j "$(stoker_cores)" "${targets[@]}"

# The sanitizer options for the unit tests (the MPI and CLI tests get the same from CTest's
# STOKER_TEST_ENV, see tests/CMakeLists.txt).
while IFS= read -r assignment; do
  export "${assignment?}"
done < <(sed -n 's/^STOKER_SANITIZER_ENV:INTERNAL=//p' "$build_dir/CMakeCache.txt" | tr ';' '\n')
stoker_stage "sanitize[$kind]: test" \
  ctest --test-dir "$build_dir" --output-on-failure -j "$(($(stoker_cores) + 1))" -R "$tests" -E "$exclude" "$@"
