"""report/: result rows to files, tables and figures, and the side-by-side checks of every seed
reproduction against its paper; it formats rows and imports only core (`ddlsim-report`,
docs/training.md).
"""
