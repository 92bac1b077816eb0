"""`ddlsim-report --help` lists the references once each and shows former names as aliases."""

from __future__ import annotations

import re

from ddlsim.report.command import parser
from ddlsim.report.references.index import reference_aliases, reference_names


def test_help_shows_aliases_as_aliases():
    text = " ".join(parser().format_help().split())
    names = reference_names(with_aliases=False)
    listed = text.split("NAME is one of ", 1)[1].split(" (aliases: ", 1)[0].split(", ")
    assert listed == names
    aliases = reference_aliases()
    assert aliases and not set(aliases) & set(names)
    for alias, name in aliases.items():
        assert name in names
        assert re.search(rf"\b{alias} = {name}\b", text)


def test_an_alias_is_still_accepted():
    alias = next(iter(reference_aliases()))
    assert parser().parse_args(["sweep", "--reference", alias]).reference == alias


def test_the_index_lists_every_reference_its_modules_define():
    import importlib
    import pkgutil

    import ddlsim.report.references as package
    from ddlsim.report.reference import Reference
    from ddlsim.report.references.index import ALL

    defined = [value for info in pkgutil.iter_modules(package.__path__)
               for value in vars(importlib.import_module(f"{package.__name__}.{info.name}")).values()
               if isinstance(value, Reference)]
    assert sorted(reference.name for reference in defined) == sorted(reference.name for reference in ALL)
    assert len({reference.name for reference in ALL}) == len(ALL)
