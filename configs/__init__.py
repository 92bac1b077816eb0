"""ddlsim's Hydra configs and YAML data files, installed as the package data ``ddlsim.configs``.

Read them through `ddlsim.core.resources`, never by a path relative to a source file.
"""
