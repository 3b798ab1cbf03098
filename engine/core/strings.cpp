#include "engine/core/strings.h"

#include <mutex>
#include <unordered_set>

namespace ms {

namespace {
struct InternTable {
  std::mutex mu;
  std::unordered_set<std::string> texts;  // node-based: element addresses never move
};
InternTable& intern_table() {
  static InternTable* table = new InternTable();  // never destroyed: handles outlive static teardown
  return *table;
}
}  // namespace

StringHandle intern_string(std::string_view text) {
  InternTable& t = intern_table();
  std::lock_guard lock(t.mu);
  return &*t.texts.emplace(text).first;
}

Tensor string_tensor(const std::vector<std::string>& texts, Shape shape) {
  Tensor t = Tensor::empty(DType::String, std::move(shape));
  auto* h = t.data<StringHandle>();
  for (size_t i = 0; i < texts.size() && static_cast<int64_t>(i) < t.numel(); ++i) h[i] = intern_string(texts[i]);
  return t;
}

void fill_empty_strings(Tensor& t) {
  const StringHandle empty = intern_string("");
  auto* h = t.data<StringHandle>();
  for (int64_t i = 0; i < t.numel(); ++i) h[i] = empty;
}

}  // namespace ms
