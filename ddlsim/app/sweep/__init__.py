"""app/sweep/: sweeps of many configurations: Hydra callbacks (progress, gathering, resume markers),
composing once per sweep, in-process sweeps for scripts and tests, and the reproduction scripts'
entry.
"""
