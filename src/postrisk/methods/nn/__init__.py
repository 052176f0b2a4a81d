"""The neural-network methods and the building blocks they share (docs/design.md, "Methods";
paper App. C.4).

Shared:

- :mod:`postrisk.methods.nn.backbone` — the one backbone (residual or plain MLP, optional
  spectral normalisation, dropout) and the shared NN hyper-parameters.
- :mod:`postrisk.methods.nn.heads` — the Gaussian output heads and the Gaussian NLL.
- :mod:`postrisk.methods.nn.network` — backbone plus head as one model, its members and
  passes.
- :mod:`postrisk.methods.nn.train` — the one training loop (NAdamW, shuffled minibatches,
  members vmapped as one model).
- :mod:`postrisk.methods.nn.last_layer` — the last-layer Gaussian (Laplace) posterior.
- :mod:`postrisk.methods.nn.method` — the base class of the methods on the shared network.

One module per method: :mod:`.ensembles` (NN-Bag, NN-Ens, NN-Drop), :mod:`.edl`, :mod:`.deup`,
:mod:`.laplace` (NN-Lap, NN-Lap-SN), :mod:`.fsp` (NN-FSP, NN-FSP-SN), :mod:`.swag` and
:mod:`.sngp_het`.

Nothing heavy is imported here; import the submodules directly.
"""
