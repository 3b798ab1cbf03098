"""Writes the encoded test images of tests/engine/image_decode_test.cpp and, for each, the pixels
Pillow decodes from it (its .rgb file: height x width x 3 bytes), listed in expected.json.

Run by hand with Debian's Python and Pillow (python3-pil): /usr/bin/python3 make_images.py
The images are 32 wide and 24 high (not square, so a swapped width and height shows).
"""
import io
import json
import os

import numpy as np
import PIL.Image

HERE = os.path.dirname(os.path.abspath(__file__))
W, H = 32, 24


def pattern():
    y, x = np.mgrid[0:H, 0:W]
    return np.stack([(x * 8) % 256, (y * 10) % 256, ((x + y) * 4) % 256], axis=-1).astype(np.uint8)


def save(img, fmt, **kw):
    with io.BytesIO() as f:
        img.save(f, format=fmt, **kw)
        return f.getvalue()


def main():
    rgb = PIL.Image.fromarray(pattern())
    gray = rgb.convert("L")
    rgba = rgb.copy()
    rgba.putalpha(PIL.Image.fromarray((np.arange(W * H).reshape(H, W) % 256).astype(np.uint8)))
    palette = rgb.quantize(colors=16)
    cases = {
        "rgb.png": save(rgb, "PNG"),
        "rgba.png": save(rgba, "PNG"),
        "gray.png": save(gray, "PNG"),
        "palette.png": save(palette, "PNG"),
        "rgb.jpg": save(rgb, "JPEG", quality=90),
        "gray.jpg": save(gray, "JPEG", quality=90),
        "progressive.jpg": save(rgb, "JPEG", quality=90, progressive=True),
        "cmyk.jpg": save(rgb.convert("CMYK"), "JPEG", quality=95),
        "rgb.bmp": save(rgb, "BMP"),
        "palette.bmp": save(palette, "BMP"),
        "rgb.tif": save(rgb, "TIFF"),
        "lzw.tif": save(rgb, "TIFF", compression="tiff_lzw"),
        "lossless.webp": save(rgb, "WEBP", lossless=True),
        "lossy.webp": save(rgb, "WEBP", quality=80),
        "rgb.jp2": save(rgb, "JPEG2000"),
        "rgb.ppm": save(rgb, "PPM"),
        "gray.pgm": save(gray, "PPM"),
    }
    manifest = []
    for name, data in cases.items():
        if data is None:
            continue
        with open(os.path.join(HERE, name), "wb") as f:
            f.write(data)
        pixels = np.asarray(PIL.Image.open(io.BytesIO(data)).convert("RGB"))
        assert pixels.shape == (H, W, 3), (name, pixels.shape)
        ref = os.path.splitext(name)[0] + "." + os.path.splitext(name)[1][1:] + ".rgb"
        with open(os.path.join(HERE, ref), "wb") as f:
            f.write(pixels.tobytes())
        manifest.append({"file": name, "width": W, "height": H, "pixels": ref})
    with open(os.path.join(HERE, "expected.json"), "w") as f:
        json.dump(manifest, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
