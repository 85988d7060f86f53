#include "loader/batch_bytes.h"

#include "base/bytes.h"
#include "base/check.h"

namespace stoker {

namespace {

constexpr uint32_t kBatchTag = 0x5354424b;  // "KBTS": the start of an encoded Batch

}  // namespace

std::string EncodeBatch(const Batch& batch) {
  ByteWriter out;
  out.Reserve(batch.tokens.size() * sizeof(int64_t) + batch.pieces.size() * 48 + 1024);
  out.Put<uint32_t>(kBatchTag);
  out.Put<uint64_t>(batch.step);
  out.Put<uint64_t>(batch.rows);
  out.Put<uint64_t>(batch.row_tokens);
  out.PutArray(batch.tokens);
  out.PutArray(batch.dataset_tokens);
  out.Put<uint64_t>(batch.pieces.size());
  for (const DocPiece& p : batch.pieces) {
    out.Put(p.dataset);
    out.Put(p.doc);
    out.Put(p.epoch);
    out.Put(p.first);
    out.Put(p.count);
    out.Put(p.row);
    out.Put(p.row_offset);
  }
  const Boundaries& b = batch.boundaries;
  out.PutArray(b.position_ids);
  out.PutArray(b.cu_seqlens);
  out.Put(b.max_seqlen);
  out.PutArray(b.segment_ids);
  out.PutArray(b.loss_mask);
  out.PutArray(batch.inputs);
  out.PutArray(batch.labels);
  return out.Take();
}

Batch DecodeBatch(std::string_view bytes) {
  ByteReader in(bytes);
  STOKER_ASSERT(in.Get<uint32_t>() == kBatchTag, "not an encoded batch");
  Batch batch;
  batch.step = in.Get<uint64_t>();
  batch.rows = in.Get<uint64_t>();
  batch.row_tokens = in.Get<uint64_t>();
  batch.tokens = in.GetArray<int64_t>();
  batch.dataset_tokens = in.GetArray<uint64_t>();
  batch.pieces.resize(in.Get<uint64_t>());
  for (DocPiece& p : batch.pieces) {
    p.dataset = in.Get<uint32_t>();
    p.doc = in.Get<uint64_t>();
    p.epoch = in.Get<uint64_t>();
    p.first = in.Get<uint64_t>();
    p.count = in.Get<uint64_t>();
    p.row = in.Get<uint32_t>();
    p.row_offset = in.Get<uint32_t>();
  }
  Boundaries& b = batch.boundaries;
  b.position_ids = in.GetArray<int64_t>();
  b.cu_seqlens = in.GetArray<int32_t>();
  b.max_seqlen = in.Get<int32_t>();
  b.segment_ids = in.GetArray<int32_t>();
  b.loss_mask = in.GetArray<float>();
  batch.inputs = in.GetArray<int64_t>();
  batch.labels = in.GetArray<int64_t>();
  STOKER_ASSERT(in.done(), "an encoded batch has bytes beyond its end");
  return batch;
}

}  // namespace stoker
