// The app's compiled graphs kept between runs, the way a JIT keeps them: a Graph-mode run of the
// open model with the same options (device, threads, jit level, disabled passes, precision, the
// loaded plugins) reuses the graph compiled for its inputs' shape bucket (compiler/buckets.h); a new
// bucket compiles and joins the others. Each entry owns the backend it compiled for (its executors
// refer to it) and counts compiles and cache hits across runs. Another model (set_model) drops every
// entry; at most `max_graphs` compiled graphs are kept in all, the least recently used entry going
// first. Pass Effect reserves room for its measurement beside that (reserve: the baseline and one
// graph per pass left out), up to kMaxGraphs in all, so measuring again compiles nothing and the
// Run panel's graphs stay; the room lasts until another model. Thread-safe: a run takes its entry out (take) and hands
// it back (give_back), so two runs never share an executor or a backend; a run that finds its entry taken compiles one
// of its own. Qt-free.
#pragma once

#include <cstdint>
#include <list>
#include <memory>
#include <mutex>
#include <string>

#include "app/session/run_loop.h"
#include "engine/compiler/buckets.h"
#include "engine/ir/graph.h"
#include "engine/runtime/backend.h"

namespace ms::session {

class CompileCache {
 public:
  // Declared in destruction order reversed: the executors go first, then the backend and the graph
  // they refer to.
  struct Entry {
    std::string key;                         // the run's options (mode_run.h: compile_key)
    std::shared_ptr<const ir::Graph> graph;  // the model the executors compiled
    std::unique_ptr<runtime::Backend> backend;
    std::string note;  // why the backend differs from the one asked for
    std::unique_ptr<compiler::BucketedExecutor> executor;
    int64_t cache_hits = 0;             // iterations, across runs, that found their graph compiled
    RunCallbacks* callbacks = nullptr;  // the run holding the entry: its compiles' cancel check
  };

  // The most compiled graphs a cache keeps, reserve() included: memory stays bounded however many
  // passes a measurement leaves out.
  static constexpr size_t kMaxGraphs = 40;

  explicit CompileCache(size_t max_graphs = 8);
  ~CompileCache();
  CompileCache(const CompileCache&) = delete;
  CompileCache& operator=(const CompileCache&) = delete;

  // The model whose graphs are kept; another one (or null, when the model closes) frees them all.
  void set_model(std::shared_ptr<const ir::Graph> graph);
  // The kept model, when it is `g` itself (null otherwise: runs of `g` are not cached).
  std::shared_ptr<const ir::Graph> model_of(const ir::Graph& g) const;

  // The entry of `key`, taken out until give_back (null: none kept, or another run holds it).
  std::unique_ptr<Entry> take(const std::string& key);
  // Keeps `e` as the most recently used, unless its model is no longer the kept one. An entry of the
  // same key handed back meanwhile is replaced; the least recently used go while more than
  // max_graphs compiled graphs are kept (the newest entry stays).
  void give_back(std::unique_ptr<Entry> e);

  // Room for `graphs` compiled graphs more than max_graphs for the kept model (never less than
  // reserved before, at most kMaxGraphs in all, or max_graphs where that is more); another model
  // (set_model) takes the room back.
  void reserve(size_t graphs);
  size_t max_graphs() const;
  size_t entries() const;
  size_t graphs() const;  // compiled graphs kept, all entries together
  void clear();

 private:
  size_t graphs_locked() const;

  const size_t max_graphs_;
  size_t limit_;  // max_graphs_ and the room reserved for the kept model
  mutable std::mutex mu_;
  std::shared_ptr<const ir::Graph> model_;
  std::list<std::unique_ptr<Entry>> entries_;  // most recently used first
};

}  // namespace ms::session
