// Decoding encoded images (the ONNX ImageDecoder op): the format is found from the bytes' signature.
// BMP and PNM are decoded here; JPEG (libjpeg), PNG (libpng), TIFF (libtiff), WebP (libwebp) and
// JPEG 2000 (OpenJPEG) where the build found those libraries. Pixels come out 8 bits a channel, in
// rows of RGB, BGR or one gray channel, as Pillow gives them: 16-bit samples keep their high byte,
// alpha is dropped, palettes are expanded, and gray is ITU-R 601 luma of the RGB pixels
// ((19595 R + 38470 G + 7471 B + 2^15) >> 16).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "engine/core/status.h"

namespace ms::cpu::image {

enum class PixelFormat : uint8_t { RGB, BGR, Grayscale };

struct Image {
  int64_t height = 0, width = 0, channels = 0;
  std::vector<uint8_t> pixels;  // height x width x channels
  std::string format;           // "JPEG", "PNG", ...
};

// Images above this many pixels are refused before their pixels are allocated (2^28: 16384 x 16384).
inline constexpr int64_t kMaxPixels = int64_t{1} << 28;

// Decodes `data`. Errors name the format and what is wrong with the data ("PNG: IHDR: CRC error"),
// or list the formats this build decodes when the signature is none of them.
Expected<Image> decode(std::span<const uint8_t> data, PixelFormat format, int64_t max_pixels = kMaxPixels);

// The formats this build decodes, in signature order ("BMP, PNM, JPEG, PNG, ...").
std::string decoded_formats();

}  // namespace ms::cpu::image
