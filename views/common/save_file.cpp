#include "views/common/save_file.h"

#include <QBuffer>
#include <QFileInfo>

#include <string_view>

#include "engine/core/atomic_file.h"

namespace ms::views {

bool save_bytes(const QString& path, const QByteArray& bytes, QString* error) {
  const Status st =
      write_file_atomic(path.toStdString(), std::string_view(bytes.constData(), static_cast<size_t>(bytes.size())));
  if (!st.is_ok() && error != nullptr) *error = QString::fromStdString(st.message());
  return st.is_ok();
}

bool save_image(const QString& path, const QImage& image, const char* format, QString* error) {
  QByteArray fmt = format != nullptr ? QByteArray(format) : QFileInfo(path).suffix().toLower().toLatin1();
  if (fmt.isEmpty()) fmt = "png";
  QByteArray bytes;
  QBuffer buffer(&bytes);
  if (image.isNull() || !buffer.open(QIODevice::WriteOnly) || !image.save(&buffer, fmt.constData())) {
    if (error != nullptr) *error = path + QStringLiteral(": cannot encode the image as ") + QString::fromLatin1(fmt);
    return false;
  }
  buffer.close();
  return save_bytes(path, bytes, error);
}

}  // namespace ms::views
