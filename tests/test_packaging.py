"""configs/ and profiles/ ship as the package data ddlsim.configs and ddlsim.profiles (pyproject.toml),
found through `ddlsim.core.resources`; a built wheel holds every file of both trees and runs from anywhere."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
import tomllib
import zipfile
from importlib import resources as importlib_resources
from pathlib import Path

import pytest
from setuptools import find_packages

from ddlsim.core import resources

ROOT = Path(__file__).resolve().parents[1]
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
DATA_PACKAGES = {"ddlsim.configs": "configs", "ddlsim.profiles": "profiles"}
EXAMPLE_PACKAGES = {"ddlsim.examples": "examples"}
PLUGIN_PACKAGES = {"hydra_plugins.ddlsim_sweeper"}  # in Hydra's namespace package, which find_packages skips


def _shipped_files(directory: str) -> set[str]:
    """Every file of a data tree that the package must carry (caches and bytecode aside)."""
    base = ROOT / directory
    return {path.relative_to(base).as_posix() for path in base.rglob("*")
            if path.is_file() and "__pycache__" not in path.parts and path.suffix != ".pyc"}


def test_the_shipped_trees_are_found_through_importlib_resources() -> None:
    assert (resources.configs_dir() / "config.yaml").is_file()
    assert (resources.config_file("display.yaml")).is_file()
    assert (resources.config_file("reference", "papers.yaml")).is_file()
    assert any(resources.profiles_dir().rglob("*.csv"))
    assert resources.require_configs() == resources.configs_dir()


def test_a_data_tree_of_another_checkout_is_not_taken(monkeypatch, tmp_path) -> None:
    """An editable install of another checkout registers its own ddlsim.configs; this ddlsim
    must keep reading the trees that belong to it."""
    real_files = importlib_resources.files
    (tmp_path / "configs").mkdir()

    def files(package):
        return tmp_path / "configs" if package == "ddlsim.configs" else real_files(package)

    monkeypatch.setattr(resources.resources, "files", files)
    package_dir = Path(str(real_files("ddlsim")))
    assert resources.configs_dir() != tmp_path / "configs"
    assert resources.configs_dir() in (package_dir / "configs", package_dir.parent / "configs")


def test_pyproject_lists_every_package_and_maps_the_data_trees() -> None:
    found = set(find_packages(where=str(ROOT), include=["ddlsim*"]))
    examples = {"ddlsim." + name for name in find_packages(where=str(ROOT), include=["examples*"])}
    assert set(SETUPTOOLS["packages"]) == found | set(DATA_PACKAGES) | examples | PLUGIN_PACKAGES
    assert all((ROOT / package.replace(".", "/") / "__init__.py").is_file() for package in PLUGIN_PACKAGES)
    assert SETUPTOOLS["package-dir"] == DATA_PACKAGES | EXAMPLE_PACKAGES


@pytest.mark.parametrize(("package", "directory"), sorted(DATA_PACKAGES.items()))
def test_package_data_patterns_cover_every_file(package: str, directory: str) -> None:
    covered = {"__init__.py"}
    for pattern in SETUPTOOLS["package-data"][package]:
        covered |= {path.relative_to(ROOT / directory).as_posix() for path in (ROOT / directory).glob(pattern)
                    if path.is_file()}
    missing = _shipped_files(directory) - covered
    assert not missing, f"add a package-data pattern for {sorted(missing)}"


def test_the_mit_license_is_the_one_the_metadata_names() -> None:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    assert project["license"] == "MIT" and project["license-files"] == ["LICENSE"]
    text = (ROOT / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n") and "WITHOUT WARRANTY OF ANY KIND" in text


def test_the_torch_range_admits_the_readmes_torch_and_no_newer_major() -> None:
    """install.sh installs torch==<the README's version> first; pip must keep it, not replace it."""
    from packaging.requirements import Requirement

    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    (torch,) = [Requirement(text) for text in project["dependencies"] if Requirement(text).name == "torch"]
    pinned = re.search(r"pip_install torch==(\S+)", (ROOT / "scripts" / "install.sh").read_text()).group(1)
    assert f"`torch=={pinned}`" in (ROOT / "README.md").read_text(encoding="utf-8")
    assert torch.specifier.contains(pinned) and torch.specifier.contains(f"{pinned}+cpu")
    assert not torch.specifier.contains("3.0.0") and not torch.specifier.contains("2.4.0")


def _fake_wheel(path: Path, requires: list[str]) -> Path:
    with zipfile.ZipFile(path, "w") as wheel:
        wheel.writestr("ddlsim-0.1.0.dist-info/METADATA", "Metadata-Version: 2.4\nName: ddlsim\nVersion: 0.1.0\n"
                       + "".join(f"Requires-Dist: {requirement}\n" for requirement in requires))
    return path


def test_install_sh_takes_a_wheels_dependencies_without_a_checkout(tmp_path: Path) -> None:
    """`install.sh --wheel` read scripts/requirements.py and pyproject.toml from a checkout."""
    alone = tmp_path / "alone"
    alone.mkdir()
    shutil.copy2(ROOT / "scripts" / "install.sh", alone / "install.sh")
    wheel = _fake_wheel(tmp_path / "ddlsim-0.1.0-py3-none-any.whl",
                        ["torch<3,>=2.13", "torchrec<1.9,>=1.8", "numpy>=1.26", 'tomli; python_version < "3.11"',
                         'pytest>=8; extra == "dev"', 'sphinx; extra == "docs"'])
    done = subprocess.run(["bash", str(alone / "install.sh"), "--print-requirements", "--wheel", str(wheel), "dev"],
                          cwd=alone, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    listed = done.stdout.splitlines()
    assert listed[:3] == ["numpy>=1.26", 'tomli; python_version < "3.11"', "pytest>=8"]
    # then torchrec's own requirements when it is installed, never the builds install.sh installs first
    assert not {line.split("<")[0].split(">")[0].split("=")[0] for line in listed} & {
        "torch", "torchrec", "fbgemm-gpu", "fbgemm-gpu-cpu", "sphinx"}


def test_install_sh_lists_the_same_dependencies_from_the_checkout() -> None:
    done = subprocess.run(["bash", str(ROOT / "scripts" / "install.sh"), "--print-requirements", "dev"],
                          capture_output=True, text=True, timeout=120, check=True)
    project = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["project"]
    expected = [r for r in project["dependencies"] + project["optional-dependencies"]["dev"]
                if not r.startswith(("torch>", "torchrec"))]
    assert done.stdout.splitlines()[:len(expected)] == expected


def _copy_sources(destination: Path) -> Path:
    destination.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, destination / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("ddlsim", "hydra_plugins", *DATA_PACKAGES.values(), *EXAMPLE_PACKAGES.values()):
        shutil.copytree(ROOT / name, destination / name, ignore=ignore)
    return destination


@pytest.mark.slow
def test_the_built_wheel_carries_every_data_file_and_runs_from_another_directory(tmp_path: Path) -> None:
    source = _copy_sources(tmp_path / "source")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(tmp_path / "dist"), str(source)], check=True, timeout=600)
    wheel = next((tmp_path / "dist").glob("ddlsim-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
    assert "ddlsim-0.1.0.dist-info/licenses/LICENSE" in names
    for package, directory in DATA_PACKAGES.items():
        prefix = package.replace(".", "/")
        missing = {name for name in _shipped_files(directory) if f"{prefix}/{name}" not in names}
        assert not missing, f"{wheel.name} lacks {directory}/{sorted(missing)}"

    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target", str(site),
                    str(wheel)], check=True, timeout=600)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    environment = {**os.environ, "PYTHONPATH": str(site)}
    probe = ("import ddlsim, ddlsim.core.resources as r; from ddlsim.app.config_store import group_options; "
             "print(r.configs_dir()); print(r.profiles_dir()); print(len(group_options()['experiment']))")
    result = subprocess.run([sys.executable, "-c", probe], cwd=elsewhere, env=environment, capture_output=True,
                            text=True, timeout=600, check=True)
    configs, profiles, experiments = result.stdout.split()
    assert Path(configs) == site / "ddlsim" / "configs" and Path(profiles) == site / "ddlsim" / "profiles"
    assert int(experiments) == len(list((ROOT / "configs" / "experiment").glob("*.yaml")))

    # The default entry of model=program is importable away from a checkout (issue 25).
    probe = ("from ddlsim.capture.api import resolve_entry; "
             "print(resolve_entry('examples.ddp_cnn:build').__module__)")
    result = subprocess.run([sys.executable, "-c", probe], cwd=elsewhere, env=environment, capture_output=True,
                            text=True, timeout=600, check=True)
    assert result.stdout.split() == ["ddlsim.examples.ddp_cnn"]
    # a sweep runs from the wheel: its sweeper plugin was installed with it
    sweep = subprocess.run([sys.executable, "-m", "ddlsim.app.cli", "-m", "experiment=single", "task=collective",
                            "seed=1,2", f"hydra.sweep.dir={tmp_path / 'sweep'}", "report.plots=false"],
                           cwd=elsewhere, env=environment, capture_output=True, text=True, timeout=600)
    assert sweep.returncode == 0, sweep.stderr
