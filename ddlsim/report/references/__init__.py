"""One module per seed paper, each defining the side-by-side of its reproductions
(`ddlsim.report.reference.define_reference`); `ddlsim.report.references.index` lists them all.
This package imports none of its modules, so importing one loads no other."""
