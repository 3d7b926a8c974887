"""The images, built for the container tests from the repository's Dockerfile by
``images/build.sh`` (buildah, chroot isolation, vfs storage; the debootstrap base and the wheels
cached in build/images/), in a container storage of the session's own that is removed with
everything in it when the session ends.

Rootful podman and buildah are needed; where they are missing the tests skip, saying why.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOLS = ("podman", "buildah", "runc", "debootstrap")
SERVICE_IMAGE = "localhost/pafka:container-test"
SPARK_IMAGE = "localhost/pafka-spark:container-test"
BASE_IMAGE = "localhost/pafka-base:bookworm-py3.11"


def unavailable() -> str | None:
    """Why rootful containers cannot run here, or None."""
    if os.geteuid() != 0:
        return "rootful podman/buildah need root (vfs storage, runc, host network)"
    missing = [tool for tool in TOOLS if shutil.which(tool) is None]
    if missing:
        return f"missing {', '.join(missing)} (apt-get install {' '.join(missing)})"
    return None


@dataclass(frozen=True)
class Images:
    """Built images in a private storage; ``podman(...)`` runs podman on it."""

    env: dict[str, str]
    build_seconds: dict[str, float]

    def podman(
        self, *args: str, timeout_s: float = 120, check: bool = True
    ) -> subprocess.CompletedProcess[str]:
        done = subprocess.run(
            ["podman", *args], env=self.env, capture_output=True, text=True, timeout=timeout_s
        )
        if check and done.returncode != 0:
            raise AssertionError(f"podman {' '.join(args)}: {done.stderr[-2000:]}")
        return done

    def size_bytes(self, image: str) -> int:
        return int(self.podman("image", "inspect", "--format", "{{.Size}}", image).stdout)


@pytest.fixture(scope="session")
def images(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Images]:
    reason = unavailable()
    if reason is not None:
        pytest.skip(reason)
    store = tmp_path_factory.mktemp("containers")
    conf = store / "storage.conf"
    conf.write_text(
        f'[storage]\ndriver = "vfs"\ngraphroot = "{store / "root"}"\nrunroot = "{store / "run"}"\n'
    )
    env = {
        **os.environ,
        "CONTAINERS_STORAGE_CONF": str(conf),
        "STORAGE_DRIVER": "vfs",
        "PYTHON": sys.executable,
    }
    built = Images(env, {})
    try:
        for kind, tag in (("service", SERVICE_IMAGE), ("spark", SPARK_IMAGE)):
            started = time.monotonic()
            done = subprocess.run(
                [str(ROOT / "images" / "build.sh"), kind, tag],
                env=env,
                cwd=ROOT,
                capture_output=True,
                text=True,
                timeout=1500,
            )
            assert done.returncode == 0, (
                f"{kind} build:\n{done.stdout[-3000:]}{done.stderr[-3000:]}"
            )
            built.build_seconds[kind] = time.monotonic() - started
            print(f"\n{kind} image built in {built.build_seconds[kind]:.0f}s")
        yield built
    finally:
        # Everything the session created goes; the debootstrap base and wheels stay cached.
        built.podman("rm", "--all", "--force", "--time", "0", check=False)
        subprocess.run(["buildah", "rm", "--all"], env=env, capture_output=True, timeout=120)
        built.podman("rmi", "--all", "--force", check=False, timeout_s=300)
        shutil.rmtree(store, ignore_errors=True)
