// Recorder storage, shared by the hot path (recorder.cpp) and post-processing (build.cpp).
#pragma once

#include <memory>
#include <vector>

#include "profiler/record/recorder.h"

namespace ms::prof {

struct Recorder::Chunk {
  Chunk(size_t events, size_t text_bytes)
      : records(new Record[events]), text(new char[text_bytes]), capacity(events), text_capacity(text_bytes) {}
  std::unique_ptr<Record[]> records;
  std::unique_ptr<char[]> text;
  size_t capacity;
  size_t text_capacity;
  size_t size = 0;
  size_t text_used = 0;
};

struct Recorder::ThreadBuffer {
  uint32_t thread = 0;                         // process-wide ordinal of the thread (1 = first seen)
  std::vector<std::unique_ptr<Chunk>> chunks;  // filled ones, then the current one, then spares
  size_t current = 0;
};

}  // namespace ms::prof
