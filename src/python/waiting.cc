#include "waiting.h"

#include <pthread.h>
#include <spdlog/spdlog.h>
#include <unistd.h>

#include <csignal>
#include <deque>
#include <optional>
#include <thread>

namespace stoker::python {

namespace {

// What runs in the background: the worker's queue and its thread, and how many pieces of work
// and ending loaders are not done yet. Never destroyed: a thread may end after static teardown.
struct Background {
  std::mutex mutex;
  std::condition_variable changed;
  std::deque<std::function<void()>> queue;
  bool worker_started = false;
  uint64_t running = 0;
  std::optional<bool> multiple;  // MPI_THREAD_MULTIPLE, once asked
};

Background* g_background = nullptr;  // made by StartWaiting, at the module's import
pid_t g_module_pid = 0;              // the process that imported the module

// A forked child starts with none of its parent's threads: a background of its own.
void AfterForkInChild() { g_background = new Background; }

Background& TheBackground() { return *g_background; }

// A thread of the package's own: the signals go to the others (Python's handlers run on the
// main thread, and a signal here would only break off a read with EINTR).
template <typename Body>
std::thread QuietThread(Body body) {
  sigset_t all;
  sigset_t before;
  sigfillset(&all);
  pthread_sigmask(SIG_BLOCK, &all, &before);  // the new thread starts with this mask
  std::thread thread(std::move(body));
  pthread_sigmask(SIG_SETMASK, &before, nullptr);
  return thread;
}

void Ended(Background& background) {
  std::lock_guard lock(background.mutex);
  --background.running;
  background.changed.notify_all();
}

void RunWorker(Background& background) {
  while (true) {
    std::function<void()> work;
    {
      std::unique_lock lock(background.mutex);
      background.changed.wait(lock, [&] { return !background.queue.empty(); });
      work = std::move(background.queue.front());
      background.queue.pop_front();
    }
    work();
    work = nullptr;  // what it holds is dropped here, on the worker
    Ended(background);
  }
}

}  // namespace

void StartWaiting() {
  g_module_pid = getpid();
  g_background = new Background;
  pthread_atfork(nullptr, nullptr, &AfterForkInChild);
}

void RunSignalHandlers() {
  py::gil_scoped_acquire gil;
  if (PyErr_CheckSignals() != 0) throw py::error_already_set();
}

void EndOnItsOwnThread(std::unique_ptr<Loader> loader) {
  if (!loader) return;
  Background& background = TheBackground();
  {
    std::lock_guard lock(background.mutex);
    ++background.running;
  }
  QuietThread([loader = std::move(loader), &background]() mutable {
    loader.reset();
    Ended(background);
  }).detach();
}

void WaitForBackgroundWork() {
  Background& background = TheBackground();
  WaitInSlices([&](std::chrono::milliseconds slice) {
    std::unique_lock lock(background.mutex);
    return background.changed.wait_for(lock, slice, [&] { return background.running == 0; });
  });
}

bool WorkDone::WaitFor(std::chrono::milliseconds timeout) {
  std::unique_lock lock(mutex_);
  return changed_.wait_for(lock, timeout, [&] { return done_; });
}

void WorkDone::Set() {
  std::lock_guard lock(mutex_);
  done_ = true;
  changed_.notify_all();
}

std::shared_ptr<WorkDone> StartOnWorker(std::function<void()> work) {
  auto done = std::make_shared<WorkDone>();
  Background& background = TheBackground();
  std::lock_guard lock(background.mutex);
  if (!background.worker_started) {
    QuietThread([&background] { RunWorker(background); }).detach();
    background.worker_started = true;
  }
  ++background.running;
  background.queue.push_back([work = std::move(work), done] {
    work();
    done->Set();
  });
  background.changed.notify_all();
  return done;
}

bool WorkerMayRun() {
  if (getpid() != g_module_pid) return false;
  Background& background = TheBackground();
  std::lock_guard lock(background.mutex);
  if (!background.multiple) {
    int provided = MPI_THREAD_SINGLE;
    MPI_Query_thread(&provided);
    background.multiple = provided == MPI_THREAD_MULTIPLE;
  }
  return *background.multiple;
}

void LogLeftError(const std::exception_ptr& error) {
  try {
    std::rethrow_exception(error);
  } catch (const std::exception& e) {
    spdlog::error("a call left by Ctrl-C failed on the package's worker: {}", e.what());
  }
}

}  // namespace stoker::python
