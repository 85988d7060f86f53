#!/usr/bin/env bash
# stoker as a package others build on: `cmake --install` of this build into a temporary prefix,
# then a project outside the tree (tests/install/consumer) finds it with
# find_package(stoker CONFIG REQUIRED), builds against the installed headers and libraries only
# (no path into the source or build tree), and runs under mpirun at 2 ranks on a corpus the
# installed `stoker synth` makes: three batches, a save, a resume at step 3. With the tensor edge
# built, the same through stoker::torch. Also checks that no internal header was installed, and
# that `cpack -G DEB` makes a Debian package of the same files. With the Python package built, it
# lands under PREFIX/PYTHON_DIR, a folder on Debian's Python's path for the prefixes /usr/local
# and /usr, and `import stoker` from there streams at 2 ranks.
# Environment: STOKER_BUILD (this build), STOKER_SOURCE, CMAKE (cmake), MPIRUN, WITH_TORCH (ON/OFF),
# PYTHON_DIR (empty without the Python package).
set -euo pipefail
source "$(dirname "$0")/../common/test_lib.sh"
: "${STOKER_BUILD:?}" "${STOKER_SOURCE:?}" "${CMAKE:?}" "${MPIRUN:?}" "${WITH_TORCH:?}"

make_work install

prefix="$work/prefix"
"$CMAKE" --install "$STOKER_BUILD" --prefix "$prefix" > "$work/install.txt" ||
  fail "cmake --install: $(cat "$work/install.txt")"
for f in include/stoker/loader.h include/stoker/corpus.h include/stoker/error.h bin/stoker; do
  [ -e "$prefix/$f" ] || fail "not installed: $f"
done
for f in libstoker.a stokerConfig.cmake stokerConfigVersion.cmake; do
  [ -n "$(find "$prefix" -name "$f")" ] || fail "not installed: $f"
done
[ "$WITH_TORCH" = OFF ] || [ -e "$prefix/include/stoker/torch.h" ] || fail "not installed: torch.h"
internal=$(find "$prefix/include" -name '*.h' ! -path "$prefix/include/stoker/*" | head -3)
[ -z "$internal" ] || fail "internal headers installed: $internal"
echo "ok: installed $(find "$prefix" -type f | wc -l) files into a temporary prefix"

# The consumer sees the prefix only: a copy of its sources outside both trees.
cp -r "$STOKER_SOURCE/tests/install/consumer" "$work/src"
"$CMAKE" -S "$work/src" -B "$work/build" -DCMAKE_PREFIX_PATH="$prefix" -DWITH_TORCH="$WITH_TORCH" \
  -DCMAKE_BUILD_TYPE=Release > "$work/configure.txt" 2>&1 ||
  fail "the consumer's find_package(stoker): $(tail -30 "$work/configure.txt")"
"$CMAKE" --build "$work/build" -j 2 > "$work/build.txt" 2>&1 ||
  fail "building the consumer: $(tail -30 "$work/build.txt")"
if grep -F -e "$STOKER_SOURCE/src" -e "$STOKER_BUILD" "$work/build/compile_commands.json" \
     "$work/build/CMakeFiles/consumer.dir/flags.make" 2> /dev/null; then
  fail "the consumer's build reaches into stoker's tree"
fi
echo "ok: the consumer found stoker $(sed -n 's/^set(PACKAGE_VERSION "\(.*\)")/\1/p' \
  "$(find "$prefix" -name stokerConfigVersion.cmake)") and built against the prefix alone"

"$prefix/bin/stoker" synth "$work/corpus" --dataset web:20000:100 --dataset code:10000:80 \
  --files 2 > /dev/null 2>&1 || fail "the installed stoker synth"
programs=(consumer)
[ "$WITH_TORCH" = OFF ] || programs+=(consumer_torch)
for program in "${programs[@]}"; do
  out="$work/$program.txt"
  $MPIRUN -np 2 "$work/build/$program" "$work/corpus" "$work/ckpt-$program" > "$out" 2>&1 ||
    fail "$program at 2 ranks: $(cat "$out")"
  # 2 ranks x 4 batches x 2 rows x 33 tokens.
  grep -q "consumer: 2 ranks, 2 datasets, resumed at step 3, now at step 4, 528 tokens" "$out" ||
    fail "$program: unexpected output: $(cat "$out")"
  echo "ok: $program at 2 ranks: $(grep consumer: "$out")"
done

if [ -n "${PYTHON_DIR:-}" ]; then
  for f in __init__.py loader.py dataset.py; do
    [ -e "$prefix/$PYTHON_DIR/stoker/$f" ] || fail "not installed: $PYTHON_DIR/stoker/$f"
  done
  [ -n "$(find "$prefix/$PYTHON_DIR/stoker" -name '_stoker*.so')" ] || fail "not installed: _stoker"
  /usr/bin/python3 -c "import sys; assert {'/usr/local/$PYTHON_DIR', '/usr/$PYTHON_DIR'} <= set(sys.path), sys.path" ||
    fail "$PYTHON_DIR under /usr/local or /usr is not on Debian's Python's path"
  PYTHONPATH="$prefix/$PYTHON_DIR" $MPIRUN -np 2 /usr/bin/python3 -c "
import stoker
loader = stoker.Loader('$work/corpus', seq_len=32, batch_size=2)
assert stoker.__file__.startswith('$prefix'), stoker.__file__
tokens = sum(next(loader)['tokens'].numel() for _ in range(3))
print(f'python: rank {loader.rank} of {loader.world_size}, step {loader.step}, {tokens} tokens')" > "$work/python.txt" 2>&1 ||
    fail "the installed Python package at 2 ranks: $(cat "$work/python.txt")"
  # Counted as matches, not lines: mpirun passes each rank's output on as it comes, and under load
  # one rank's line can end after the other's begins on the same line.
  [ "$(grep -o "step 3, 198 tokens" "$work/python.txt" | wc -l)" = 2 ] ||
    fail "the installed Python package: $(cat "$work/python.txt")"
  echo "ok: the installed Python package streams at 2 ranks from $PYTHON_DIR"
fi

# The Debian package of the same install: under /usr, with its dependencies declared.
(cd "$work" && cpack --config "$STOKER_BUILD/CPackConfig.cmake" -G DEB -B "$work/deb" \
  > "$work/cpack.txt" 2>&1) || fail "cpack -G DEB: $(tail -20 "$work/cpack.txt")"
deb=$(find "$work/deb" -maxdepth 1 -name 'stoker_*.deb')
[ -n "$deb" ] || fail "cpack wrote no .deb: $(cat "$work/cpack.txt")"
dpkg-deb -c "$deb" > "$work/deb-files.txt"
for f in ./usr/include/stoker/loader.h ./usr/bin/stoker ./usr/lib/cmake/stoker/stokerConfig.cmake; do
  grep -q -F " $f" "$work/deb-files.txt" || fail "$(basename "$deb") lacks $f"
done
dpkg-deb -f "$deb" Depends | grep -q libhdf5-openmpi-dev || fail "$(basename "$deb") declares no HDF5"
if [ -n "${PYTHON_DIR:-}" ]; then
  grep -q -F " ./usr/$PYTHON_DIR/stoker/__init__.py" "$work/deb-files.txt" ||
    fail "$(basename "$deb") lacks the Python package"
  dpkg-deb -f "$deb" Depends | grep -q python3-mpi4py || fail "$(basename "$deb") declares no mpi4py"
fi
echo "ok: $(basename "$deb"): $(wc -l < "$work/deb-files.txt") entries, depends on" \
  "$(dpkg-deb -f "$deb" Depends)"
