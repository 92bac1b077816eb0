"""`ddlsim-report --help` lists the references once each and shows former names as aliases."""

from __future__ import annotations

import re

from ddlsim.report.command import parser
from ddlsim.report.reference import reference_aliases, reference_names


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
