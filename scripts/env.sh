# Sourced by stoker's scripts: how mpirun runs here. As root it needs --allow-run-as-root; on a
# machine with fewer cores than ranks it needs --oversubscribe; on a machine without a fast network
# the shared-memory transport keeps Open MPI from warning about missing InfiniBand.
export OMPI_MCA_btl=${OMPI_MCA_btl:-self,vader}
export OMPI_MCA_btl_base_warn_component_unused=0
export OMPI_MCA_rmaps_base_oversubscribe=1
if [ "$(id -u)" -eq 0 ]; then
  export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
fi
export OMP_NUM_THREADS=${OMP_NUM_THREADS:-1}
# The cores this process may use, for make -j and ctest -j: GNU nproc obeys OMP_NUM_THREADS, so
# after the line above a plain $(nproc) says 1 and would build and test one job at a time.
stoker_cores() { env -u OMP_NUM_THREADS -u OMP_THREAD_LIMIT nproc; }
# stoker_stage LABEL COMMAND...: runs COMMAND, prints "LABEL took N s (exit status S)" (what
# benchmarks/test_costs.py tables) and returns COMMAND's status.
stoker_stage() {
  local label=$1 start=$SECONDS status=0
  shift
  "$@" || status=$?
  echo "$label took $((SECONDS - start)) s (exit status $status)"
  return "$status"
}
# New build folders use Ninja when it is installed (scripts/setup.sh installs it); a folder
# already configured keeps the generator it has.
if [ -z "${CMAKE_GENERATOR:-}" ] && command -v ninja > /dev/null; then
  export CMAKE_GENERATOR=Ninja
fi
