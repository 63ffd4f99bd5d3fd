"""cuSPARSE's generic SpMV (cusparseSpMV) with its algorithm chosen, for the peer scripts.

`cupyx.cusparse.spmv` always runs CUSPARSE_SPMV_ALG_DEFAULT and allocates its work buffer on
every call. A fair peer tries the library's own knobs, so `SpMV` binds one matrix (CSR or
COO) to one algorithm, sizes and allocates the buffer once, and computes
out = α·op(A)·x + β·out in place on each call.
"""

# cusparseSpMVAlg_t (cusparse.h, CUDA 11.2 and later).
ALG_DEFAULT = 0
COO_ALG1 = 1
CSR_ALG1 = 2
CSR_ALG2 = 3
COO_ALG2 = 4

# Readable names for the records.
ALG_NAMES = {
    ALG_DEFAULT: "default",
    COO_ALG1: "COO_ALG1",
    CSR_ALG1: "CSR_ALG1",
    CSR_ALG2: "CSR_ALG2",
    COO_ALG2: "COO_ALG2",
}


class SpMV:
    """out = α·op(A)·x + β·out through cusparseSpMV with algorithm `alg` on the CuPy sparse
    matrix `a` (csr_matrix or coo_matrix), op(A) = Aᵀ when `transpose`; x and out are CuPy
    float32 vectors of op(A)'s column and row counts. The work buffer is sized for `a`, `alg`
    and the operation at construction; cuSPARSE reports an algorithm it does not support for
    the format or operation by raising there."""

    def __init__(self, a, alg, transpose=False):
        import cupy
        import cupyx.cusparse as cusparse
        import numpy as np
        from cupy._core import _dtype
        from cupy.cuda import device
        from cupy_backends.cuda.libs import cusparse as lib

        self._lib = lib
        self._cusparse = cusparse
        self.a = a
        self.alg = alg
        self.op = lib.CUSPARSE_OPERATION_TRANSPOSE if transpose else lib.CUSPARSE_OPERATION_NON_TRANSPOSE
        rows, cols = a.shape[::-1] if transpose else a.shape
        self.shape = (rows, cols)
        self.desc = cusparse.SpMatDescriptor.create(a)
        self.dtype = _dtype.to_cuda_dtype(np.dtype(np.float32))
        x = cupy.zeros(cols, dtype=cupy.float32)
        out = cupy.zeros(rows, dtype=cupy.float32)
        # Descriptors and scalars held in names: a temporary's destructor would free it
        # before the call reads it.
        vx, vout = cusparse.DnVecDescriptor.create(x), cusparse.DnVecDescriptor.create(out)
        one, zero = self._scalar(1.0), self._scalar(0.0)
        self.handle = device.get_cusparse_handle()
        size = lib.spMV_bufferSize(
            self.handle, self.op, one.ctypes.data, self.desc.desc, vx.desc,
            zero.ctypes.data, vout.desc, self.dtype, alg)
        self.buffer = cupy.empty(max(int(size), 1), dtype=cupy.int8)
        # Vector descriptors by (address, length), each with its array kept alive so the
        # address is not reused: the peer's compositions pass the same buffers every call,
        # and small inputs take tens of microseconds, where host work per call would show.
        self._vectors = {}

    @staticmethod
    def _scalar(value):
        import numpy as np

        return np.array(value, dtype=np.float32)

    def _vector(self, a):
        key = (a.data.ptr, a.size)
        if key not in self._vectors:
            self._vectors[key] = (a, self._cusparse.DnVecDescriptor.create(a))
        return self._vectors[key][1]

    def __call__(self, x, out, alpha=1.0, beta=0.0):
        """out = α·op(A)·x + β·out (out overwritten where β = 0); returns out."""
        assert x.size == self.shape[1] and out.size == self.shape[0]
        alpha, beta = self._scalar(alpha), self._scalar(beta)
        self._lib.spMV(
            self.handle, self.op, alpha.ctypes.data, self.desc.desc, self._vector(x).desc,
            beta.ctypes.data, self._vector(out).desc, self.dtype, self.alg,
            self.buffer.data.ptr)
        return out
