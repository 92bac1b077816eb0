"""ddlsim.app.sweep."""
