// The collective admin of a checkpoint folder of stoker/checkpoint.h, on restore.h's parts.
#include "checkpoint/checkpoint_lock.h"
#include "checkpoint/restore.h"
#include "stoker/checkpoint.h"

namespace stoker {

std::optional<std::string> FindResumeStep(MPI_Comm comm, const std::string& checkpoint_dir,
                                          const std::vector<std::string>& required_files) {
  return FindNewestCompleteStep(mpi::Comm(comm), checkpoint_dir, required_files);
}

std::optional<std::string> PrepareResume(MPI_Comm comm, const std::string& checkpoint_dir,
                                         const std::vector<std::string>& required_files) {
  const mpi::Comm world(comm);
  // Before the folder is even read: a run saving into it now is refused, not mistaken for an
  // interrupted one.
  LockCheckpointFolder(world, checkpoint_dir);
  const std::optional<std::string> step_dir =
      FindNewestCompleteStep(world, checkpoint_dir, required_files);
  SetAsideStepsAfter(world, checkpoint_dir, step_dir);
  return step_dir;
}

void PrepareFreshStart(MPI_Comm comm, const std::string& checkpoint_dir, bool start_over) {
  PrepareFreshStart(mpi::Comm(comm), checkpoint_dir, start_over);
}

}  // namespace stoker
