"""CUDA validation hooks: capture real PyTorch runs, predict them without a GPU, execute plans.

The package has two halves (SPEC §12):

* torch-side (needs ``torch``, imported lazily): :mod:`~snsim.torchsim.models` resolves a model
  spec, :mod:`~snsim.torchsim.record` records one training iteration at the aten-op level,
  :mod:`~snsim.torchsim.build` turns a recording into a snsim trace program,
  :mod:`~snsim.torchsim.capture` measures a real CUDA run, :mod:`~snsim.torchsim.predict` builds
  the same program on the CPU under ``FakeTensorMode`` and :mod:`~snsim.torchsim.execute` runs a
  recompute/offload plan for real.
* snsim-only (numpy, no torch): :mod:`~snsim.torchsim.replay` feeds a trace's exact alloc/free
  events through the ``pytorch`` allocator model, :mod:`~snsim.torchsim.validate` compares
  predictions with the measured ground truth, :mod:`~snsim.torchsim.report` writes
  ``docs/VALIDATION.md``.

Commands (registered in :mod:`~snsim.torchsim.cli`): ``snsim capture``, ``snsim predict``,
``snsim validate``, ``snsim execute``.
"""
