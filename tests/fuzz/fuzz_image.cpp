// Fuzz target: the ImageDecoder op's codecs (BMP, PNM and the JPEG, PNG, TIFF, WebP and JPEG 2000
// libraries where built) on any bytes. The pixel limit is lowered to 2^22 so a header's claimed size
// cannot make each input allocate hundreds of MiB; refusals past it take the same path as the default.
#include <cstddef>
#include <cstdint>
#include <span>

#include "engine/backends/cpu/image_decode.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using ms::cpu::image::PixelFormat;
  const PixelFormat format = size % 3 == 0   ? PixelFormat::RGB
                             : size % 3 == 1 ? PixelFormat::BGR
                                             : PixelFormat::Grayscale;
  (void)ms::cpu::image::decode(std::span<const uint8_t>(data, size), format, int64_t{1} << 22);
  return 0;
}
