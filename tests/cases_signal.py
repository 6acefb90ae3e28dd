"""Cases of convolution and correlation: numpy.convolve / numpy.correlate (1-D) and
scipy.signal.convolve / correlate (n-D) and convolve2d / correlate2d, every mode,
derivatives in both inputs (see namespace_cases)."""

import numpy as np
import scipy.signal as ss
from namespace_cases import I, U, case

import chainrule.numpy as cnp
import chainrule.scipy.signal as csig

_PAIRS_1D = ((U(6), U(3)), (U(3), U(5)), (U(4), U(4)), (U(1), U(2)), (I(5), I(3)))
_PAIRS_ND = ((U(4, 5), U(2, 3)), (U(2, 3), U(3, 4)), (U(3, 2, 4), U(2, 2, 3)), (U(5), U(2)),
             (I(3, 3), I(2, 2)))

CASES = [
    *[case("convolve", (lambda m: lambda a, v: cnp.convolve(a, v, m))(mode),
           (lambda m: lambda a, v: np.convolve(a, v, m))(mode), *_PAIRS_1D, grad_sets=4,
           note=mode) for mode in ("full", "same", "valid")],
    case("convolve", lambda a, v: cnp.convolve(a, v), np.convolve, (U(), U(3)), (U(2), U()),
         note="0-d"),
    *[case("correlate", (lambda m: lambda a, v: cnp.correlate(a, v, m))(mode),
           (lambda m: lambda a, v: np.correlate(a, v, m))(mode), *_PAIRS_1D, grad_sets=4,
           note=mode) for mode in ("full", "same", "valid")],
    case("correlate", lambda a, v: cnp.correlate(a, v), np.correlate, (U(5), U(2)),
         note="default valid"),
    *[case("scipy.signal.convolve", (lambda m: lambda a, v: csig.convolve(a, v, m))(mode),
           (lambda m: lambda a, v: ss.convolve(a, v, m, method="direct"))(mode),
           *(_PAIRS_ND if mode != "valid" else _PAIRS_ND[:1] + _PAIRS_ND[2:]), grad_sets=3,
           note=mode) for mode in ("full", "same", "valid")],
    case("scipy.signal.convolve", lambda a, v: csig.convolve(a, v, "valid"),
         lambda a, v: ss.convolve(a, v, "valid"), (U(2, 3), U(3, 4)), note="valid swapped"),
    *[case("scipy.signal.correlate", (lambda m: lambda a, v: csig.correlate(a, v, m))(mode),
           (lambda m: lambda a, v: ss.correlate(a, v, m, method="direct"))(mode),
           *(_PAIRS_ND if mode != "valid" else _PAIRS_ND[:1] + _PAIRS_ND[2:]), grad_sets=3,
           note=mode) for mode in ("full", "same", "valid")],
    case("scipy.signal.correlate", lambda a, v: csig.correlate(a, v, "valid"),
         lambda a, v: ss.correlate(a, v, "valid"), (U(2, 3), U(3, 4)), (U(2), U(5)),
         note="valid swapped"),
    case("scipy.signal.correlate", lambda a, v: csig.correlate(a, v, method="fft"),
         lambda a, v: ss.correlate(a, v, method="direct"), (U(3), U(2)), note="method"),
    *[case(f"scipy.signal.{n}", (lambda f: lambda a, v: f(a, v, "same"))(getattr(csig, n)),
           (lambda f: lambda a, v: f(a, v, "same"))(getattr(ss, n)), (U(0), U(2)),
           (U(0, 3), U(2, 2)), grad=False, note="empty") for n in ("convolve", "correlate")],
    *[case(f"scipy.signal.{n}", (lambda f, m: lambda a, v: f(a, v, m))(getattr(csig, n), mode),
           (lambda f, m: lambda a, v: f(a, v, m))(getattr(ss, n), mode),
           (U(4, 5), U(2, 3)), (U(3, 2), U(3, 3)), (I(3, 3), I(2, 2)), grad_sets=2,
           note=mode) for n in ("convolve2d", "correlate2d") for mode in ("full", "same")],
    *[case(f"scipy.signal.{n}", (lambda f: lambda a, v: f(a, v, "valid"))(getattr(csig, n)),
           (lambda f: lambda a, v: f(a, v, "valid"))(getattr(ss, n)),
           (U(4, 5), U(2, 3)), (U(2, 3), U(3, 4)), grad_sets=2, note="valid")
      for n in ("convolve2d", "correlate2d")],
]
