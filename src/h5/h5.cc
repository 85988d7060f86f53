#include "h5/h5.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <hdf5.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <limits>
#include <mutex>
#include <type_traits>
#include <vector>

#include "base/check.h"
#include "base/unique_handle.h"

namespace stoker::h5 {

#ifndef H5_HAVE_PARALLEL
#error "stoker needs the MPI build of HDF5 (libhdf5-openmpi-dev)"
#endif

static_assert(std::is_same_v<hid_t, int64_t>, "stoker expects HDF5 1.10+ (64-bit hid_t)");

namespace {

// The one lock of every HDF5 call of the process (h5.h). Each public function takes it once, at
// its top; the helpers below never do, so it is never taken twice by one thread.
std::mutex& Mutex() {
  static std::mutex mutex;
  return mutex;
}
using Guard = std::lock_guard<std::mutex>;

struct HidTraits {
  using Handle = hid_t;
  static hid_t Null() { return H5I_INVALID_HID; }
  static bool Skip(hid_t h) { return h < 0 || H5Iis_valid(h) <= 0; }
  static void Close(hid_t h) {
    switch (H5Iget_type(h)) {
      case H5I_FILE:
        H5Fclose(h);
        break;
      case H5I_DATASET:
        H5Dclose(h);
        break;
      case H5I_ATTR:
        H5Aclose(h);
        break;
      case H5I_DATATYPE:
        H5Tclose(h);
        break;
      case H5I_DATASPACE:
        H5Sclose(h);
        break;
      case H5I_GENPROP_LST:
        H5Pclose(h);
        break;
      case H5I_GROUP:
        H5Gclose(h);
        break;
      default:
        H5Idec_ref(h);
        break;
    }
  }
};
using Hid = UniqueHandle<HidTraits>;

herr_t CollectError(unsigned n, const H5E_error2_t* err, void* data) {
  auto* lines = static_cast<std::vector<std::string>*>(data);
  if (err->desc != nullptr && err->desc[0] != '\0') lines->emplace_back(err->desc);
  return 0;
}

// Silences HDF5's automatic error printing once per process.
void SilenceOnce() {
  static const bool silenced = [] {
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
    return true;
  }();
  (void)silenced;
}

[[noreturn]] void Fail(const std::string& what) {
  std::vector<std::string> lines;
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_DOWNWARD, CollectError, &lines);
  H5Eclear2(H5E_DEFAULT);
  std::string detail;
  for (const auto& line : lines) {
    if (!detail.empty()) detail += "; ";
    detail += line;
  }
  throw Hdf5Error(detail.empty() ? what : fmt::format("{}: {}", what, detail));
}

// Checks an id-returning or status-returning call: negative means failure.
template <typename T>
T Check(T result, const std::string& what) {
  if (result < 0) [[unlikely]] {
    Fail(what);
  }
  return result;
}

hid_t NativeIntType(IntType type) {
  switch (type.size) {
    case 1:
      return type.is_signed ? H5T_NATIVE_INT8 : H5T_NATIVE_UINT8;
    case 2:
      return type.is_signed ? H5T_NATIVE_INT16 : H5T_NATIVE_UINT16;
    case 4:
      return type.is_signed ? H5T_NATIVE_INT32 : H5T_NATIVE_UINT32;
    case 8:
      return type.is_signed ? H5T_NATIVE_INT64 : H5T_NATIVE_UINT64;
  }
  throw InternalError(fmt::format("no integer type of {} bytes", type.size));
}

hid_t StoredIntType(IntType type) {
  switch (type.size) {
    case 1:
      return type.is_signed ? H5T_STD_I8LE : H5T_STD_U8LE;
    case 2:
      return type.is_signed ? H5T_STD_I16LE : H5T_STD_U16LE;
    case 4:
      return type.is_signed ? H5T_STD_I32LE : H5T_STD_U32LE;
    case 8:
      return type.is_signed ? H5T_STD_I64LE : H5T_STD_U64LE;
  }
  throw InternalError(fmt::format("no integer type of {} bytes", type.size));
}

std::string TypeName(hid_t type) {
  const size_t size = H5Tget_size(type);
  switch (H5Tget_class(type)) {
    case H5T_INTEGER:
      return fmt::format("{}int{}", H5Tget_sign(type) == H5T_SGN_2 ? "" : "u", 8 * size);
    case H5T_FLOAT:
      return fmt::format("float{}", 8 * size);
    case H5T_STRING:
      return "string";
    case H5T_COMPOUND:
      return "compound";
    default:
      return "non-numeric";
  }
}

Hid OpenDataset(hid_t file, const std::string& path, const std::string& name) {
  return Hid(Check(H5Dopen2(file, name.c_str(), H5P_DEFAULT),
                   fmt::format("{}: cannot open dataset {}", path, name)));
}

// H5Fopen under the layer's lock; a failure is the error `what` names.
hid_t OpenId(const std::string& path, unsigned flags, const char* what) {
  const Guard guard(Mutex());
  SilenceOnce();
  const hid_t id = H5Fopen(path.c_str(), flags, H5P_DEFAULT);
  if (id < 0) Fail(fmt::format("{}: {}", path, what));
  return id;
}

}  // namespace

bool IsHdf5(const std::string& path) {
  // H5Fis_hdf5 answers -1 alike for "cannot open" and for other failures: ask the system first,
  // so that an unreadable file is reported as such and not as "not HDF5".
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) throw IoError(fmt::format("{}: cannot open: {}", path, std::strerror(errno)));
  ::close(fd);
  const Guard guard(Mutex());
  SilenceOnce();
  const htri_t is = H5Fis_hdf5(path.c_str());
  if (is < 0) Fail(fmt::format("{}: cannot look for an HDF5 signature", path));
  return is > 0;
}

File File::OpenReadOnly(const std::string& path) {
  return File(OpenId(path, H5F_ACC_RDONLY, "cannot open as HDF5"), path);
}

File File::OpenReadWrite(const std::string& path) {
  return File(OpenId(path, H5F_ACC_RDWR, "cannot open as HDF5 for writing"), path);
}

File File::Create(const std::string& path) {
  const Guard guard(Mutex());
  SilenceOnce();
  const hid_t id = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  if (id < 0) Fail(fmt::format("{}: cannot create", path));
  return File(id, path);
}

File::File(File&& other) noexcept
    : id_(std::exchange(other.id_, H5I_INVALID_HID)), path_(std::move(other.path_)) {}

File& File::operator=(File&& other) noexcept {
  if (this != &other) {
    const hid_t old = std::exchange(id_, std::exchange(other.id_, H5I_INVALID_HID));
    path_ = std::move(other.path_);
    if (old >= 0) {
      const Guard guard(Mutex());
      Hid closing(old);
    }
  }
  return *this;
}

File::~File() {
  if (id_ < 0) return;
  const Guard guard(Mutex());
  Hid closing(id_);
}

void File::Close() {
  if (id_ < 0) return;
  const Guard guard(Mutex());
  Check(H5Fclose(std::exchange(id_, H5I_INVALID_HID)), fmt::format("{}: close failed", path_));
}

bool File::HasDataset(const std::string& name) const {
  const Guard guard(Mutex());
  const htri_t link = H5Lexists(id_, name.c_str(), H5P_DEFAULT);
  if (link <= 0) {
    H5Eclear2(H5E_DEFAULT);
    return false;
  }
  H5O_info_t info;
  if (H5Oget_info_by_name2(id_, name.c_str(), &info, H5O_INFO_BASIC, H5P_DEFAULT) < 0) {
    H5Eclear2(H5E_DEFAULT);
    return false;
  }
  return info.type == H5O_TYPE_DATASET;
}

ArrayInfo File::Describe(const std::string& name) const {
  const Guard guard(Mutex());
  const Hid dset = OpenDataset(id_, path_, name);
  const Hid type(Check(H5Dget_type(dset.get()), path_ + ": " + name + ": no type"));
  const Hid space(Check(H5Dget_space(dset.get()), path_ + ": " + name + ": no dataspace"));
  const Hid dcpl(Check(H5Dget_create_plist(dset.get()), path_ + ": " + name + ": no plist"));
  ArrayInfo info;
  info.type_name = TypeName(type.get());
  info.is_integer = H5Tget_class(type.get()) == H5T_INTEGER;
  info.element_size = static_cast<int>(H5Tget_size(type.get()));
  info.is_signed = info.is_integer && H5Tget_sign(type.get()) == H5T_SGN_2;
  info.little_endian = !info.is_integer || H5Tget_order(type.get()) == H5T_ORDER_LE;
  info.dims = Check(H5Sget_simple_extent_ndims(space.get()), path_ + ": " + name + ": extent");
  const hssize_t points = Check(H5Sget_simple_extent_npoints(space.get()), path_ + ": extent");
  info.length = static_cast<uint64_t>(points);
  info.contiguous = H5Pget_layout(dcpl.get()) == H5D_CONTIGUOUS && H5Pget_nfilters(dcpl.get()) == 0;
  if (info.contiguous) {
    const haddr_t offset = H5Dget_offset(dset.get());
    if (offset != HADDR_UNDEF) info.file_offset = offset;
    H5Eclear2(H5E_DEFAULT);
  }
  return info;
}

void File::ReadRaw(const std::string& name, uint64_t start, uint64_t count, void* out) const {
  if (count == 0) return;
  const Guard guard(Mutex());
  const Hid dset = OpenDataset(id_, path_, name);
  const Hid file_type(Check(H5Dget_type(dset.get()), path_ + ": " + name + ": no type"));
  const Hid mem_type(Check(H5Tget_native_type(file_type.get(), H5T_DIR_ASCEND),
                           path_ + ": " + name + ": no native type"));
  const Hid file_space(Check(H5Dget_space(dset.get()), path_ + ": " + name + ": no dataspace"));
  const hsize_t offset[1] = {start};
  const hsize_t extent[1] = {count};
  Check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, offset, nullptr, extent, nullptr),
        fmt::format("{}: {}[{}:{}] is out of range", path_, name, start, start + count));
  const Hid mem_space(Check(H5Screate_simple(1, extent, nullptr), "H5Screate_simple"));
  Check(H5Dread(dset.get(), mem_type.get(), mem_space.get(), file_space.get(), H5P_DEFAULT, out),
        fmt::format("{}: reading {}[{}:{}] failed", path_, name, start, start + count));
}

bool File::HasAttribute(const std::string& name) const {
  const Guard guard(Mutex());
  const htri_t exists = H5Aexists(id_, name.c_str());
  H5Eclear2(H5E_DEFAULT);
  return exists > 0;
}

int64_t File::ReadIntAttribute(const std::string& name) const {
  const Guard guard(Mutex());
  const Hid attr(Check(H5Aopen(id_, name.c_str(), H5P_DEFAULT),
                       fmt::format("{}: cannot open attribute {}", path_, name)));
  const Hid type(Check(H5Aget_type(attr.get()), path_ + ": attribute type"));
  const Hid space(Check(H5Aget_space(attr.get()), path_ + ": attribute space"));
  STOKER_CHECK(H5Tget_class(type.get()) == H5T_INTEGER, DataError,
               "{}: attribute {} is {}, not an integer", path_, name, TypeName(type.get()));
  const hssize_t points = H5Sget_simple_extent_npoints(space.get());
  STOKER_CHECK(points == 1, DataError, "{}: attribute {} holds {} integers, not one", path_, name,
               points);
  // Read unsigned 64-bit values as such: HDF5 would clip one above 2^63 - 1 to int64 silently.
  uint64_t value = 0;
  const bool is_unsigned = H5Tget_sign(type.get()) == H5T_SGN_NONE;
  Check(H5Aread(attr.get(), is_unsigned ? H5T_NATIVE_UINT64 : H5T_NATIVE_INT64, &value),
        fmt::format("{}: cannot read attribute {}", path_, name));
  constexpr auto kMax = static_cast<uint64_t>(std::numeric_limits<int64_t>::max());
  STOKER_CHECK(!is_unsigned || value <= kMax, DataError,
               "{}: attribute {} is {}, above 2^63 - 1, the largest integer stoker reads", path_,
               name, value);
  return static_cast<int64_t>(value);
}

std::string File::ReadStringAttribute(const std::string& name) const {
  const Guard guard(Mutex());
  const Hid attr(Check(H5Aopen(id_, name.c_str(), H5P_DEFAULT),
                       fmt::format("{}: cannot open attribute {}", path_, name)));
  const Hid type(Check(H5Aget_type(attr.get()), path_ + ": attribute type"));
  const Hid space(Check(H5Aget_space(attr.get()), path_ + ": attribute space"));
  STOKER_CHECK(H5Tget_class(type.get()) == H5T_STRING, DataError,
               "{}: attribute {} is {}, not a string", path_, name, TypeName(type.get()));
  // Reading an array of strings into room for one would overrun the buffer.
  const hssize_t points = H5Sget_simple_extent_npoints(space.get());
  STOKER_CHECK(points == 1, DataError, "{}: attribute {} holds {} strings, not one", path_, name,
               points);
  if (H5Tis_variable_str(type.get()) > 0) {
    // Variable-length, as h5py writes a str attribute (UTF-8). The memory type takes the file's
    // character set: HDF5 has no conversion between ASCII and UTF-8 strings.
    char* text = nullptr;
    const Hid mem(Check(H5Tcopy(H5T_C_S1), "H5Tcopy"));
    Check(H5Tset_size(mem.get(), H5T_VARIABLE), "H5Tset_size");
    Check(H5Tset_cset(mem.get(), H5Tget_cset(type.get())), "H5Tset_cset");
    Check(H5Aread(attr.get(), mem.get(), &text), path_ + ": cannot read attribute " + name);
    std::string value = text != nullptr ? text : "";
    H5free_memory(text);
    return value;
  }
  std::string value(H5Tget_size(type.get()), '\0');
  Check(H5Aread(attr.get(), type.get(), value.data()), path_ + ": cannot read attribute " + name);
  value.resize(value.find('\0') == std::string::npos ? value.size() : value.find('\0'));
  if (H5Tget_strpad(type.get()) == H5T_STR_SPACEPAD) {
    value.erase(value.find_last_not_of(' ') + 1);  // Fortran's padding is not part of the text
  }
  return value;
}

void File::WriteIntAttribute(const std::string& name, int64_t value) {
  const Guard guard(Mutex());
  const Hid space(Check(H5Screate(H5S_SCALAR), "H5Screate"));
  const Hid attr(
      Check(H5Acreate2(id_, name.c_str(), H5T_STD_I64LE, space.get(), H5P_DEFAULT, H5P_DEFAULT),
            fmt::format("{}: cannot create attribute {}", path_, name)));
  Check(H5Awrite(attr.get(), H5T_NATIVE_INT64, &value),
        fmt::format("{}: cannot write attribute {}", path_, name));
}

void File::WriteStringAttribute(const std::string& name, const std::string& value) {
  const Guard guard(Mutex());
  const Hid space(Check(H5Screate(H5S_SCALAR), "H5Screate"));
  const Hid type(Check(H5Tcopy(H5T_C_S1), "H5Tcopy"));
  Check(H5Tset_size(type.get(), std::max<size_t>(1, value.size())), "H5Tset_size");
  Check(H5Tset_strpad(type.get(), H5T_STR_NULLPAD), "H5Tset_strpad");
  const Hid attr(
      Check(H5Acreate2(id_, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT),
            fmt::format("{}: cannot create attribute {}", path_, name)));
  std::string padded = value;
  padded.resize(std::max<size_t>(1, value.size()), '\0');
  Check(H5Awrite(attr.get(), type.get(), padded.data()),
        fmt::format("{}: cannot write attribute {}", path_, name));
}

void File::CreateIntDataset(const std::string& name, IntType type, uint64_t length) {
  const Guard guard(Mutex());
  const hsize_t extent[1] = {length};
  const Hid space(Check(H5Screate_simple(1, extent, nullptr), "H5Screate_simple"));
  const Hid dcpl(Check(H5Pcreate(H5P_DATASET_CREATE), "H5Pcreate"));
  Check(H5Pset_layout(dcpl.get(), H5D_CONTIGUOUS), "H5Pset_layout");
  Check(H5Pset_obj_track_times(dcpl.get(), false), "H5Pset_obj_track_times");
  // Allocate at creation so that H5Dget_offset is defined even for an empty dataset's peers,
  // and never write fill values we are about to overwrite.
  Check(H5Pset_alloc_time(dcpl.get(), H5D_ALLOC_TIME_EARLY), "H5Pset_alloc_time");
  Check(H5Pset_fill_time(dcpl.get(), H5D_FILL_TIME_NEVER), "H5Pset_fill_time");
  const Hid dset(Check(H5Dcreate2(id_, name.c_str(), StoredIntType(type), space.get(), H5P_DEFAULT,
                                  dcpl.get(), H5P_DEFAULT),
                       fmt::format("{}: cannot create dataset {}", path_, name)));
}

void File::WriteRaw(const std::string& name, IntType type, uint64_t start, uint64_t count,
                    const void* values) {
  if (count == 0) return;
  const Guard guard(Mutex());
  const Hid dset = OpenDataset(id_, path_, name);
  const Hid file_space(Check(H5Dget_space(dset.get()), path_ + ": " + name + ": no dataspace"));
  const hsize_t offset[1] = {start};
  const hsize_t extent[1] = {count};
  Check(H5Sselect_hyperslab(file_space.get(), H5S_SELECT_SET, offset, nullptr, extent, nullptr),
        fmt::format("{}: {}[{}:{}] is out of range", path_, name, start, start + count));
  const Hid mem_space(Check(H5Screate_simple(1, extent, nullptr), "H5Screate_simple"));
  Check(H5Dwrite(dset.get(), NativeIntType(type), mem_space.get(), file_space.get(), H5P_DEFAULT,
                 values),
        fmt::format("{}: writing {}[{}:{}] failed", path_, name, start, start + count));
}

}  // namespace stoker::h5
