"""Optical switching technologies a TopoOpt fabric can be built from (TopoOpt Table 1, appendix B).

Figures are the paper's: port count, reconfiguration latency, insertion loss and cost per port
(None where the paper says "not commercial"). Patch panels reconfigure in "minutes"; we take
5 minutes as the number behind that word. Only patch panels and 3D-MEMS OCSs are deployable
today (section 3), so those two are what the fabric configs offer by default; the others are
here so that sweeps over futuristic switches (Fig. 17) can name them.
"""

from __future__ import annotations

from dataclasses import dataclass

from ddlsim.core import units
from ddlsim.core.errors import ConfigError


@dataclass(frozen=True)
class SwitchTechnology:
    name: str
    label: str
    port_count: int
    reconfiguration_latency: str
    insertion_loss_db: tuple[float, float]
    cost_per_port_usd: float | None
    source: str

    @property
    def reconfiguration_latency_s(self) -> float:
        return units.parse_time_s(self.reconfiguration_latency, "reconfiguration_latency", bounds=units.PERIOD_BOUNDS_S)


TECHNOLOGIES: dict[str, SwitchTechnology] = {
    tech.name: tech
    for tech in (
        SwitchTechnology("patch_panel", "Optical patch panel (Telescent)", 1008, "300s", (0.5, 0.5), 100.0,
                         "TopoOpt Table 1 and appendix B: 1008 duplex ports, minutes, <0.5 dB, ~$100K"),
        SwitchTechnology("ocs_3d_mems", "3D-MEMS OCS (Polatis)", 384, "10ms", (1.5, 2.7), 520.0,
                         "TopoOpt Table 1 and appendix B: 384 duplex ports, ~10 ms, $200K with 40% discount"),
        SwitchTechnology("mems_2d", "2D MEMS (Mordia, MegaSwitch)", 300, "11.5us", (10.0, 20.0), None,
                         "TopoOpt Table 1"),
        SwitchTechnology("silicon_photonics", "Silicon photonics switch", 256, "900ns", (3.7, 3.7), None,
                         "TopoOpt Table 1"),
        SwitchTechnology("tunable_lasers", "Tunable lasers (Sirius)", 128, "3.8ns", (7.0, 13.0), None,
                         "TopoOpt Table 1"),
        SwitchTechnology("rotornet", "RotorNet", 64, "10us", (2.0, 2.0), None, "TopoOpt Table 1"),
    )
}


def technology(name: str) -> SwitchTechnology:
    if name not in TECHNOLOGIES:
        raise ConfigError("switch", name, f"unknown optical switch; choose one of {', '.join(TECHNOLOGIES)}")
    return TECHNOLOGIES[name]
