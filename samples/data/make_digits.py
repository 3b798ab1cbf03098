#!/usr/bin/python3
"""Converts the 8x8 handwritten digits that Debian's scikit-learn ships (1,797 images, 10 classes,
pixel values 0..16) into two NumPy .npy files next to this script:

  digits_images.npy  uint8  [1797, 8, 8]   pixel values 0..16 (the loader divides by 16)
  digits_labels.npy  int64  [1797]         class 0..9

Run once (needs python3-sklearn); the outputs are committed so nothing else needs scikit-learn.
"""
import os

import numpy as np
from sklearn.datasets import load_digits


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    d = load_digits()
    images = np.ascontiguousarray(d.images.astype(np.uint8))
    labels = np.ascontiguousarray(d.target.astype(np.int64))
    assert images.shape == (1797, 8, 8) and labels.shape == (1797,)
    assert images.max() <= 16 and labels.min() == 0 and labels.max() == 9
    assert np.array_equal(images.astype(d.images.dtype), d.images)
    np.save(os.path.join(here, "digits_images.npy"), images)
    np.save(os.path.join(here, "digits_labels.npy"), labels)
    print("wrote", images.shape, labels.shape, "to", here)


if __name__ == "__main__":
    main()
