"""Solvers whose derivatives come from implicit or adjoint equations: ``odeint`` (an
adaptive Dormand–Prince ODE solver, differentiated by the adjoint and tangent ODEs),
``fixed_point`` and ``custom_root`` (differentiated by the implicit function theorem)."""

from .implicit import custom_root, fixed_point
from .ode import odeint
from .runtime import SolverArgumentError, SolverError

__all__ = ["custom_root", "fixed_point", "odeint", "SolverError", "SolverArgumentError"]
