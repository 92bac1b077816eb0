"""TopoOpt (NSDI'23): a direct-connect optical fabric co-designed with its training job.

`permutations`, `coin_change`, `mp_topology` and `topology_finder` hold the paper's algorithms
(TotientPerms, SelectPermutations, CoinChangeMod, Blossom MP matchings, TopologyFinder);
`topology` routes traffic over the resulting links with host-based forwarding. Importing the
package registers the `topoopt`, `expander`, `ocs_reconfig` and `sipml` fabrics.
"""

from ddlsim.network.fabrics.topoopt import expander, fabric, reconfigurable  # noqa: F401
