# Sourced by every test script (tests/cli, tests/install, tests/slurm): what they share.

# fail MESSAGE...: prints "FAIL: MESSAGE" on stderr (with "($FAIL_CONTEXT)" when the script set
# it, e.g. the seed that reproduces a soak) and exits 1, which fails the test.
fail() { echo "FAIL${FAIL_CONTEXT:+ ($FAIL_CONTEXT)}: $*" >&2; exit 1; }

# make_work NAME: $work becomes a new temporary folder, removed when the script exits.
make_work() {
  work=$(mktemp -d "${TMPDIR:-/tmp}/stoker-$1.XXXXXX")
  trap 'rm -rf "$work"' EXIT
}
