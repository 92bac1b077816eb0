"""ddlsim.app."""
