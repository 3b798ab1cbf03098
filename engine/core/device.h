#pragma once

#include <cstdint>
#include <string>

namespace ms {

enum class DeviceType : uint8_t { CPU, CUDA };

struct Device {
  DeviceType type = DeviceType::CPU;
  int index = 0;
  bool operator==(const Device&) const = default;
  bool is_cpu() const { return type == DeviceType::CPU; }
  std::string to_string() const { return type == DeviceType::CPU ? "cpu" : "cuda:" + std::to_string(index); }
};

}  // namespace ms
