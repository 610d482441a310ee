"""Finding a plan within one budget: the command's clock (budget), the stages in order
(pipeline), branch and bound on the whole model (whole, highs), and the decomposition
for larger models (decompose)."""
