// Image decoding for ImageDecoder (image_decode.h). Each decoder writes 8-bit RGB rows; the pixel
// format is made from those at the end. The libraries' decoders report errors through callbacks:
// libjpeg's and libpng's jump back (setjmp/longjmp) to the decoder's entry, whose frame holds only
// trivially destructible state besides the output vector, which outlives the jump.
#include "engine/backends/cpu/image_decode.h"

#include <algorithm>
#include <bit>
#include <csetjmp>
#include <cstdio>
#include <cstring>

#if MODESCOPE_HAVE_JPEG
#include <jerror.h>
#include <jpeglib.h>
#endif
#if MODESCOPE_HAVE_PNG
#include <png.h>
#endif
#if MODESCOPE_HAVE_TIFF
#include <tiffio.h>
#endif
#if MODESCOPE_HAVE_WEBP
#include <webp/decode.h>
#endif
#if MODESCOPE_HAVE_OPENJPEG
#include <openjpeg.h>
#endif

namespace ms::cpu::image {
namespace {

using Bytes = std::span<const uint8_t>;

struct Rgb {
  int64_t height = 0, width = 0;
  std::vector<uint8_t> px;  // height x width x 3
};

Status bad(const std::string& format, const std::string& what) { return invalid_argument(format + ": " + what); }

// Refuses empty and oversized images before their pixels are allocated.
Status check_size(const char* format, int64_t width, int64_t height, int64_t max_pixels) {
  if (width <= 0 || height <= 0)
    return bad(format, "image has no pixels (" + std::to_string(width) + " x " + std::to_string(height) + ")");
  if (width > max_pixels / height)
    return bad(format, "image of " + std::to_string(width) + " x " + std::to_string(height) +
                           " pixels is larger than the limit of " + std::to_string(max_pixels) + " pixels");
  return Status::ok();
}

Status allocate(Rgb& out, const char* format, int64_t width, int64_t height, int64_t max_pixels) {
  MS_RETURN_IF_ERROR(check_size(format, width, height, max_pixels));
  out.width = width;
  out.height = height;
  out.px.assign(static_cast<size_t>(width * height * 3), 0);
  return Status::ok();
}

uint32_t le16(Bytes b, size_t at) { return b[at] | (uint32_t{b[at + 1]} << 8); }
uint32_t le32(Bytes b, size_t at) { return le16(b, at) | (le16(b, at + 2) << 16); }

// --- BMP ---------------------------------------------------------------------------------------------

// One channel of a bit-field pixel, scaled to 8 bits (Pillow's scaling: floor for fields under 8
// bits, the high byte for wider ones).
uint8_t field(uint32_t px, uint32_t mask) {
  if (mask == 0) return 0;
  const int shift = std::countr_zero(mask);
  const int bits = std::popcount(mask >> shift);
  const uint32_t v = (px & mask) >> shift;
  if (bits >= 8) return static_cast<uint8_t>(v >> (bits - 8));
  return static_cast<uint8_t>(v * 255 / ((uint32_t{1} << bits) - 1));
}

Status decode_bmp(Bytes b, Rgb& out, int64_t max_pixels) {
  const char* F = "BMP";
  if (b.size() < 26) return bad(F, "file of " + std::to_string(b.size()) + " bytes is shorter than its headers");
  const uint32_t offset = le32(b, 10), dib = le32(b, 14);
  int64_t width = 0, height = 0;
  uint32_t bpp = 0, compression = 0, colors = 0;
  if (dib == 12) {
    width = static_cast<int16_t>(le16(b, 18));
    height = static_cast<int16_t>(le16(b, 20));
    bpp = le16(b, 24);
  } else if (dib >= 40 && dib <= 124) {
    if (b.size() < 14 + size_t{dib}) return bad(F, "file ends inside its " + std::to_string(dib) + "-byte info header");
    width = static_cast<int32_t>(le32(b, 18));
    height = static_cast<int32_t>(le32(b, 22));
    bpp = le16(b, 28);
    compression = le32(b, 30);
    colors = le32(b, 46);
  } else {
    return bad(F, "info header of " + std::to_string(dib) + " bytes is not one of 12, 40 to 124");
  }
  const bool top_down = height < 0;
  height = std::abs(height);
  if (compression != 0 && compression != 3 && compression != 6)
    return bad(F, "compression " + std::to_string(compression) + " is not supported (uncompressed and bit fields are)");
  if (bpp != 1 && bpp != 4 && bpp != 8 && bpp != 16 && bpp != 24 && bpp != 32)
    return bad(F, "bit count " + std::to_string(bpp) + " is not one of 1, 4, 8, 16, 24, 32");
  if (compression != 0 && bpp != 16 && bpp != 32)
    return bad(F, "bit fields with a bit count of " + std::to_string(bpp) + " (only 16 or 32)");
  uint32_t masks[3] = {0x00ff0000u, 0x0000ff00u, 0x000000ffu};
  if (bpp == 16) masks[0] = 0x7c00u, masks[1] = 0x03e0u, masks[2] = 0x001fu;
  size_t palette_at = 14 + size_t{dib};
  if (compression != 0) {
    // In a 40-byte header the masks follow it; V2 and later headers hold them.
    if (b.size() < 66) return bad(F, "file ends before its bit-field masks");
    for (int i = 0; i < 3; ++i) masks[i] = le32(b, 54 + 4 * static_cast<size_t>(i));
    if (dib == 40) palette_at += compression == 6 ? 16 : 12;
  }
  MS_RETURN_IF_ERROR(check_size(F, width, height, max_pixels));
  std::vector<uint8_t> palette;  // RGB triples
  if (bpp <= 8) {
    const uint32_t n = colors == 0 || colors > (1u << bpp) ? (1u << bpp) : colors;
    const size_t entry = dib == 12 ? 3 : 4;
    if (palette_at + n * entry > b.size())
      return bad(F, "file ends inside its palette of " + std::to_string(n) + " colours");
    palette.assign(size_t{3} << bpp, 0);
    for (uint32_t i = 0; i < n; ++i) {
      const size_t at = palette_at + i * entry;
      palette[3 * i] = b[at + 2];
      palette[3 * i + 1] = b[at + 1];
      palette[3 * i + 2] = b[at];
    }
  }
  const auto stride = static_cast<size_t>((width * bpp + 31) / 32 * 4);
  if (offset > b.size() || (b.size() - offset) / stride < static_cast<size_t>(height))
    return bad(F, "pixel data of " + std::to_string(height) + " rows of " + std::to_string(stride) +
                      " bytes does not fit in the file's " + std::to_string(b.size()) + " bytes from offset " +
                      std::to_string(offset));
  MS_RETURN_IF_ERROR(allocate(out, F, width, height, max_pixels));
  for (int64_t y = 0; y < height; ++y) {
    const uint8_t* row = b.data() + offset + static_cast<size_t>(top_down ? y : height - 1 - y) * stride;
    uint8_t* o = out.px.data() + static_cast<size_t>(y * width * 3);
    for (int64_t x = 0; x < width; ++x, o += 3) {
      if (bpp <= 8) {
        const int64_t bit = x * bpp;
        const uint32_t idx = (row[bit / 8] >> (8 - bpp - bit % 8)) & ((1u << bpp) - 1);
        std::memcpy(o, palette.data() + 3 * idx, 3);
      } else if (bpp == 24) {
        o[0] = row[3 * x + 2], o[1] = row[3 * x + 1], o[2] = row[3 * x];
      } else {
        const uint32_t px = bpp == 16 ? le16(Bytes(row, stride), static_cast<size_t>(2 * x))
                                      : le32(Bytes(row, stride), static_cast<size_t>(4 * x));
        for (int c = 0; c < 3; ++c) o[c] = field(px, masks[c]);
      }
    }
  }
  return Status::ok();
}

// --- PNM (P1-P6) -------------------------------------------------------------------------------------

struct PnmReader {
  Bytes b;
  size_t at = 2;
  void skip_space() {
    while (at < b.size()) {
      if (b[at] == '#') {
        while (at < b.size() && b[at] != '\n' && b[at] != '\r') ++at;
      } else if (b[at] == ' ' || b[at] == '\t' || b[at] == '\n' || b[at] == '\r' || b[at] == '\v' || b[at] == '\f') {
        ++at;
      } else {
        return;
      }
    }
  }
  // A decimal number; -1 where there is none or it passes 2^31.
  int64_t number() {
    skip_space();
    int64_t v = -1;
    while (at < b.size() && b[at] >= '0' && b[at] <= '9') {
      v = (v < 0 ? 0 : v) * 10 + (b[at++] - '0');
      if (v > int64_t{1} << 31) return -1;
    }
    return v;
  }
};

Status decode_pnm(Bytes b, Rgb& out, int64_t max_pixels) {
  const char* F = "PNM";
  const int kind = b[1] - '0';
  PnmReader r{b};
  const int64_t width = r.number(), height = r.number();
  const int64_t maxval = kind == 1 || kind == 4 ? 1 : r.number();
  if (width < 0 || height < 0 || maxval < 0)
    return bad(F, "header of P" + std::to_string(kind) + " ends before its sizes");
  if (maxval < 1 || maxval > 65535) return bad(F, "maximum value " + std::to_string(maxval) + " is not in 1 to 65535");
  MS_RETURN_IF_ERROR(check_size(F, width, height, max_pixels));
  const int samples = kind == 3 || kind == 6 ? 3 : 1;
  const bool binary = kind >= 4;
  if (binary) {
    if (r.at >= b.size()) return bad(F, "file ends after its header");
    ++r.at;  // the single whitespace byte before the raster
    const size_t row_bytes = kind == 4 ? static_cast<size_t>((width + 7) / 8)
                                       : static_cast<size_t>(width * samples * (maxval > 255 ? 2 : 1));
    if ((b.size() - r.at) / row_bytes < static_cast<size_t>(height))
      return bad(F, "raster of " + std::to_string(height) + " rows of " + std::to_string(row_bytes) +
                        " bytes is longer than the " + std::to_string(b.size() - r.at) + " bytes left");
  }
  MS_RETURN_IF_ERROR(allocate(out, F, width, height, max_pixels));
  auto scale = [maxval](int64_t v) -> uint8_t {
    v = std::min(v, maxval);
    if (maxval == 255) return static_cast<uint8_t>(v);
    if (maxval == 65535) return static_cast<uint8_t>(v >> 8);
    return static_cast<uint8_t>((v * 255 + maxval / 2) / maxval);
  };
  const size_t n = static_cast<size_t>(width * height);
  for (size_t i = 0; i < n; ++i) {
    uint8_t* o = out.px.data() + 3 * i;
    const auto y = static_cast<int64_t>(i) / width, x = static_cast<int64_t>(i) % width;
    if (kind == 4) {
      const uint8_t byte = b[r.at + static_cast<size_t>(y * ((width + 7) / 8) + x / 8)];
      o[0] = o[1] = o[2] = (byte >> (7 - x % 8)) & 1 ? 0 : 255;
      continue;
    }
    if (kind == 1) {
      r.skip_space();
      if (r.at >= b.size() || (b[r.at] != '0' && b[r.at] != '1'))
        return bad(F, "P1 raster ends or breaks at pixel " + std::to_string(i) + " of " + std::to_string(n));
      o[0] = o[1] = o[2] = b[r.at++] == '1' ? 0 : 255;
      continue;
    }
    for (int c = 0; c < samples; ++c) {
      int64_t v = 0;
      if (binary) {
        const size_t at = r.at + (i * static_cast<size_t>(samples) + static_cast<size_t>(c)) * (maxval > 255 ? 2 : 1);
        v = maxval > 255 ? (int64_t{b[at]} << 8) | b[at + 1] : b[at];
      } else {
        v = r.number();
        if (v < 0)
          return bad(F, "P" + std::to_string(kind) + " raster ends or breaks at pixel " + std::to_string(i) + " of " +
                            std::to_string(n));
      }
      o[c] = scale(v);
    }
    if (samples == 1) o[1] = o[2] = o[0];
  }
  return Status::ok();
}

// --- JPEG (libjpeg) ----------------------------------------------------------------------------------

#if MODESCOPE_HAVE_JPEG
struct JpegError {
  jpeg_error_mgr mgr;
  jmp_buf jump;
  char message[JMSG_LENGTH_MAX];
};

[[noreturn]] void jpeg_fail(j_common_ptr cinfo) {
  auto* e = reinterpret_cast<JpegError*>(cinfo->err);
  e->mgr.format_message(cinfo, e->message);
  std::longjmp(e->jump, 1);
}
void jpeg_quiet(j_common_ptr, int) {}

// A progressive JPEG can ask for thousands of scans, each a pass over the whole image: refused past
// 500, as libjpeg-turbo's own TurboJPEG API does.
void jpeg_scan_limit(j_common_ptr cinfo) {
  const auto* d = reinterpret_cast<j_decompress_ptr>(cinfo);
  if (d->is_decompressor && d->input_scan_number > 500) {
    auto* e = reinterpret_cast<JpegError*>(cinfo->err);
    std::snprintf(e->message, sizeof e->message, "more than 500 scans");
    std::longjmp(e->jump, 1);
  }
}

uint8_t muldiv255(uint32_t a, uint32_t b) {
  const uint32_t t = a * b + 128;
  return static_cast<uint8_t>((t + (t >> 8)) >> 8);
}

// `row` belongs to the caller: nothing with a destructor lives in this frame across the jump.
Status decode_jpeg_rows(Bytes b, Rgb& out, int64_t max_pixels, std::vector<JSAMPLE>& row) {
  jpeg_decompress_struct cinfo;
  JpegError err{};
  jpeg_progress_mgr progress{};
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_fail;
  err.mgr.emit_message = jpeg_quiet;
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return bad("JPEG", err.message);
  }
  jpeg_create_decompress(&cinfo);
  progress.progress_monitor = jpeg_scan_limit;
  cinfo.progress = &progress;
  cinfo.mem->max_memory_to_use = 1L << 30;
  jpeg_mem_src(&cinfo, b.data(), static_cast<unsigned long>(b.size()));
  jpeg_read_header(&cinfo, TRUE);
  const bool cmyk = cinfo.jpeg_color_space == JCS_CMYK || cinfo.jpeg_color_space == JCS_YCCK;
  const bool gray = cinfo.jpeg_color_space == JCS_GRAYSCALE;
  cinfo.out_color_space = cmyk ? JCS_CMYK : gray ? JCS_GRAYSCALE : JCS_RGB;
  {
    Status size = check_size("JPEG", cinfo.image_width, cinfo.image_height, max_pixels);
    if (!size.is_ok()) {
      jpeg_destroy_decompress(&cinfo);
      return size;
    }
  }
  jpeg_start_decompress(&cinfo);
  out.width = cinfo.output_width;
  out.height = cinfo.output_height;
  out.px.assign(static_cast<size_t>(out.width * out.height * 3), 0);
  const auto comps = static_cast<size_t>(cinfo.output_components);
  row.resize(static_cast<size_t>(out.width) * comps);
  // Adobe's CMYK JPEGs store inverted values (Pillow's "CMYK;I"); R = (255 - C)(255 - K) / 255.
  const bool inverted = cinfo.saw_Adobe_marker;
  while (cinfo.output_scanline < cinfo.output_height) {
    const auto y = static_cast<size_t>(cinfo.output_scanline);
    JSAMPROW rows[1] = {row.data()};
    jpeg_read_scanlines(&cinfo, rows, 1);
    uint8_t* o = out.px.data() + y * static_cast<size_t>(out.width) * 3;
    for (size_t x = 0; x < static_cast<size_t>(out.width); ++x, o += 3) {
      const JSAMPLE* p = row.data() + x * comps;
      if (gray) {
        o[0] = o[1] = o[2] = p[0];
      } else if (cmyk) {
        const uint32_t k = inverted ? p[3] : 255u - p[3];
        for (int c = 0; c < 3; ++c) o[c] = muldiv255(inverted ? p[c] : 255u - p[c], k);
      } else {
        o[0] = p[0], o[1] = p[1], o[2] = p[2];
      }
    }
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return Status::ok();
}

Status decode_jpeg(Bytes b, Rgb& out, int64_t max_pixels) {
  std::vector<JSAMPLE> row;
  return decode_jpeg_rows(b, out, max_pixels, row);
}
#endif

// --- PNG (libpng) ------------------------------------------------------------------------------------

#if MODESCOPE_HAVE_PNG
struct PngSource {
  Bytes b;
  size_t at = 0;
  char message[256] = "";
};

void png_read_bytes(png_structp png, png_bytep dst, png_size_t n) {
  auto* s = static_cast<PngSource*>(png_get_io_ptr(png));
  if (n > s->b.size() - s->at) png_error(png, "file ends early");
  std::memcpy(dst, s->b.data() + s->at, n);
  s->at += n;
}
[[noreturn]] void png_fail(png_structp png, png_const_charp msg) {
  auto* s = static_cast<PngSource*>(png_get_error_ptr(png));
  std::snprintf(s->message, sizeof s->message, "%s", msg);
  png_longjmp(png, 1);
}
void png_quiet(png_structp, png_const_charp) {}

// `rows` belongs to the caller: nothing with a destructor lives in this frame across the jump.
Status decode_png_rows(Bytes b, Rgb& out, int64_t max_pixels, std::vector<png_bytep>& rows) {
  PngSource src{b};
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &src, png_fail, png_quiet);
  if (!png) return bad("PNG", "cannot start the decoder");
  png_infop info = png_create_info_struct(png);
  if (!info) {
    png_destroy_read_struct(&png, nullptr, nullptr);
    return bad("PNG", "cannot start the decoder");
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return bad("PNG", src.message);
  }
  png_set_read_fn(png, &src, png_read_bytes);
  png_set_user_limits(png, 1u << 24, 1u << 24);
  png_set_chunk_malloc_max(png, 64u << 20);
  png_read_info(png, info);
  const png_uint_32 width = png_get_image_width(png, info), height = png_get_image_height(png, info);
  {
    Status size = check_size("PNG", width, height, max_pixels);
    if (!size.is_ok()) {
      png_destroy_read_struct(&png, &info, nullptr);
      return size;
    }
  }
  png_set_expand(png);    // palette to RGB, gray under 8 bits to 8, tRNS to alpha
  png_set_strip_16(png);  // the high byte, as Pillow
  png_set_strip_alpha(png);
  png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  if (png_get_rowbytes(png, info) != static_cast<size_t>(width) * 3)
    png_error(png, "unexpected row size after expansion");
  out.width = width;
  out.height = height;
  out.px.assign(static_cast<size_t>(out.width * out.height * 3), 0);
  rows.resize(height);
  for (png_uint_32 y = 0; y < height; ++y) rows[y] = out.px.data() + static_cast<size_t>(y) * width * 3;
  png_read_image(png, rows.data());
  png_destroy_read_struct(&png, &info, nullptr);
  return Status::ok();
}

Status decode_png(Bytes b, Rgb& out, int64_t max_pixels) {
  std::vector<png_bytep> rows;
  return decode_png_rows(b, out, max_pixels, rows);
}
#endif

// --- TIFF (libtiff) ----------------------------------------------------------------------------------

#if MODESCOPE_HAVE_TIFF
struct TiffSource {
  Bytes b;
  toff_t at = 0;
  std::string message;
};

tsize_t tiff_read(thandle_t h, tdata_t dst, tsize_t n) {
  auto* s = static_cast<TiffSource*>(h);
  if (n < 0 || s->at >= s->b.size()) return 0;
  const auto k = static_cast<tsize_t>(std::min<size_t>(static_cast<size_t>(n), s->b.size() - s->at));
  std::memcpy(dst, s->b.data() + s->at, static_cast<size_t>(k));
  s->at += static_cast<toff_t>(k);
  return k;
}
tsize_t tiff_write(thandle_t, tdata_t, tsize_t) { return 0; }
toff_t tiff_seek(thandle_t h, toff_t off, int whence) {
  auto* s = static_cast<TiffSource*>(h);
  const toff_t base = whence == SEEK_CUR ? s->at : whence == SEEK_END ? s->b.size() : 0;
  s->at = base + off;
  return s->at;
}
int tiff_close(thandle_t) { return 0; }
toff_t tiff_size(thandle_t h) { return static_cast<TiffSource*>(h)->b.size(); }
int tiff_map(thandle_t, tdata_t*, toff_t*) { return 0; }
void tiff_unmap(thandle_t, tdata_t, toff_t) {}

int tiff_error(TIFF*, void* user, const char* module, const char* fmt, va_list ap) {
  auto* s = static_cast<TiffSource*>(user);
  if (s->message.empty()) {
    char buf[256];
    std::vsnprintf(buf, sizeof buf, fmt, ap);
    s->message = std::string(module ? module : "") + (module ? ": " : "") + buf;
  }
  return 1;
}
int tiff_warning(TIFF*, void*, const char*, const char*, va_list) { return 1; }

Status decode_tiff(Bytes b, Rgb& out, int64_t max_pixels) {
  TiffSource src{b, 0, {}};
  TIFFOpenOptions* opts = TIFFOpenOptionsAlloc();
  TIFFOpenOptionsSetErrorHandlerExtR(opts, tiff_error, &src);
  TIFFOpenOptionsSetWarningHandlerExtR(opts, tiff_warning, &src);
  TIFFOpenOptionsSetMaxSingleMemAlloc(opts, 1 << 30);
  TIFF* tif = TIFFClientOpenExt("image", "rm", &src, tiff_read, tiff_write, tiff_seek, tiff_close, tiff_size, tiff_map,
                                tiff_unmap, opts);
  TIFFOpenOptionsFree(opts);
  auto failed = [&](const std::string& what) {
    if (tif) TIFFClose(tif);
    return bad("TIFF", src.message.empty() ? what : src.message);
  };
  if (!tif) return failed("not a readable TIFF file");
  uint32_t width = 0, height = 0;
  TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &width);
  TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &height);
  if (const Status s = check_size("TIFF", width, height, max_pixels); !s.is_ok()) {
    TIFFClose(tif);
    return s;
  }
  char emsg[1024] = "";
  if (!TIFFRGBAImageOK(tif, emsg)) return failed(emsg);
  std::vector<uint32_t> raster(static_cast<size_t>(width) * height);
  if (!TIFFReadRGBAImageOriented(tif, width, height, raster.data(), ORIENTATION_TOPLEFT, 0))
    return failed("cannot read the image's pixels");
  TIFFClose(tif);
  out.width = width;
  out.height = height;
  out.px.resize(raster.size() * 3);
  for (size_t i = 0; i < raster.size(); ++i) {
    out.px[3 * i] = static_cast<uint8_t>(TIFFGetR(raster[i]));
    out.px[3 * i + 1] = static_cast<uint8_t>(TIFFGetG(raster[i]));
    out.px[3 * i + 2] = static_cast<uint8_t>(TIFFGetB(raster[i]));
  }
  return Status::ok();
}
#endif

// --- WebP (libwebp) ----------------------------------------------------------------------------------

#if MODESCOPE_HAVE_WEBP
Status decode_webp(Bytes b, Rgb& out, int64_t max_pixels) {
  int width = 0, height = 0;
  if (!WebPGetInfo(b.data(), b.size(), &width, &height)) return bad("WebP", "not a valid WebP bitstream");
  MS_RETURN_IF_ERROR(allocate(out, "WebP", width, height, max_pixels));
  if (!WebPDecodeRGBInto(b.data(), b.size(), out.px.data(), out.px.size(), width * 3))
    return bad("WebP", "cannot decode the bitstream (" + std::to_string(width) + " x " + std::to_string(height) + ")");
  return Status::ok();
}
#endif

// --- JPEG 2000 (OpenJPEG) ----------------------------------------------------------------------------

#if MODESCOPE_HAVE_OPENJPEG
struct J2kSource {
  Bytes b;
  size_t at = 0;
  std::string message;
};

OPJ_SIZE_T j2k_read(void* dst, OPJ_SIZE_T n, void* user) {
  auto* s = static_cast<J2kSource*>(user);
  if (s->at >= s->b.size()) return static_cast<OPJ_SIZE_T>(-1);
  const size_t k = std::min(n, s->b.size() - s->at);
  std::memcpy(dst, s->b.data() + s->at, k);
  s->at += k;
  return k;
}
OPJ_OFF_T j2k_skip(OPJ_OFF_T n, void* user) {
  auto* s = static_cast<J2kSource*>(user);
  if (n < 0 || static_cast<uint64_t>(n) > s->b.size() - std::min(s->at, s->b.size())) return -1;
  s->at += static_cast<size_t>(n);
  return n;
}
OPJ_BOOL j2k_seek(OPJ_OFF_T to, void* user) {
  auto* s = static_cast<J2kSource*>(user);
  if (to < 0 || static_cast<uint64_t>(to) > s->b.size()) return OPJ_FALSE;
  s->at = static_cast<size_t>(to);
  return OPJ_TRUE;
}
void j2k_error(const char* msg, void* user) {
  auto* s = static_cast<J2kSource*>(user);
  if (s->message.empty()) {
    s->message = msg;
    while (!s->message.empty() && (s->message.back() == '\n' || s->message.back() == ' ')) s->message.pop_back();
  }
}
void j2k_quiet(const char*, void*) {}

Status decode_j2k(Bytes b, Rgb& out, int64_t max_pixels, bool jp2) {
  const char* F = "JPEG 2000";
  J2kSource src{b, 0, {}};
  opj_stream_t* stream = opj_stream_create(1 << 16, OPJ_TRUE);
  opj_stream_set_user_data(stream, &src, nullptr);
  opj_stream_set_user_data_length(stream, b.size());
  opj_stream_set_read_function(stream, j2k_read);
  opj_stream_set_skip_function(stream, j2k_skip);
  opj_stream_set_seek_function(stream, j2k_seek);
  opj_codec_t* codec = opj_create_decompress(jp2 ? OPJ_CODEC_JP2 : OPJ_CODEC_J2K);
  opj_set_error_handler(codec, j2k_error, &src);
  opj_set_warning_handler(codec, j2k_quiet, &src);
  opj_set_info_handler(codec, j2k_quiet, &src);
  opj_image_t* img = nullptr;
  auto done = [&](Status s) {
    if (img) opj_image_destroy(img);
    opj_destroy_codec(codec);
    opj_stream_destroy(stream);
    return s;
  };
  auto failed = [&](const std::string& what) { return done(bad(F, src.message.empty() ? what : src.message)); };
  opj_dparameters_t params;
  opj_set_default_decoder_parameters(&params);
  if (!opj_setup_decoder(codec, &params)) return failed("cannot start the decoder");
  if (!opj_read_header(stream, codec, &img) || !img) return failed("cannot read the header");
  const int64_t width = int64_t{img->x1} - img->x0, height = int64_t{img->y1} - img->y0;
  if (Status s = check_size(F, width, height, max_pixels); !s.is_ok()) return done(std::move(s));
  if (!opj_decode(codec, stream, img) || !opj_end_decompress(codec, stream)) return failed("cannot decode the image");
  const OPJ_UINT32 nc = img->numcomps;
  if (nc == 0 || !img->comps) return failed("image has no components");
  const OPJ_UINT32 used = nc >= 3 ? 3 : 1;
  for (OPJ_UINT32 c = 0; c < used; ++c) {
    const opj_image_comp_t& k = img->comps[c];
    if (!k.data || k.w != static_cast<OPJ_UINT32>(width) || k.h != static_cast<OPJ_UINT32>(height) || k.dx != 1 ||
        k.dy != 1)
      return failed("component " + std::to_string(c) + " is subsampled (" + std::to_string(k.w) + " x " +
                    std::to_string(k.h) + " of " + std::to_string(width) + " x " + std::to_string(height) +
                    "); only full-size components are supported");
    if (k.prec < 1 || k.prec > 31)
      return failed("component " + std::to_string(c) + " has " + std::to_string(k.prec) + " bits");
  }
  if (img->color_space == OPJ_CLRSPC_SYCC || img->color_space == OPJ_CLRSPC_EYCC || img->color_space == OPJ_CLRSPC_CMYK)
    return failed("colour space " + std::to_string(static_cast<int>(img->color_space)) +
                  " is not supported (RGB and gray are)");
  if (Status s = allocate(out, F, width, height, max_pixels); !s.is_ok()) return done(std::move(s));
  for (OPJ_UINT32 c = 0; c < 3; ++c) {
    const opj_image_comp_t& k = img->comps[used == 3 ? c : 0];
    const int64_t offset = k.sgnd ? int64_t{1} << (k.prec - 1) : 0;
    const int64_t top = (int64_t{1} << k.prec) - 1;
    for (size_t i = 0; i < static_cast<size_t>(width * height); ++i) {
      const int64_t v = std::clamp<int64_t>(int64_t{k.data[i]} + offset, 0, top);
      out.px[3 * i + c] = static_cast<uint8_t>(k.prec >= 8 ? v >> (k.prec - 8) : v * 255 / top);
    }
  }
  return done(Status::ok());
}
#endif

bool starts_with(Bytes b, std::initializer_list<uint8_t> sig) {
  return b.size() >= sig.size() && std::equal(sig.begin(), sig.end(), b.begin());
}

std::string hex_head(Bytes b) {
  std::string s;
  char buf[4];
  for (size_t i = 0; i < std::min<size_t>(b.size(), 8); ++i) {
    std::snprintf(buf, sizeof buf, "%s%02x", i ? " " : "", b[i]);
    s += buf;
  }
  return s.empty() ? "none" : s;
}

[[maybe_unused]] Status not_built(const char* format, const char* library) {
  return unsupported(std::string(format) + ": this build has no " + format + " decoder (it was built without " +
                     library + ")");
}

Status decode_rgb(Bytes b, Rgb& out, int64_t max_pixels, std::string& format) {
  if (starts_with(b, {'B', 'M'})) {
    format = "BMP";
    return decode_bmp(b, out, max_pixels);
  }
  if (b.size() >= 3 && b[0] == 'P' && b[1] >= '1' && b[1] <= '6' &&
      (b[2] == ' ' || b[2] == '\t' || b[2] == '\n' || b[2] == '\r' || b[2] == '#')) {
    format = "PNM";
    return decode_pnm(b, out, max_pixels);
  }
  if (starts_with(b, {0xff, 0xd8, 0xff})) {
    format = "JPEG";
#if MODESCOPE_HAVE_JPEG
    return decode_jpeg(b, out, max_pixels);
#else
    return not_built("JPEG", "libjpeg");
#endif
  }
  if (starts_with(b, {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'})) {
    format = "PNG";
#if MODESCOPE_HAVE_PNG
    return decode_png(b, out, max_pixels);
#else
    return not_built("PNG", "libpng");
#endif
  }
  if (starts_with(b, {'I', 'I', 42, 0}) || starts_with(b, {'M', 'M', 0, 42})) {
    format = "TIFF";
#if MODESCOPE_HAVE_TIFF
    return decode_tiff(b, out, max_pixels);
#else
    return not_built("TIFF", "libtiff");
#endif
  }
  if (b.size() >= 12 && starts_with(b, {'R', 'I', 'F', 'F'}) && std::memcmp(b.data() + 8, "WEBP", 4) == 0) {
    format = "WebP";
#if MODESCOPE_HAVE_WEBP
    return decode_webp(b, out, max_pixels);
#else
    return not_built("WebP", "libwebp");
#endif
  }
  const bool jp2 = starts_with(b, {0, 0, 0, 12, 'j', 'P', ' ', ' ', '\r', '\n', 0x87, '\n'});
  if (jp2 || starts_with(b, {0xff, 0x4f, 0xff, 0x51})) {
    format = "JPEG 2000";
#if MODESCOPE_HAVE_OPENJPEG
    return decode_j2k(b, out, max_pixels, jp2);
#else
    return not_built("JPEG 2000", "OpenJPEG");
#endif
  }
  return invalid_argument("data (" + std::to_string(b.size()) + " bytes, starting " + hex_head(b) +
                          ") is not an image in a format this build decodes (" + decoded_formats() + ")");
}

}  // namespace

std::string decoded_formats() {
  std::string s = "BMP, PNM";
#if MODESCOPE_HAVE_JPEG
  s += ", JPEG";
#endif
#if MODESCOPE_HAVE_PNG
  s += ", PNG";
#endif
#if MODESCOPE_HAVE_TIFF
  s += ", TIFF";
#endif
#if MODESCOPE_HAVE_WEBP
  s += ", WebP";
#endif
#if MODESCOPE_HAVE_OPENJPEG
  s += ", JPEG 2000";
#endif
  return s;
}

Expected<Image> decode(Bytes data, PixelFormat format, int64_t max_pixels) {
  Rgb rgb;
  Image img;
  MS_RETURN_IF_ERROR(decode_rgb(data, rgb, max_pixels, img.format));
  img.height = rgb.height;
  img.width = rgb.width;
  const auto n = static_cast<size_t>(rgb.height * rgb.width);
  if (format == PixelFormat::RGB) {
    img.channels = 3;
    img.pixels = std::move(rgb.px);
  } else if (format == PixelFormat::BGR) {
    img.channels = 3;
    img.pixels = std::move(rgb.px);
    for (size_t i = 0; i < n; ++i) std::swap(img.pixels[3 * i], img.pixels[3 * i + 2]);
  } else {
    img.channels = 1;
    img.pixels.resize(n);
    for (size_t i = 0; i < n; ++i) {
      const uint8_t* p = rgb.px.data() + 3 * i;
      img.pixels[i] = static_cast<uint8_t>((p[0] * 19595u + p[1] * 38470u + p[2] * 7471u + 0x8000u) >> 16);
    }
  }
  return img;
}

}  // namespace ms::cpu::image
