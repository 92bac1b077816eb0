"""TopoOpt (NSDI'23): a direct-connect optical fabric co-designed with its training job.

`permutations`, `coin_change`, `mp_topology` and `topology_finder` hold the paper's algorithms
(TotientPerms, SelectPermutations, CoinChangeMod, Blossom MP matchings, TopologyFinder);
`topology` routes traffic over the resulting links with host-based forwarding. The `topoopt`,
`expander`, `ocs_reconfig` and `sipml` fabrics register in `fabric`, `expander` and
`reconfigurable` (`ddlsim.core.catalog` lists which); importing the package imports none of them.
"""
