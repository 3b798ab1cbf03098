// Graph mode for inputs with symbolic dims (a dynamic batch or sequence axis): one compile per shape
// bucket instead of one per exact shape. A run's size n of a symbolic dim falls in the bucket whose
// bound is the next power of two >= n (1, 2, 4, ... , so lengths 1..512 make at most 10 compiles).
// The bucket's graph is compiled with the dims symbolic (-1, named): shape computations stay in the
// graph, kernels take the run's actual dims (the work is never padded up to the bound), and the
// values whose shape depends on them get arena blocks planned for the bound (CompileOptions::
// dim_bounds). Compiled buckets are kept in a cache of bounded size, least recently used evicted.
// A graph without symbolic dims, or one asked for exact shapes, compiles once per exact signature.
#pragma once

#include <cstdint>
#include <list>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "engine/compiler/compile.h"

namespace ms::compiler {

// The symbolic dims of a graph's inputs: per input, per axis, the dim's name ("" for a fixed dim).
// An unnamed dynamic dim (-1 without a dim_param) is named "<input>:<axis>".
std::map<std::string, std::vector<std::string>> symbolic_dims(const ir::Graph& g);

// The bound of the bucket a size falls in: the next power of two >= n (n <= 1: 1).
int64_t bucket_bound(int64_t n);

struct BucketKey {
  Signature signature;                        // the dims symbolic where the graph's are
  std::map<std::string, int64_t> dim_bounds;  // each symbolic dim's bound
  std::string text;                           // "seq<=64" (exact: the input shapes)
};

// The bucket of `inputs` for `g`: symbolic dims at their bucket's bound (one dim name shared by
// several inputs takes the largest of their sizes). With `exact`, or without symbolic dims, the key is
// the exact signature. Errors name an input that is missing or whose rank is not the graph's.
Expected<BucketKey> bucket_of(const ir::Graph& g, const runtime::TensorMap& inputs, bool exact = false);

struct BucketStats {
  int64_t compiles = 0;    // compiled graphs made
  int64_t cache_hits = 0;  // runs that found their bucket compiled
  int64_t evictions = 0;   // compiled buckets dropped for room
  double compile_ms = 0;   // all compiles together
};

// Compiles on demand and runs: the executor of each bucket, cached.
class BucketedExecutor {
 public:
  // `graph` and `backend` must outlive the executor. `capacity`: compiled buckets kept (>= 1).
  BucketedExecutor(const ir::Graph& graph, runtime::Backend& backend, CompileOptions options, size_t capacity = 16,
                   bool exact = false);

  // The executor of the inputs' bucket, compiled when new (`compiled` tells which).
  Expected<CompiledExecutor*> executor_for(const runtime::TensorMap& inputs, bool* compiled = nullptr);
  Expected<std::vector<Tensor>> run(const runtime::TensorMap& inputs, const runtime::RunOptions& options = {});

  const BucketStats& stats() const { return stats_; }
  size_t capacity() const { return capacity_; }
  std::vector<std::string> buckets() const;  // cached buckets' keys, most recently used first
  const std::string& last_bucket() const { return last_; }
  // The most recently used bucket's executor (null before the first).
  const CompiledExecutor* most_recent() const { return entries_.empty() ? nullptr : entries_.front().executor.get(); }

 private:
  struct Entry {
    std::string key;
    std::unique_ptr<CompiledExecutor> executor;
  };
  const ir::Graph& graph_;
  runtime::Backend& backend_;
  CompileOptions options_;
  size_t capacity_;
  bool exact_;
  std::list<Entry> entries_;  // most recently used first
  BucketStats stats_;
  std::string last_;
};

}  // namespace ms::compiler
