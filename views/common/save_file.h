// Qt-side writes go through the engine's atomic write helper (engine/core/atomic_file.h): the bytes
// are built in memory, then written to a temporary file beside the target, fsynced and renamed over
// it, so a failed export leaves the old file as it was.
#pragma once

#include <QByteArray>
#include <QImage>
#include <QString>

namespace ms::views {

// Replaces `path` with `bytes`. On failure `error` (when given) gets one line naming the file and why.
bool save_bytes(const QString& path, const QByteArray& bytes, QString* error = nullptr);
// Encodes `image` as `format` (nullptr: from the path's suffix, PNG when it has none), then saves
// it as save_bytes does.
bool save_image(const QString& path, const QImage& image, const char* format = nullptr, QString* error = nullptr);

}  // namespace ms::views
