// ImageDecoder: the codecs (engine/backends/cpu/image_decode.h) against the pixels Pillow decodes
// from the same files (tests/data/images, made by its make_images.py), against the pattern the
// lossless files hold, on hand-made BMP and PNM files, and on broken data; then the op's kernel.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>

#include "engine/backends/cpu/image_decode.h"
#include "tests/engine/kernel_harness.h"

namespace ms {
namespace {

using cpu::image::decode;
using cpu::image::PixelFormat;
using Bytes = std::vector<uint8_t>;

const std::string kDir = std::string(MODESCOPE_SOURCE_DIR) + "/tests/data/images/";

Bytes read_file(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  EXPECT_TRUE(f.good()) << path;
  return Bytes(std::istreambuf_iterator<char>(f), {});
}

// The format of a file name's extension as decoded_formats() names it.
std::string format_of(const std::string& file) {
  const std::string ext = file.substr(file.rfind('.') + 1);
  static const std::map<std::string, std::string> names = {{"png", "PNG"},  {"jpg", "JPEG"},  {"bmp", "BMP"},
                                                           {"tif", "TIFF"}, {"webp", "WebP"}, {"jp2", "JPEG 2000"},
                                                           {"ppm", "PNM"},  {"pgm", "PNM"}};
  return names.at(ext);
}

bool built(const std::string& format) {
  const std::string all = ", " + cpu::image::decoded_formats() + ",";
  return all.find(", " + format + ",") != std::string::npos;
}

// The pattern make_images.py draws: 32 x 24, (8x, 10y, 4(x + y)) mod 256.
Bytes pattern() {
  Bytes p;
  for (int y = 0; y < 24; ++y)
    for (int x = 0; x < 32; ++x) {
      p.push_back(static_cast<uint8_t>(x * 8 % 256));
      p.push_back(static_cast<uint8_t>(y * 10 % 256));
      p.push_back(static_cast<uint8_t>((x + y) * 4 % 256));
    }
  return p;
}

cpu::image::Image decoded(const Bytes& data, PixelFormat format = PixelFormat::RGB) {
  auto img = decode(data, format);
  EXPECT_TRUE(img.has_value()) << img.status().message();
  return img ? std::move(*img) : cpu::image::Image{};
}

std::string error_of(const Bytes& data, int64_t max_pixels = cpu::image::kMaxPixels) {
  auto img = decode(data, PixelFormat::RGB, max_pixels);
  return img ? std::string("(no error)") : img.status().message();
}

Bytes bytes(const std::string& s) { return Bytes(s.begin(), s.end()); }

TEST(ImageDecode, EveryFileDecodesAsPillowDecodesIt) {
  std::ifstream f(kDir + "expected.json");
  ASSERT_TRUE(f.good());
  const nlohmann::json manifest = nlohmann::json::parse(f);
  ASSERT_GE(manifest.size(), 17u);
  int checked = 0;
  for (const auto& e : manifest) {
    const std::string file = e["file"];
    SCOPED_TRACE(file);
    if (!built(format_of(file))) {
      EXPECT_NE(error_of(read_file(kDir + file)).find("this build has no"), std::string::npos);
      continue;
    }
    const Bytes data = read_file(kDir + file), want = read_file(kDir + std::string(e["pixels"]));
    const auto rgb = decoded(data);
    EXPECT_EQ(rgb.format, format_of(file));
    ASSERT_EQ(rgb.height, e["height"].get<int64_t>());
    ASSERT_EQ(rgb.width, e["width"].get<int64_t>());
    ASSERT_EQ(rgb.channels, 3);
    EXPECT_EQ(rgb.pixels, want);
    // BGR is RGB reversed; gray is ITU-R 601 luma of the RGB pixels, as Pillow's convert("L").
    const auto bgr = decoded(data, PixelFormat::BGR);
    const auto gray = decoded(data, PixelFormat::Grayscale);
    ASSERT_EQ(bgr.pixels.size(), want.size());
    ASSERT_EQ(gray.pixels.size(), want.size() / 3);
    EXPECT_EQ(gray.channels, 1);
    for (size_t i = 0; i < want.size() / 3; ++i) {
      EXPECT_EQ(bgr.pixels[3 * i], want[3 * i + 2]);
      EXPECT_EQ(bgr.pixels[3 * i + 2], want[3 * i]);
      EXPECT_EQ(gray.pixels[i],
                (want[3 * i] * 19595u + want[3 * i + 1] * 38470u + want[3 * i + 2] * 7471u + 0x8000u) >> 16);
    }
    ++checked;
  }
  EXPECT_GE(checked, 6);  // BMP and PNM are always built in
}

TEST(ImageDecode, LosslessFilesHoldThePattern) {
  for (const char* file :
       {"rgb.png", "rgba.png", "rgb.bmp", "rgb.tif", "lzw.tif", "lossless.webp", "rgb.jp2", "rgb.ppm"}) {
    SCOPED_TRACE(file);
    if (!built(format_of(file))) continue;
    EXPECT_EQ(decoded(read_file(kDir + file)).pixels, pattern());  // alpha dropped
  }
}

TEST(ImageDecode, PnmKinds) {
  // P1 and P4: 1 is black. P1's digits need no spaces between them.
  EXPECT_EQ(decoded(bytes("P1\n# a comment\n3 1\n101")).pixels, (Bytes{0, 0, 0, 255, 255, 255, 0, 0, 0}));
  EXPECT_EQ(decoded(bytes(std::string("P4 3 1\n") + char(0b01000000))).pixels,
            (Bytes{255, 255, 255, 0, 0, 0, 255, 255, 255}));
  // P2 with a maxval of 15 scales to 255 (rounded); values past maxval clamp.
  EXPECT_EQ(decoded(bytes("P2 3 1 15 0 7 99")).pixels, (Bytes{0, 0, 0, 119, 119, 119, 255, 255, 255}));
  EXPECT_EQ(decoded(bytes("P3 1 1 255 10 20 30")).pixels, (Bytes{10, 20, 30}));
  // 16-bit samples keep their high byte.
  std::string p6 = "P6 1 1 65535\n";
  for (int c : {0x12, 0x34, 0xab, 0xcd, 0xff, 0x01}) p6 += static_cast<char>(c);
  EXPECT_EQ(decoded(bytes(p6)).pixels, (Bytes{0x12, 0xab, 0xff}));
  EXPECT_EQ(decoded(bytes(std::string("P5 2 1 255\n") + char(9) + char(200)), PixelFormat::Grayscale).pixels,
            (Bytes{9, 200}));
}

// A BMP with a 40-byte info header; `pixels` from offset 54 (or after the masks/palette given).
Bytes bmp(int32_t width, int32_t height, uint16_t bpp, uint32_t compression, const Bytes& extra, const Bytes& pixels) {
  Bytes b(54, 0);
  auto put32 = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) b[at + static_cast<size_t>(i)] = static_cast<uint8_t>(v >> (8 * i));
  };
  b[0] = 'B', b[1] = 'M';
  put32(10, static_cast<uint32_t>(54 + extra.size()));
  put32(14, 40);
  put32(18, static_cast<uint32_t>(width));
  put32(22, static_cast<uint32_t>(height));
  b[26] = 1;
  b[28] = static_cast<uint8_t>(bpp);
  put32(30, compression);
  b.insert(b.end(), extra.begin(), extra.end());
  b.insert(b.end(), pixels.begin(), pixels.end());
  put32(2, static_cast<uint32_t>(b.size()));
  return b;
}

TEST(ImageDecode, BmpKinds) {
  // 32-bit bit fields (masks after the header), top-down (negative height): rows as stored.
  const Bytes masks = {0, 0, 0xff, 0, 0, 0xff, 0, 0, 0xff, 0, 0, 0};  // R 0x00ff0000, G 0x0000ff00, B 0x000000ff
  const Bytes px32 = {3, 2, 1, 0, 6, 5, 4, 0};                        // BGRX BGRX
  EXPECT_EQ(decoded(bmp(1, -2, 32, 3, masks, px32)).pixels, (Bytes{1, 2, 3, 4, 5, 6}));
  // Bottom-up (positive height): the last stored row is the top one.
  EXPECT_EQ(decoded(bmp(1, 2, 32, 3, masks, px32)).pixels, (Bytes{4, 5, 6, 1, 2, 3}));
  // 16-bit 5-5-5 (no masks): 5-bit fields scale by 255/31, floored.
  const Bytes px16 = {0xe0, 0x7f, 0, 0};  // 0x7fe0: R 31, G 31, B 0; rows pad to 4 bytes
  EXPECT_EQ(decoded(bmp(1, 1, 16, 0, {}, px16)).pixels, (Bytes{255, 255, 0}));
  // 1-bit with a two-colour palette (BGRX entries).
  const Bytes palette = {10, 20, 30, 0, 40, 50, 60, 0};
  EXPECT_EQ(decoded(bmp(3, 1, 1, 0, palette, {0b10100000, 0, 0, 0})).pixels,
            (Bytes{60, 50, 40, 30, 20, 10, 60, 50, 40}));
}

TEST(ImageDecode, BrokenDataGetsOneLineNamingTheFormat) {
  const std::string garbage = error_of({1, 2, 3, 4, 5});
  EXPECT_NE(garbage.find("is not an image in a format this build decodes (BMP, PNM"), std::string::npos) << garbage;
  EXPECT_NE(garbage.find("01 02 03 04 05"), std::string::npos) << garbage;
  EXPECT_NE(error_of({}).find("0 bytes"), std::string::npos);
  // Each file cut short, and each with its middle overwritten: an error that names the format, or
  // (where the damage misses what the decoder reads) an image; never a crash.
  for (const char* file : {"rgb.png", "rgb.jpg", "progressive.jpg", "rgb.bmp", "rgb.tif", "lossy.webp", "rgb.jp2",
                           "rgb.ppm", "palette.bmp"}) {
    SCOPED_TRACE(file);
    const Bytes data = read_file(kDir + file);
    const std::string format = format_of(file);
    for (size_t keep : {size_t{4}, size_t{20}, data.size() / 2, data.size() - 1}) {
      const std::string e = error_of(Bytes(data.begin(), data.begin() + static_cast<std::ptrdiff_t>(keep)));
      if (e == "(no error)") continue;  // a decoder may pad a short last scan (libjpeg does)
      // Four bytes can be less than the signature (PNG's is 8): then it is no image at all.
      if (keep > 4 || e.find("is not an image") == std::string::npos) {
        EXPECT_EQ(e.rfind(format + ": ", 0), 0u) << keep << " bytes: " << e;
      }
      EXPECT_EQ(e.find('\n'), std::string::npos) << e;
    }
    Bytes damaged = data;
    for (size_t i = damaged.size() / 4; i < damaged.size() * 3 / 4; ++i) damaged[i] = static_cast<uint8_t>(i * 37);
    const std::string e = error_of(damaged);
    if (e != "(no error)") {
      EXPECT_EQ(e.rfind(format + ": ", 0), 0u) << e;
    }
  }
}

TEST(ImageDecode, OversizedImagesAreRefusedBeforeTheirPixels) {
  EXPECT_NE(
      error_of(read_file(kDir + "rgb.bmp"), 100).find("BMP: image of 32 x 24 pixels is larger than the limit of 100"),
      std::string::npos);
  if (built("PNG")) {
    EXPECT_NE(error_of(read_file(kDir + "rgb.png"), 100).find("PNG: image of 32 x 24 pixels is larger"),
              std::string::npos);
  }
  if (built("JPEG")) {
    EXPECT_NE(error_of(read_file(kDir + "rgb.jpg"), 100).find("JPEG: image of 32 x 24"), std::string::npos);
  }
  // A header claiming 2^30 x 2^30 pixels over 60 bytes of data.
  EXPECT_NE(error_of(bmp(1 << 30, 1 << 30, 24, 0, {}, Bytes(6, 0))).find("larger than the limit"), std::string::npos);
  EXPECT_NE(error_of(bytes("P6 100000 100000 255\nxyz")).find("larger than the limit"), std::string::npos);
  // Within the limit but longer than the data.
  EXPECT_NE(error_of(bytes("P6 100 100 255\nxyz")).find("PNM: raster of 100 rows"), std::string::npos);
  EXPECT_NE(error_of(bytes("P6 100")).find("PNM: header of P6 ends before its sizes"), std::string::npos);
  EXPECT_NE(error_of(bmp(4, 4, 7, 0, {}, {})).find("BMP: bit count 7"), std::string::npos);
}

// --- the op --------------------------------------------------------------------------------------------

Tensor u8_tensor(const Bytes& b) {
  Tensor t = Tensor::zeros(DType::U8, Shape{static_cast<int64_t>(b.size())});
  std::memcpy(t.raw(), b.data(), b.size());
  return t;
}

Expected<std::vector<Tensor>> run_decoder(const Tensor& data, std::map<std::string, ir::Attribute> attrs) {
  const ir::Node node = test::make_node("ImageDecoder", 1, 1, std::move(attrs));
  return test::run_kernel(node, {data}, 20);
}

TEST(ImageDecoderOp, DecodesIntoHeightWidthChannels) {
  const Tensor data = u8_tensor(read_file(kDir + "rgb.bmp"));
  auto bgr = run_decoder(data, {{"pixel_format", std::string("BGR")}});
  ASSERT_TRUE(bgr.has_value()) << bgr.status().message();
  ASSERT_EQ((*bgr)[0].shape(), (Shape{24, 32, 3}));
  const Bytes want = pattern();
  const auto* p = (*bgr)[0].data<uint8_t>();
  EXPECT_EQ(p[0], want[2]);
  EXPECT_EQ(p[3 * 37 + 2], want[3 * 37]);
  auto gray = run_decoder(data, {{"pixel_format", std::string("Grayscale")}});
  ASSERT_TRUE(gray.has_value());
  EXPECT_EQ((*gray)[0].shape(), (Shape{24, 32, 1}));
  auto rgb = run_decoder(data, {});  // RGB by default
  ASSERT_TRUE(rgb.has_value());
  EXPECT_EQ(Bytes((*rgb)[0].data<uint8_t>(), (*rgb)[0].data<uint8_t>() + want.size()), want);
}

TEST(ImageDecoderOp, ErrorsNameTheNode) {
  const Tensor data = u8_tensor(read_file(kDir + "rgb.bmp"));
  auto bad_format = run_decoder(data, {{"pixel_format", std::string("YUV")}});
  ASSERT_FALSE(bad_format.has_value());
  EXPECT_NE(bad_format.status().message().find("'pixel_format' = 'YUV'"), std::string::npos)
      << bad_format.status().message();
  auto garbage = run_decoder(u8_tensor({9, 9, 9}), {});
  ASSERT_FALSE(garbage.has_value());
  EXPECT_NE(garbage.status().message().find("ImageDecoder"), std::string::npos) << garbage.status().message();
  EXPECT_NE(garbage.status().message().find("is not an image"), std::string::npos) << garbage.status().message();
}

}  // namespace
}  // namespace ms
