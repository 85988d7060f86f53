// UniqueHandle: a move-only owner of a C handle (hid_t, MPI_Comm, MPI_Datatype, ...).
//
// Traits supplies the handle type, its null value Null(), and Close(h), which must not throw. The
// destructor closes the handle unless it is null or Traits::Skip(h) says the handle must not be
// closed (a predefined handle, or MPI already finalized). Collective closes are explicit calls
// (Reset()) that all ranks make at a documented point; the destructor is only the fallback.
#pragma once

#include <utility>

namespace stoker {

template <typename Traits>
class UniqueHandle {
 public:
  using Handle = typename Traits::Handle;

  UniqueHandle() = default;
  explicit UniqueHandle(Handle handle) : handle_(handle) {}
  UniqueHandle(const UniqueHandle&) = delete;
  UniqueHandle& operator=(const UniqueHandle&) = delete;
  UniqueHandle(UniqueHandle&& other) noexcept : handle_(other.Release()) {}
  UniqueHandle& operator=(UniqueHandle&& other) noexcept {
    if (this != &other) Reset(other.Release());
    return *this;
  }
  ~UniqueHandle() { Reset(); }

  Handle get() const { return handle_; }
  explicit operator bool() const { return handle_ != Traits::Null(); }

  // Gives up ownership without closing.
  Handle Release() { return std::exchange(handle_, Traits::Null()); }

  // Closes the current handle (if owned and closable) and takes `handle`.
  void Reset(Handle handle = Traits::Null()) {
    Handle old = std::exchange(handle_, handle);
    if (old != Traits::Null() && !Traits::Skip(old)) Traits::Close(old);
  }

 private:
  Handle handle_ = Traits::Null();
};

}  // namespace stoker
