"""ms.Tensor: NumPy round trips and memory sharing, dtypes, operators against NumPy, errors."""
import numpy as np
import pytest

import modescope as ms


def test_from_numpy_shares_memory_both_ways():
    a = np.arange(6, dtype=np.float32).reshape(2, 3)
    t = ms.Tensor(a)
    assert t.shape == (2, 3) and t.dtype == ms.float32
    a[0, 0] = 42.0  # the tensor sees the array's writes
    assert t.asnumpy()[0, 0] == 42.0
    view = t.asnumpy()
    view[1, 2] = -7.0  # and the array sees writes through asnumpy()
    assert a[1, 2] == -7.0
    b = np.asarray(t)  # buffer protocol: the same memory again
    assert np.shares_memory(a, b)


def test_copies_where_the_layout_does_not_allow_sharing():
    a = np.arange(12, dtype=np.float32).reshape(3, 4)[:, ::2]  # not contiguous
    t = ms.Tensor(a)
    np.testing.assert_array_equal(t.asnumpy(), a)
    assert not np.shares_memory(t.asnumpy(), a)


@pytest.mark.parametrize("value,dtype", [(1.5, ms.float32), (3, ms.int64), (True, ms.bool_),
                                         ([1.0, 2.0], ms.float32), ([[1, 2]], ms.int64)])
def test_python_values_take_mindspore_dtypes(value, dtype):
    t = ms.Tensor(value)
    assert t.dtype == dtype
    np.testing.assert_array_equal(t.asnumpy(), np.asarray(value))


@pytest.mark.parametrize("dtype,np_dtype", [(ms.float32, np.float32), (ms.float64, np.float64),
                                            (ms.float16, np.float16), (ms.int32, np.int32), (ms.int8, np.int8),
                                            (ms.uint8, np.uint8), (ms.int64, np.int64), (ms.bool_, np.bool_)])
def test_dtype_argument(dtype, np_dtype):
    t = ms.Tensor([[0, 1], [1, 0]], dtype=dtype)
    assert t.dtype == dtype
    assert t.asnumpy().dtype == np_dtype
    assert ms.Tensor(np.zeros(3, np_dtype)).dtype == dtype


def test_bfloat16_round_trip_through_float32():
    t = ms.Tensor([1.0, 2.5, -3.0], dtype=ms.bfloat16)
    assert t.dtype == ms.bfloat16
    np.testing.assert_array_equal(t.asnumpy(), np.array([1.0, 2.5, -3.0], np.float32))


def test_operators_match_numpy():
    rng = np.random.default_rng(0)
    a = rng.standard_normal((3, 4)).astype(np.float32)
    b = rng.standard_normal((3, 4)).astype(np.float32) + 3.0
    w = rng.standard_normal((4, 2)).astype(np.float32)
    ta, tb, tw = ms.Tensor(a), ms.Tensor(b), ms.Tensor(w)
    close = np.testing.assert_allclose
    close((ta + tb).asnumpy(), a + b, rtol=1e-6)
    close((ta - tb).asnumpy(), a - b, rtol=1e-6)
    close((ta * tb).asnumpy(), a * b, rtol=1e-6)
    close((ta / tb).asnumpy(), a / b, rtol=1e-6)
    close((ta @ tw).asnumpy(), a @ w, rtol=1e-5, atol=1e-6)
    close((-ta).asnumpy(), -a)
    close((ta * 2.0 + 1).asnumpy(), a * 2 + 1, rtol=1e-6)
    close((1.0 - ta).asnumpy(), 1 - a, rtol=1e-6)
    close((2.0 / tb).asnumpy(), 2 / b, rtol=1e-6)
    np.testing.assert_array_equal((ta > tb).asnumpy(), a > b)
    np.testing.assert_array_equal((ta < 0).asnumpy(), a < 0)
    np.testing.assert_array_equal((ta >= 0.5).asnumpy(), a >= 0.5)
    np.testing.assert_array_equal((ta == ta).asnumpy(), np.ones_like(a, bool))
    close(ta.sum().asnumpy(), a.sum(), rtol=1e-5)
    close(ta.sum(axis=1, keepdims=True).asnumpy(), a.sum(axis=1, keepdims=True), rtol=1e-5)
    close(ta.mean(axis=0).asnumpy(), a.mean(axis=0), rtol=1e-5)
    close(ta.reshape(4, 3).asnumpy(), a.reshape(4, 3))
    close(ta.transpose().asnumpy(), a.T)
    assert ta.astype(ms.int32).dtype == ms.int32


def test_int_tensor_with_python_float_computes_in_float32():
    t = ms.Tensor([1, 2, 3]) * 0.5
    assert t.dtype == ms.float32
    np.testing.assert_allclose(t.asnumpy(), [0.5, 1.0, 1.5])


def test_scalars_bool_and_repr():
    t = ms.Tensor(np.array([[1.0, 2.0]], np.float32))
    assert float(t.sum()) == 3.0
    assert t.sum().item() == 3.0
    assert bool(t.sum() > 2)
    text = repr(t)
    assert text.startswith("Tensor(shape=[1, 2], dtype=Float32") and "[[1. 2.]]" in text
    assert str(t) == "[[1. 2.]]"
    assert repr(ms.float32) == "Float32"
    assert len(t) == 1 and t.ndim == 2 and t.size == 2


def test_errors_are_one_line_python_exceptions():
    a = ms.Tensor(np.ones((2, 3), np.float32))
    with pytest.raises(ValueError) as e:
        a @ ms.Tensor(np.ones((4, 5), np.float32))
    assert "MatMul" in str(e.value) and "\n" not in str(e.value)
    with pytest.raises(ValueError) as e:
        a + ms.Tensor(np.ones((2, 3), np.int32))
    assert "\n" not in str(e.value)
    with pytest.raises(TypeError, match="complex"):
        ms.Tensor(np.ones(2, np.complex64))
    with pytest.raises(TypeError, match="not a dtype"):
        ms.Tensor([1.0], dtype="no-such-type")
    with pytest.raises(ValueError, match="one element"):
        float(a)


def test_indexing_matches_numpy():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = ms.Tensor(a)
    for key in (0, -1, (1, 2), (slice(None), 1), (slice(None), slice(1, 3), slice(None, None, 2)),
                (slice(None, None, -1),), (0, slice(None), -1)):
        np.testing.assert_array_equal(t[key].asnumpy(), a[key])
    np.testing.assert_array_equal(t[ms.Tensor(np.array([1, 0]))].asnumpy(), a[[1, 0]])
    with pytest.raises(IndexError, match="out of range"):
        t[2]
    with pytest.raises(TypeError, match="Tensor index"):
        t["x"]
