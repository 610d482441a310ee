"""The optimisation model: the region graph (graph), what the model may use
(candidates), how commitments are counted (costs), the mixed-integer program itself
(builder), and a plan's values apart from any model (solution)."""
