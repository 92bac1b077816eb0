"""network/contention/: concurrent collectives and jobs sharing a fabric: its declared shared
resources, the coflow model of an iteration, and a flow-level max-min engine checked against SimGrid
(docs/contention.md).
"""
