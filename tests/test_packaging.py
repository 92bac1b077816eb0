"""configs/ and profiles/ ship as the package data ddlsim.configs and ddlsim.profiles (pyproject.toml),
found through `ddlsim.resources`; a built wheel holds every file of both trees and runs from anywhere."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tomllib
import zipfile
from importlib import resources as importlib_resources
from pathlib import Path

import pytest
from setuptools import find_packages

from ddlsim import resources

ROOT = Path(__file__).resolve().parents[1]
SETUPTOOLS = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))["tool"]["setuptools"]
DATA_PACKAGES = {"ddlsim.configs": "configs", "ddlsim.profiles": "profiles"}


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
    assert set(SETUPTOOLS["packages"]) == found | set(DATA_PACKAGES)
    assert SETUPTOOLS["package-dir"] == DATA_PACKAGES


@pytest.mark.parametrize(("package", "directory"), sorted(DATA_PACKAGES.items()))
def test_package_data_patterns_cover_every_file(package: str, directory: str) -> None:
    covered = {"__init__.py"}
    for pattern in SETUPTOOLS["package-data"][package]:
        covered |= {path.relative_to(ROOT / directory).as_posix() for path in (ROOT / directory).glob(pattern)
                    if path.is_file()}
    missing = _shipped_files(directory) - covered
    assert not missing, f"add a package-data pattern for {sorted(missing)}"


def _copy_sources(destination: Path) -> Path:
    destination.mkdir(parents=True)
    for name in ("pyproject.toml", "README.md"):
        shutil.copy2(ROOT / name, destination / name)
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for name in ("ddlsim", *DATA_PACKAGES.values()):
        shutil.copytree(ROOT / name, destination / name, ignore=ignore)
    return destination


@pytest.mark.slow
def test_the_built_wheel_carries_every_data_file_and_runs_from_another_directory(tmp_path: Path) -> None:
    source = _copy_sources(tmp_path / "source")
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "--wheel-dir", str(tmp_path / "dist"), str(source)], check=True, timeout=600)
    wheel = next((tmp_path / "dist").glob("ddlsim-*.whl"))
    names = set(zipfile.ZipFile(wheel).namelist())
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
    probe = ("import ddlsim, ddlsim.resources as r; from ddlsim.config_store import group_options; "
             "print(r.configs_dir()); print(r.profiles_dir()); print(len(group_options()['experiment']))")
    result = subprocess.run([sys.executable, "-c", probe], cwd=elsewhere, env=environment, capture_output=True,
                            text=True, timeout=600, check=True)
    configs, profiles, experiments = result.stdout.split()
    assert Path(configs) == site / "ddlsim" / "configs" and Path(profiles) == site / "ddlsim" / "profiles"
    assert int(experiments) == len(list((ROOT / "configs" / "experiment").glob("*.yaml")))
