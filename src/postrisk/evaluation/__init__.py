"""Evaluation: the metrics (pure functions on arrays), the reference rows scored beside the
methods, scoring fits against the oracle, the posterior checks of Table 3, and the toy problem
on which method behaviour is tested."""
