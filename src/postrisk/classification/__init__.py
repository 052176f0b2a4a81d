"""The classification task family: labels drawn from known class probabilities
p*(y | x) = softmax(f*(x) / τ(x)) on the benchmark's real covariates, a Gaussian-process
reference posterior over the K latent functions, and the oracle of the multiclass log loss and
the Brier score (docs/classification.md)."""
