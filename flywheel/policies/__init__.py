"""Policies: a model in the loop, named by a spec string (``openai:MODEL@URL``, ``hf:PATH``, ``vllm:PATH``).

``generate_attempts`` asks a policy for K samples per problem through a response cache and returns ``Attempt``
records plus infrastructure rows; ``load_problems_file`` reads benchmark-shaped JSONL problems.
"""

from flywheel.policies.backends.base import backend_schemes, make_backend
from flywheel.policies.boundary import failure_taxonomy
from flywheel.policies.problems_file import load_problems_file
from flywheel.policies.run import PolicyRun, generate_attempts
from flywheel.policies.spec import PolicySpec, parse_spec

__all__ = ["PolicyRun", "PolicySpec", "backend_schemes", "failure_taxonomy", "generate_attempts", "load_problems_file", "make_backend",
           "parse_spec"]
