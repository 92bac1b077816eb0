"""Measured compute profiles shipped with ddlsim, installed as the package data ``ddlsim.profiles``.

Read them through `ddlsim.core.resources`, never by a path relative to a source file.
"""
