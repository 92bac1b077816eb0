"""app/: everything that knows Hydra, argv, directories and sweeps: the command line, config
composition, the runner, Session, group objects, assumptions and the ddlsim-profile entry; nothing
below it imports it.
"""
