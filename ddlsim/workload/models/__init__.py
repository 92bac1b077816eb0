"""Models a workload can be built from. `ddlsim.core.catalog` lists the module that registers each."""
