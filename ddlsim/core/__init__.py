"""ddlsim.core."""
