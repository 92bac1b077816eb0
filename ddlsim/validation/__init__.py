"""Validation against measured runs: the vTrain A100 ground truth (`vtrain`) and the fit of the
A100 compute constants on it (`fit_vtrain`). Their command lines are scripts/validate_vtrain.py
and scripts/fit_vtrain.py."""
