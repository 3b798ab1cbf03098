"""The Tensor dtypes, named as in MindSpore (ms.float32, ms.int64, ms.bool_, ...)."""
from .._C import dtype

float16 = dtype.float16
float32 = dtype.float32
float64 = dtype.float64
bfloat16 = dtype.bfloat16
int8 = dtype.int8
int16 = dtype.int16
int32 = dtype.int32
int64 = dtype.int64
uint8 = dtype.uint8
uint16 = dtype.uint16
uint32 = dtype.uint32
uint64 = dtype.uint64
bool_ = dtype.bool_
