"""RAMP (Ottino et al.): a flat, single-hop optical circuit-switched network with ns reconfiguration.

`topology` (Table 2 figures, coordinates), `transcoder` (wavelength, subnet, transceiver and
timeslot mapping, contention checks; `key_clashes` counts the rows that reuse a resource),
`plan_choice`, `multicast` and `mesh` (plans of whole steps), `placement` (jobs placed for the
fewest RAMP-x steps, or in the box they are handed), `cost` (cost and power, RAMP 4.3) and
`cost_tables` (Tables 3 and 4).
"""
