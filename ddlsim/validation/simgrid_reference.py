"""The reference engine for flow-level contention: the same compiled flows run on SimGrid 4.1.

`reference_step_end_s(fabric, jobs)` compiles the jobs exactly as the fluid engine does
(`ddlsim.network.contention.flows.compile_jobs`) and builds a SimGrid platform from those flows:

- one SimGrid link per fabric resource some flow crosses, with the resource's capacity in bytes
  per second (``capacity_bps / 8``) and no latency;
- one sending host and one receiving host per fabric node, all in one full netzone
  (``netzone_root.add_netzone_full``), and for every node pair used a route from the sender to
  the receiver through the links of that pair's fabric path (a path crossing a resource twice
  lists its link twice);
- one actor per collective: for each communication step it waits the step's circuit setup,
  then starts every flow of the step as a host-to-host ``Comm.sendto_async`` of the flow's bytes
  (rounded to whole bytes) at its own head-to-head latency after the step began, waits for all
  of them, and goes on with the next step. A flow of no bytes (a barrier's) or without resources
  is done once its latency is paid, as in the fluid engine (SimGrid never completes an empty comm
  on a route without latency).

SimGrid runs CM02 with every correction off: ``network/crosstraffic:0`` (no acknowledgement
traffic on the reverse path), ``network/TCP-gamma:0`` (no window bound on a flow's rate),
``network/latency-factor:1``, ``network/bandwidth-factor:1`` and ``network/weight-S:0``, and
times kept to 1e-15 s (``precision/timing``; the default 1e-9 s blurs nanosecond steps). That
leaves max-min fair sharing of the links, except for one thing: CM02 weighs a flow's share by
its route latency (its "sharing penalty" is the latency, src/kernel/resource/models/
network_cm02.cpp), which favours short paths as TCP does. With zero-latency links every flow
has the same penalty (1), so the latency is paid by starting each comm that much later, which
is the fluid model's "latency, then a max-min share" exactly. (Measured on the suite of
`contention_suite`: with the latencies on per-pair links instead, SimGrid's latency-weighted
shares differ from equal shares by up to 60 %, on OPSquare where relayed flows have four times
the latency of direct ones; with the delayed starts the two engines agree to 1e-12.)

`model="LV08"` runs the same flows on SimGrid's default, TCP-like model instead (Velho and Legrand
2009): LV08 with its own factors left as SimGrid ships them (latency x 13.01, bandwidth x 0.97,
weight-S 20537, TCP window 4 MiB), each pair's head-to-head latency on a private link of its route
(so that a flow's share is weighted by its route's latency and its rate bounded by window over
round trip), and every flow started when its step begins. Only the acknowledgement traffic is off
(``network/crosstraffic:0``): ddlsim's resources are one direction each, and SimGrid would load the
reverse traffic onto the same link. The spread between the two models, on the same flows, is the
uncertainty of a fluid model of TCP sharing (docs/contention.md).

SimGrid keeps one engine per process, so every run happens in a fresh Python subprocess
(`python -m ddlsim.validation.simgrid_reference IN OUT`). SimGrid is a test and validation
dependency only: ``pip install --no-build-isolation 'pybind11<3' simgrid==4.1`` builds it from
source (cmake, a C++ compiler and libboost-dev needed; about ten minutes on two cores).
"""

from __future__ import annotations

import ctypes
import glob
import importlib
import os
import site
import subprocess
import sys
import sysconfig
import tempfile
from collections.abc import Sequence
from pathlib import Path

import numpy as np

from ddlsim.core.errors import InfeasibleError
from ddlsim.core.units import BITS_PER_BYTE
from ddlsim.network.contention.flows import FlowJob, FlowProblem, compile_jobs
from ddlsim.network.fabrics.base import Fabric

INSTALL_HINT = ("pip install --no-build-isolation 'pybind11<3' simgrid==4.1 (needs cmake, g++ and libboost-dev; "
                "set LD_LIBRARY_PATH to the site-packages folder holding libsimgrid.so if the import fails)")
SIMGRID_CONFIG = ("network/model:CM02", "network/crosstraffic:0", "network/TCP-gamma:0",
                  "network/latency-factor:1", "network/bandwidth-factor:1", "network/weight-S:0",
                  "precision/timing:1e-15")
LV08_CONFIG = ("network/model:LV08", "network/crosstraffic:0", "precision/timing:1e-15")
MODELS = {"CM02": SIMGRID_CONFIG, "LV08": LV08_CONFIG}
PRIVATE_LINK_BYTES_PER_S = 1e18  # a pair's latency link: never a bottleneck
TIMEOUT_S = 1800


def _library_dirs() -> list[str]:
    """Folders that may hold libsimgrid.so (pip installs it into site-packages)."""
    folders = [sysconfig.get_paths()["purelib"], sysconfig.get_paths()["platlib"], *site.getsitepackages()]
    return [folder for folder in dict.fromkeys(folders) if glob.glob(os.path.join(folder, "libsimgrid.so*"))]


def import_simgrid():
    """The simgrid module, loading libsimgrid.so from site-packages when the loader cannot find it."""
    try:
        return importlib.import_module("simgrid")
    except ImportError as error:
        if "libsimgrid" not in str(error):
            raise InfeasibleError(f"the SimGrid reference needs simgrid: {INSTALL_HINT}") from None
        for folder in _library_dirs():
            for library in sorted(glob.glob(os.path.join(folder, "libsimgrid.so.*"))):
                ctypes.CDLL(library, mode=ctypes.RTLD_GLOBAL)
        try:
            return importlib.import_module("simgrid")
        except ImportError:
            raise InfeasibleError(f"the SimGrid reference needs simgrid: {INSTALL_HINT}") from None


def simgrid_available() -> bool:
    try:
        import_simgrid()
    except InfeasibleError:
        return False
    return True


def reference_step_end_s(fabric: Fabric, jobs: Sequence[FlowJob], model: str = "CM02") -> list[np.ndarray]:
    """End time of every communication step of every job, run together on SimGrid."""
    return run_problem(compile_jobs(fabric, jobs), model)


def reference_end_s(fabric: Fabric, jobs: Sequence[FlowJob], model: str = "CM02") -> np.ndarray:
    """Completion time of every job, run together on SimGrid."""
    return np.array([ends.max() if ends.size else job.start_s
                     for job, ends in zip(jobs, reference_step_end_s(fabric, jobs, model))])


def run_problem(problem: FlowProblem, model: str = "CM02") -> list[np.ndarray]:
    """Step end times of each job of a compiled problem, from a SimGrid run in a subprocess on
    `model` (CM02: max-min, the fluid engine's equations; LV08: SimGrid's TCP-like default)."""
    if model not in MODELS:
        raise InfeasibleError(f"model = {model!r}: the SimGrid reference runs {' or '.join(MODELS)}")
    import_simgrid()
    with tempfile.TemporaryDirectory(prefix="ddlsim-simgrid-") as folder:
        source, target = Path(folder) / "flows.npz", Path(folder) / "ends.npz"
        np.savez(source, model=np.array(model), **_arrays(problem))
        env = dict(os.environ)
        env["LD_LIBRARY_PATH"] = os.pathsep.join([*_library_dirs(), env.get("LD_LIBRARY_PATH", "")]).strip(os.pathsep)
        done = subprocess.run([sys.executable, "-m", __name__, str(source), str(target)], env=env,
                              capture_output=True, text=True, timeout=TIMEOUT_S, check=False)
        if done.returncode != 0 or not target.exists():
            tail = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            raise InfeasibleError(f"the SimGrid reference run failed (exit {done.returncode}): {tail[0]}")
        with np.load(target) as ends:
            return [ends[f"job{j}"] for j in range(len(problem.jobs))]


def _arrays(problem: FlowProblem) -> dict[str, np.ndarray]:
    """The compiled problem as flat arrays (one step table and one flow table per job)."""
    routes = problem.routes
    arrays = {"capacity_bps": routes.capacity_bps, "src_node": routes.src_node, "dst_node": routes.dst_node,
              "latency_s": routes.latency_s, "indptr": routes.indptr, "resource": routes.resource,
              "crossings": np.rint(routes.bits_per_byte / BITS_PER_BYTE).astype(np.int64),
              "start_s": np.array([job.start_s for job in problem.jobs])}
    for j, job in enumerate(problem.jobs):
        arrays[f"job{j}_step_flows"] = np.array([step.pair.size for step in job.steps], dtype=np.int64)
        arrays[f"job{j}_setup_s"] = np.array([step.setup_s for step in job.steps])
        arrays[f"job{j}_pair"] = np.concatenate([step.pair for step in job.steps]) if job.steps else np.zeros(0, int)
        arrays[f"job{j}_bytes"] = (np.concatenate([step.size_bytes for step in job.steps]) if job.steps
                                   else np.zeros(0))
    return arrays


def _simulate(data: dict[str, np.ndarray]) -> dict[str, np.ndarray]:
    """Build the platform and run every job's actor (this process's one SimGrid engine)."""
    simgrid = import_simgrid()
    tcp_like = str(data["model"]) == "LV08"
    engine = simgrid.Engine(["ddlsim-reference", *(f"--cfg={item}" for item in MODELS[str(data["model"])]),
                             "--log=root.thres:critical"])
    zone = engine.netzone_root.add_netzone_full("fabric")
    control = zone.add_host("control", 1.0)
    links = [zone.add_link(f"resource{r}", float(capacity) / BITS_PER_BYTE)
             for r, capacity in enumerate(data["capacity_bps"])]
    senders = {int(node): zone.add_host(f"send{node}", 1.0) for node in np.unique(data["src_node"])}
    receivers = {int(node): zone.add_host(f"recv{node}", 1.0) for node in np.unique(data["dst_node"])}
    indptr, resource, crossings = data["indptr"], data["resource"], data["crossings"]
    has_links = np.diff(indptr) > 0
    for pair in np.flatnonzero(has_links):
        path = [links[r] for r, count in zip(resource[indptr[pair]:indptr[pair + 1]],
                                             crossings[indptr[pair]:indptr[pair + 1]]) for _ in range(count)]
        if tcp_like:  # the pair's latency on a link of its own, which SimGrid weighs the share by
            path.append(zone.add_link(f"latency{pair}", PRIVATE_LINK_BYTES_PER_S)
                        .set_latency(float(data["latency_s"][pair])))
        zone.add_route(senders[int(data["src_node"][pair])], receivers[int(data["dst_node"][pair])], path)
    zone.seal()
    num_jobs = data["start_s"].size
    ends = {f"job{j}": np.full(data[f"job{j}_step_flows"].size, np.nan) for j in range(num_jobs)}

    def collective(j: int) -> None:
        simgrid.this_actor.sleep_until(float(data["start_s"][j]))
        first = 0
        for k, count in enumerate(data[f"job{j}_step_flows"].tolist()):
            pairs = data[f"job{j}_pair"][first:first + count]
            sizes = data[f"job{j}_bytes"][first:first + count]
            first += count
            begin = simgrid.Engine.clock + float(data[f"job{j}_setup_s"][k])
            latency = data["latency_s"][pairs]
            if tcp_like:  # LV08: the latency is on the route, except for flows SimGrid does not carry
                latency = np.where(has_links[pairs] & (np.rint(sizes) > 0), 0.0, latency)
            comms = simgrid.ActivitySet()
            for delay in np.unique(latency):
                simgrid.this_actor.sleep_until(begin + float(delay))
                for pair, size in zip(pairs[latency == delay].tolist(), sizes[latency == delay].tolist()):
                    whole_bytes = int(round(size))
                    if has_links[pair] and whole_bytes > 0:  # else done once its latency is paid
                        comms.push(simgrid.Comm.sendto_async(senders[int(data["src_node"][pair])],
                                                             receivers[int(data["dst_node"][pair])], whole_bytes))
            comms.wait_all()
            ends[f"job{j}"][k] = simgrid.Engine.clock

    for j in range(num_jobs):
        control.add_actor(f"collective{j}", collective, j)
    engine.run()
    return ends


def _main(argv: list[str]) -> int:
    source, target = argv
    with np.load(source) as loaded:
        data = {key: loaded[key] for key in loaded.files}
    ends = _simulate(data)
    unfinished = [name for name, times in ends.items() if np.isnan(times).any()]
    if unfinished:
        print(f"SimGrid left steps of {', '.join(unfinished)} unfinished", file=sys.stderr)
        return 1
    np.savez(target, **ends)
    return 0


if __name__ == "__main__":
    sys.exit(_main(sys.argv[1:]))
