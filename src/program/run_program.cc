#include "stoker/program/run_program.h"

#include "mpi/comm.h"

namespace stoker::program {

int RunProgram(MPI_Comm world, const std::function<int()>& body) {
  return mpi::RunProgram(mpi::Comm(world), body);
}

}  // namespace stoker::program
