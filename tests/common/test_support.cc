#include "common/test_support.h"

#include <hdf5.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <limits>
#include <numeric>
#include <stdexcept>

#include "order/random.h"
#include "shard/shard_reader.h"
#include "tokens/content_checksum.h"
#include "tokens/token_type.h"

namespace stoker::testing {

namespace fs = std::filesystem;

namespace {

std::string MakeTempFolder() {
  const char* base = std::getenv("TMPDIR");
  std::string templ = std::string(base != nullptr ? base : "/tmp") + "/stoker-test-XXXXXX";
  if (::mkdtemp(templ.data()) == nullptr) throw std::runtime_error("mkdtemp failed");
  return templ;
}

hid_t TypeFor(const std::string& name) {
  if (name == "uint8") return H5T_STD_U8LE;
  if (name == "int8") return H5T_STD_I8LE;
  if (name == "uint16") return H5T_STD_U16LE;
  if (name == "int16") return H5T_STD_I16LE;
  if (name == "uint32") return H5T_STD_U32LE;
  if (name == "int32") return H5T_STD_I32LE;
  if (name == "uint64") return H5T_STD_U64LE;
  if (name == "int64") return H5T_STD_I64LE;
  if (name == "uint16be") return H5T_STD_U16BE;
  if (name == "float32") return H5T_IEEE_F32LE;
  if (name == "float64") return H5T_IEEE_F64LE;
  throw std::invalid_argument("no HDF5 type for " + name);
}

void Require(bool ok, const std::string& what) {
  if (!ok) throw std::runtime_error("WriteRawShard: " + what);
}

void WriteArray(hid_t file, const char* name, const RawArray& array) {
  std::vector<hsize_t> dims(array.dims.begin(), array.dims.end());
  if (dims.empty()) dims.push_back(array.values.size());
  const hid_t space = H5Screate_simple(static_cast<int>(dims.size()), dims.data(), nullptr);
  const hid_t dcpl = H5Pcreate(H5P_DATASET_CREATE);
  if (array.chunked) {
    std::vector<hsize_t> chunk(dims.size(), 1);
    chunk.back() = std::max<hsize_t>(1, std::min<hsize_t>(dims.back(), 1 << 18));
    H5Pset_chunk(dcpl, static_cast<int>(chunk.size()), chunk.data());
  }
  const hid_t dset =
      H5Dcreate2(file, name, TypeFor(array.type), space, H5P_DEFAULT, dcpl, H5P_DEFAULT);
  Require(dset >= 0, std::string("create ") + name);
  if (!array.values.empty()) {
    const hid_t memory_type = array.unsigned_values ? H5T_NATIVE_UINT64 : H5T_NATIVE_INT64;
    Require(H5Dwrite(dset, memory_type, H5S_ALL, H5S_ALL, H5P_DEFAULT, array.values.data()) >= 0,
            std::string("write ") + name);
  }
  H5Dclose(dset);
  H5Pclose(dcpl);
  H5Sclose(space);
}

// A scalar attribute of `type` holding `*value` (given in `memory_type`).
void WriteScalarAttribute(hid_t file, const std::string& name, hid_t type, hid_t memory_type,
                          const void* value) {
  const hid_t space = H5Screate(H5S_SCALAR);
  const hid_t attr = H5Acreate2(file, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT);
  Require(attr >= 0 && H5Awrite(attr, memory_type, value) >= 0, "attribute " + name);
  H5Aclose(attr);
  H5Sclose(space);
}

}  // namespace

TempDir::TempDir() : path_(MakeTempFolder()) {}

TempDir::~TempDir() {
  std::error_code ec;
  fs::remove_all(path_, ec);
}

SharedTempDir::SharedTempDir(MPI_Comm comm) : comm_(comm) {
  int rank = 0;
  MPI_Comm_rank(comm_, &rank);
  char buffer[4096] = {};
  if (rank == 0) path_ = MakeTempFolder();
  path_.copy(buffer, sizeof(buffer) - 1);
  MPI_Bcast(buffer, sizeof(buffer), MPI_CHAR, 0, comm_);
  path_ = buffer;
}

SharedTempDir::~SharedTempDir() {
  MPI_Barrier(comm_);
  int rank = 0;
  MPI_Comm_rank(comm_, &rank);
  if (rank == 0) {
    std::error_code ec;
    fs::remove_all(path_, ec);
  }
}

std::vector<int64_t> OffsetsFor(const std::vector<uint64_t>& lengths) {
  std::vector<int64_t> offsets = {0};
  for (uint64_t n : lengths) offsets.push_back(offsets.back() + static_cast<int64_t>(n));
  return offsets;
}

RawShard ShardOfLengths(const std::vector<uint64_t>& lengths, const std::string& type) {
  RawShard shard;
  shard.doc_offsets = RawArray{.type = "uint64", .values = OffsetsFor(lengths)};
  std::vector<int64_t> tokens(shard.doc_offsets->values.back());
  std::iota(tokens.begin(), tokens.end(), 1);
  shard.tokens = RawArray{.type = type, .values = tokens};
  return shard;
}

void WriteTestShard(const std::string& path, const std::vector<std::vector<uint64_t>>& docs,
                    TokenType type, const ShardAttributes& attributes) {
  std::vector<uint64_t> offsets = {0};
  std::vector<uint64_t> tokens;
  for (const auto& doc : docs) {
    tokens.insert(tokens.end(), doc.begin(), doc.end());
    offsets.push_back(tokens.size());
  }
  WriteShard(path, type, offsets, tokens, attributes);
}

void WriteRawShard(const std::string& path, const RawShard& shard) {
  fs::create_directories(fs::path(path).parent_path());
  const hid_t file = H5Fcreate(path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, H5P_DEFAULT);
  Require(file >= 0, "create " + path);
  if (shard.tokens) WriteArray(file, "tokens", *shard.tokens);
  if (shard.doc_offsets) WriteArray(file, "doc_offsets", *shard.doc_offsets);
  for (const auto& [name, value] : shard.int_attributes) {
    WriteScalarAttribute(file, name, H5T_STD_I64LE, H5T_NATIVE_INT64, &value);
  }
  for (const auto& [name, value] : shard.uint64_attributes) {
    WriteScalarAttribute(file, name, H5T_STD_U64LE, H5T_NATIVE_UINT64, &value);
  }
  for (const auto& [name, value] : shard.float_attributes) {
    WriteScalarAttribute(file, name, H5T_IEEE_F64LE, H5T_NATIVE_DOUBLE, &value);
  }
  for (const auto& [name, value] : shard.string_attributes) {
    const hid_t space = H5Screate(H5S_SCALAR);
    const hid_t type = H5Tcopy(H5T_C_S1);
    H5Tset_size(type, std::max<size_t>(1, value.size()));
    const hid_t attr = H5Acreate2(file, name.c_str(), type, space, H5P_DEFAULT, H5P_DEFAULT);
    H5Awrite(attr, type, value.c_str());
    H5Aclose(attr);
    H5Tclose(type);
    H5Sclose(space);
  }
  Require(H5Fclose(file) >= 0, "close " + path);
}

}  // namespace stoker::testing

namespace stoker::testing {

std::vector<uint64_t> Flatten(const Docs& docs, std::vector<uint64_t>* offsets) {
  std::vector<uint64_t> tokens;
  offsets->assign(1, 0);
  for (const auto& doc : docs) {
    tokens.insert(tokens.end(), doc.begin(), doc.end());
    offsets->push_back(tokens.size());
  }
  return tokens;
}

uint64_t ChecksumOf(const Docs& docs, TokenType type) {
  std::vector<uint64_t> offsets;
  const std::vector<uint64_t> tokens = Flatten(docs, &offsets);
  ContentChecksum checksum;
  checksum.AddOffsets(offsets);
  checksum.AddTokens(std::vector<int64_t>(tokens.begin(), tokens.end()), type);
  return checksum.Value();
}

uint64_t MaxTokenId(TokenType type) {
  const int bits = 8 * TokenTypeSize(type) - (TokenTypeSigned(type) ? 1 : 0);
  return bits == 64 ? std::numeric_limits<int64_t>::max() : (uint64_t{1} << bits) - 1;
}

Docs MakeDocs(TokenType type, uint64_t key, int n_docs) {
  CounterRng rng(key);
  const uint64_t max_id = MaxTokenId(type);
  Docs docs(n_docs);
  for (int d = 0; d < n_docs; ++d) {
    const uint64_t length = d % 5 == 3 ? 0 : rng.NextBelow(300);
    for (uint64_t i = 0; i < length; ++i) {
      docs[d].push_back(i % 7 == 0 ? max_id - i % 3 : rng.NextBelow(max_id));
    }
  }
  docs[0] = {0, max_id, 1};
  return docs;
}

Docs ReadShardDocs(const std::string& root, const ShardInfo& shard) {
  ShardReader reader(root, shard);
  std::vector<uint64_t> offsets(shard.docs + 1);
  reader.ReadOffsets(0, offsets.size(), offsets.data());
  std::vector<int64_t> tokens(shard.tokens);
  std::vector<char> scratch;
  reader.ReadTokens(0, shard.tokens, tokens.data(), &scratch);
  Docs docs;
  for (uint64_t d = 0; d < shard.docs; ++d) {
    docs.emplace_back(tokens.begin() + offsets[d], tokens.begin() + offsets[d + 1]);
  }
  return docs;
}

void WriteText(const std::string& path, const std::string& text) {
  const fs::path parent = fs::path(path).parent_path();
  if (!parent.empty()) fs::create_directories(parent);
  std::ofstream out(path, std::ios::binary);
  out << text;
  if (!out) throw std::runtime_error("WriteText: cannot write " + path);
}

std::string ReadFileBytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void ExpectMentions(const std::string& message, const std::string& part) {
  EXPECT_NE(message.find(part), std::string::npos) << "'" << part << "' is not in: " << message;
}

void OnRankZero(const mpi::Comm& comm, const std::function<void()>& make) {
  mpi::FailTogether(comm, [&] {
    if (comm.rank() == 0) make();
  });
}

}  // namespace stoker::testing
