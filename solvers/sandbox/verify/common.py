"""What the verifiers share: which claims are checked, the size limits, the tolerances, the names of a record's kind
and of each verdict. No imports beyond the status enum: the capture (inside every sandboxed program) reads the kinds."""

from __future__ import annotations

from solvers.statuses import SolveStatus

# Records that claim a primal solution: their numbers must agree with their model.
CLAIMS_SOLUTION = {str(SolveStatus.OPTIMAL), str(SolveStatus.TIME_LIMIT_WITH_SOLUTION)}
# Records that claim there is no (finite) optimum: re-solved when the model is small.
CLAIMS_NO_SOLUTION = {str(SolveStatus.INFEASIBLE), str(SolveStatus.UNBOUNDED), str(SolveStatus.INF_OR_UNBD)}
# Models up to this size are read in pure Python (solvers/sandbox/mps.py) when that reader takes them: 3-5x cheaper
# than HiGHS's reader + numpy for the typical captured model (under 3k characters), even at ~6k; at ~20k characters
# (~400 nonzeros) HiGHS is cheaper (bench/verify_mps.py).
FAST_MPS_CHARS = 10_000
MAX_MPS_CHARS = 500_000  # ~1000 columns x 1000 rows: a HiGHS read costs ~30-60 ms there (2-core machine, loaded)
# Re-solving costs the parent CPU that the programs need: only small models (~200 columns x 200 rows of a typical
# textbook model), and never longer than RESOLVE_TIME_S (an LP of that size solves in milliseconds; a MIP that HiGHS
# cannot settle in that time stays unchecked).
MAX_RESOLVE_MPS_CHARS = 40_000
RESOLVE_TIME_S = 0.3
# Tolerances. Solvers accept a point whose rows are violated by up to their feasibility tolerance (1e-6, absolute,
# on the *scaled* model; unscaling can multiply that by the row's magnitude) and integers off by their integrality
# tolerance (1e-5 in Gurobi/COPT/HiGHS): the checks allow 100x / 10x that, relative to the magnitudes involved, so an
# honest solver's point always passes while a forged number (off by far more than rounding) does not.
FEAS_TOL = 1e-4
INT_TOL = 1e-4
OBJ_TOL = 1e-6
# Refuting a no-solution claim needs the opposite certainty: a point that every solver accepts. Integers are rounded
# to integers, and rows and bounds must hold to 1e-9 relative to their magnitude: three orders of magnitude inside
# the 1e-6 feasibility tolerance of every solver here, and far above the double-precision error of a row activity
# (~ n * 1e-16 * magnitude). A model that is infeasible only by less than that is feasible to every solver.
TIGHT_TOL = 1e-9
# A finite number this large may be "infinite" to one solver and finite to another (HiGHS and CPLEX read >= 1e20 as
# infinite, COPT >= 1e30): a model (or point) with one is not re-solved.
HUGE = 1e15
# CP-SAT models larger than this (variables + constraints) are sent without their compact form (building it costs
# the program's sandbox ~5 us per item); a record may say so only when its own counts are that large.
CP_MAX_ITEMS = 20_000
CP_MAX_TERMS = 1_000_000  # the parent checks ~10 M linear terms/s in Python: at most ~0.1 s per record
# Which hook made a record: stamped by the solve wrapper its hook installed (``capture.wrap_solve(kind=...)``).
LINEAR_SOLVER, CP_SAT, MATHOPT, PYOMO = "ortools.linear_solver", "ortools.cp_sat", "ortools.mathopt", "pyomo"
MODEL_BUILDER = "ortools.model_builder"
SCIPY = "scipy"
SCIP = "pyscipopt"
CVXPY = "cvxpy"
CHECK_KEY = "verify"
# Where a record keeps the solver's own claim when the re-solve changed its status (``SolveCall.claimed_status``).
CLAIMED_KEY = "claimed_status"


# What the parent's check concluded for one solve (stored as ``SolveCall.verification``): its claimed point and
# objective agree with its own model (VERIFIED), do so for every constraint kind this module checks while others
# went unchecked (PARTIAL), its no-solution claim was re-solved by HiGHS without contradiction (RESOLVED), it claims
# something but carried no model this module can check (UNVERIFIED), it contradicts its model or is not the
# capture's (REFUTED: the execution is ``tampered``), or it claims nothing to check (NOT_CHECKED: an error, a limit).
VERIFIED, PARTIAL, RESOLVED, UNVERIFIED, REFUTED, NOT_CHECKED = (
    "verified", "partial", "re-solved", "unverified", "refuted", "")

