"""RAMP (Ottino et al.): a flat, single-hop optical circuit-switched network with ns reconfiguration.

`topology` (Table 2 figures, coordinates), `transcoder` (wavelength, subnet, transceiver and
timeslot mapping, contention checks), `placement` (jobs placed for the fewest RAMP-x steps).
"""
