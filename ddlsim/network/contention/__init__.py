"""network/contention/: concurrent collectives and jobs sharing a fabric: per-step loads of each
collective on the fabric's own links for iterations (shared flow by flow), the declared shared
resources and their coflow model where a fabric has no per-flow routes, and a flow-level max-min
engine checked against SimGrid (docs/contention.md).
"""
