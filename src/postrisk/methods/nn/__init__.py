"""The shared neural-network building blocks of every neural method (docs/design.md,
"Methods"; paper App. C.4).

- :mod:`postrisk.methods.nn.backbone` — the one backbone (residual or plain MLP, optional
  spectral normalisation, dropout) and the shared NN hyper-parameters.
- :mod:`postrisk.methods.nn.heads` — the Gaussian output heads and the Gaussian NLL.
- :mod:`postrisk.methods.nn.train` — the one training loop (NAdamW, shuffled minibatches,
  members vmapped as one model).

Nothing heavy is imported here; import the submodules directly.
"""
