"""Tensor, dtypes, context, jit and grad: the parts of `modescope` below nn and ops."""
