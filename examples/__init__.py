"""User programs for `ddlsim.capture`: each defines ``build(mesh) -> step`` (docs/capture.md)."""
