"""Built-in contracts and suites. Each module registers its contracts with ``@contract`` on import."""

from contracts.builtin import answer, execution, repairs, response, structure, suites  # noqa: F401
