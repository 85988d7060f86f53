// The h5 layer: IsHdf5 answers yes or no only when it could look (an unreadable file is an
// IoError, not a "no"); attributes of the wrong type are DataErrors naming the file, the
// attribute and what it holds; and every HDF5 call is serialized inside the layer, so threads
// may read and write through it at once (the loader reads on its own thread).
#include "h5/h5.h"

#include <gtest/gtest.h>

#include <atomic>
#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "common/test_support.h"
#include "shard/discovery.h"
#include "shard/shard_reader.h"
#include "shard/shard_writer.h"
#include "stoker/error.h"

namespace stoker {
namespace {

using testing::ExpectMentions;
using testing::RawArray;
using testing::RawShard;
using testing::TempDir;
using testing::WriteRawShard;

class H5Test : public ::testing::Test {
 protected:
  TempDir dir_;
};

TEST_F(H5Test, IsHdf5AnswersOnlyWhenItCouldLook) {
  testing::WriteTestShard(dir_ / "good.h5", {{1, 2}});
  testing::WriteText(dir_ / "text.h5", "not HDF5 at all\n");
  testing::WriteText(dir_ / "empty.h5", "");
  EXPECT_TRUE(h5::IsHdf5(dir_ / "good.h5"));
  EXPECT_FALSE(h5::IsHdf5(dir_ / "text.h5"));
  EXPECT_FALSE(h5::IsHdf5(dir_ / "empty.h5"));
  try {
    h5::IsHdf5(dir_ / "missing.h5");
    ADD_FAILURE() << "a missing file was answered";
  } catch (const IoError& e) {
    ExpectMentions(e.what(), dir_ / "missing.h5");
    ExpectMentions(e.what(), "No such file");
  }
}

TEST_F(H5Test, AttributesOfTheWrongTypeAreDataErrors) {
  RawShard raw;
  raw.int_attributes["count"] = -3;
  raw.uint64_attributes["big"] = uint64_t{1} << 63;
  raw.uint64_attributes["fits"] = 12345;
  raw.float_attributes["ratio"] = 0.5;
  raw.string_attributes["name"] = "bpe";
  WriteRawShard(dir_ / "attrs.h5", raw);
  const h5::File file = h5::File::OpenReadOnly(dir_ / "attrs.h5");
  EXPECT_EQ(file.ReadIntAttribute("count"), -3);
  EXPECT_EQ(file.ReadIntAttribute("fits"), 12345);
  EXPECT_EQ(file.ReadStringAttribute("name"), "bpe");
  const auto expect_data_error = [&](const auto& read, const std::vector<std::string>& words) {
    try {
      read();
      ADD_FAILURE() << "no DataError; expected: " << words.front();
    } catch (const DataError& e) {
      ExpectMentions(e.what(), dir_ / "attrs.h5");
      for (const auto& word : words) ExpectMentions(e.what(), word);
    }
  };
  expect_data_error([&] { file.ReadIntAttribute("ratio"); }, {"ratio", "float64, not an integer"});
  expect_data_error([&] { file.ReadIntAttribute("name"); }, {"name", "string, not an integer"});
  expect_data_error([&] { file.ReadIntAttribute("big"); },
                    {"big", "9223372036854775808", "above 2^63 - 1"});
  expect_data_error([&] { file.ReadStringAttribute("count"); }, {"count", "int64, not a string"});
  // A missing attribute is not a type mismatch: HDF5 cannot open it.
  EXPECT_THROW(file.ReadIntAttribute("absent"), Hdf5Error);
}

// Shards only HDF5 can read (chunked), read by several threads at once while another writes new
// shards: without one lock for all HDF5 calls this corrupts HDF5's state or crashes.
TEST_F(H5Test, ThreadsMayUseTheLayerAtOnce) {
  constexpr int kReaders = 4, kRounds = 40;
  std::vector<int64_t> tokens(5000);
  for (size_t i = 0; i < tokens.size(); ++i) tokens[i] = static_cast<int64_t>(i % 1000);
  RawShard raw;
  raw.tokens = RawArray{.type = "uint16", .values = tokens, .chunked = true};
  raw.doc_offsets = RawArray{.type = "uint64", .values = {0, 1000, 5000}, .chunked = true};
  WriteRawShard(dir_ / "web/chunked.h5", raw);
  const ShardCheck check = DescribeShard(dir_.path(), "web/chunked.h5", 0);
  ASSERT_TRUE(check.info.has_value());
  ASSERT_FALSE(check.arrays.tokens.direct);

  std::atomic<int> wrong = 0;
  std::vector<std::thread> threads;
  for (int t = 0; t < kReaders; ++t) {
    threads.emplace_back([&] {
      for (int round = 0; round < kRounds; ++round) {
        try {
          ShardReader reader(dir_.path(), *check.info);
          std::vector<int64_t> got(tokens.size());
          std::vector<char> scratch;
          reader.ReadTokens(0, tokens.size(), got.data(), &scratch);
          if (got != tokens) ++wrong;
        } catch (const std::exception&) {
          ++wrong;
        }
      }
    });
  }
  threads.emplace_back([&] {
    const std::vector<uint64_t> offsets = {0, 3}, ids = {7, 8, 9};
    for (int round = 0; round < kRounds; ++round) {
      try {
        WriteShard(dir_ / ("written/" + std::to_string(round) + ".h5"), TokenType::kUint16, offsets,
                   ids, {.vocab_size = 10, .tokenizer = "t"});
      } catch (const std::exception&) {
        ++wrong;
      }
    }
  });
  for (auto& thread : threads) thread.join();
  EXPECT_EQ(wrong.load(), 0);
  for (int round = 0; round < kRounds; ++round) {
    const ShardCheck written =
        DescribeShard(dir_.path(), "written/" + std::to_string(round) + ".h5", 0);
    EXPECT_TRUE(written.problems.empty()) << written.problems.front().ToString();
  }
}

}  // namespace
}  // namespace stoker
