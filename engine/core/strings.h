// String tensors: each element is a handle to an interned, immutable std::string (one per distinct
// text for the life of the process). A string tensor's bytes are handles, so every kernel that only
// moves elements (Identity, Reshape, Concat, Gather, Transpose, Slice, ...) copies them as 8-byte
// elements, and two elements are equal exactly when their handles are.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "engine/core/tensor.h"

namespace ms {

using StringHandle = const std::string*;
static_assert(sizeof(StringHandle) == 8, "string elements are 8-byte handles (dtype_size(String))");

// The handle of `text` (interned on first use; thread-safe).
StringHandle intern_string(std::string_view text);
// A string tensor of these texts (row-major).
Tensor string_tensor(const std::vector<std::string>& texts, Shape shape);
// Sets every element of a string tensor to "" (fresh string tensors start so).
void fill_empty_strings(Tensor& t);
// Element i's text.
inline const std::string& string_at(const Tensor& t, int64_t i) { return *t.data<StringHandle>()[i]; }

}  // namespace ms
