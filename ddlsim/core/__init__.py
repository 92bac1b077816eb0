"""core/: the vocabulary every room speaks (types, work records, units, errors, caches, files, package
data, datasheets, the papers' numbers) and the registries, the one list of options and the one
build() that turn a name into a component; it imports nothing else of ddlsim.
"""
