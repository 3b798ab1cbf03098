#include "engine/core/status.h"

namespace ms {
const char* error_code_name(ErrorCode code) {
  switch (code) {
    case ErrorCode::Ok: return "ok";
    case ErrorCode::InvalidArgument: return "invalid argument";
    case ErrorCode::InvalidModel: return "invalid model";
    case ErrorCode::Unsupported: return "unsupported";
    case ErrorCode::NotFound: return "not found";
    case ErrorCode::OutOfMemory: return "out of memory";
    case ErrorCode::Cancelled: return "cancelled";
    case ErrorCode::Io: return "i/o error";
    case ErrorCode::Internal: return "internal error";
  }
  return "error";
}
}  // namespace ms
