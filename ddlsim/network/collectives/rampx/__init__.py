"""RAMP-x collectives (RAMP Sections 5-6): subgroups per step, information map, local operations.

`subgroups` (Tables 5 and 6, both step-4 formulations), `infomap` (Table 7), `plan` (the
subgroups of one job in collective ranks), `box_choice` (the box a job runs fastest in under
RAMP's contention_aware placement, handed to the fabric).
"""
