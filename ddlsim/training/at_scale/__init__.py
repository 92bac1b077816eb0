"""What running at scale costs beyond the isolated kernel and collective prices (DESIGN.md 10).

Each cost is a model of its own with a cited source and a switch (`settings.AtScaleSettings`, the
``training.at_scale`` section); switched off, it costs 0 and the iteration is today's, bit for bit:

- `interference`: compute that runs beside a collective loses the SMs NCCL's channels hold;
- `stragglers`: a synchronous step waits for the slowest of the GPUs that synchronise;
- `framework`: per-iteration work outside the kernel lists (gradient-buffer zeroing, loss-scale
  unscaling and its overflow check, the batch's copy to the device);
- `failures` (``training.failures``, `ddlsim.training.failures`): lost work, checkpoints and
  restarts turn training time into wall time.

`costs.at_scale_costs` adds them up for one iteration; docs/compute.md cites every constant.
"""
