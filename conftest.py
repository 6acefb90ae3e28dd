"""One BLAS thread for the tests: on shared 2-core machines two threads make
matrix products 15-60x slower. Set before NumPy is imported by any test."""

import os

for _var in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_var, "1")
