"""Tasks: what one `ddlsim` run does with its built components. `ddlsim.core.catalog` lists the
module that registers each."""
