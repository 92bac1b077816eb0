"""RAMP-x collectives (RAMP Sections 5-6): subgroups per step, information map, local operations.

`subgroups` (Tables 5 and 6, both step-4 formulations), `infomap` (Table 7), `plan` (the
subgroups of one job in collective ranks).
"""
