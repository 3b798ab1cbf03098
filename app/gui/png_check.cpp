// modescope-pngcheck FILE [MIN_COLOURS]: exits 0 when FILE is a readable PNG that is not blank (it
// has at least MIN_COLOURS distinct colours, default 8, and is not one flat colour), else 1.
#include <QGuiApplication>
#include <QImage>
#include <QSet>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc < 2) {
    std::fprintf(stderr, "usage: modescope-pngcheck FILE [MIN_COLOURS]\n");
    return 2;
  }
  const QImage img(QString::fromLocal8Bit(argv[1]));
  if (img.isNull()) {
    std::fprintf(stderr, "error: %s is not a readable image\n", argv[1]);
    return 1;
  }
  const int want = argc > 2 ? std::atoi(argv[2]) : 8;
  QSet<QRgb> colours;
  const QImage rgb = img.convertToFormat(QImage::Format_RGB32);
  const int step = std::max(1, rgb.width() * rgb.height() / 400000);
  for (int i = 0; i < rgb.width() * rgb.height() && colours.size() < 4096; i += step)
    colours.insert(rgb.pixel(i % rgb.width(), i / rgb.width()));
  std::printf("%s: %dx%d, %lld colours sampled\n", argv[1], img.width(), img.height(),
              static_cast<long long>(colours.size()));
  if (colours.size() < want) {
    std::fprintf(stderr, "error: %s looks blank (%lld colours)\n", argv[1], static_cast<long long>(colours.size()));
    return 1;
  }
  return 0;
}
