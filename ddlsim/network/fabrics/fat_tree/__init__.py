"""Electrical fat-trees: the DGX A100 SuperPod and the H100 leaf-spine.

`fabric` (the `superpod` and `leaf_spine` fabrics: structure, resources, the flow model),
`forms` (closed forms of regular patterns, equal to the flow model), `cost` (the EPS cost and
power models of RAMP Section 4.3, that `FatTree.network_cost` reports).
"""
