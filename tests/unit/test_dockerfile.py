"""The Dockerfile, checked as hadolint would (its rule ids in the test names).

It builds two images: the services (the default target, ``runtime``, the last stage) and the
Spark job image (``--target spark``). Every final stage (one no other stage builds on) gets the
same rules: pinned base, numeric non-root user, exec-form entrypoint, no compilers.

There is no Docker engine here, so the file is parsed: instructions joined across line
continuations, ``ARG`` defaults substituted into ``FROM``, then each rule checked per stage.
"""

from __future__ import annotations

import json
import re
import shlex
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from pafka.cli.main import build_parser
from pafka.spark import entrypoint

ROOT = Path(__file__).resolve().parents[2]
DOCKERFILE = ROOT / "Dockerfile"
SERVICES = ("broker", "controller", "gateway")
TARGETS = ("runtime", "spark")  # the images; the last one is what a plain `docker build` gives
# Debian packages a final stage may install: what the Spark image runs on, nothing to build with.
RUNTIME_PACKAGES = {"openjdk-17-jre-headless", "tini"}
COMPILERS = ("gcc", "g++", "clang", "build-essential", "make ", "cmake", "-dev ", "rustc", "cargo")


@dataclass(frozen=True)
class Instruction:
    keyword: str
    args: str
    line: int


@dataclass
class Stage:
    base: str
    name: str | None
    instructions: list[Instruction] = field(default_factory=list)

    def of(self, keyword: str) -> list[Instruction]:
        return [i for i in self.instructions if i.keyword == keyword]


def parse(text: str) -> tuple[dict[str, str], list[Stage]]:
    """Global ARG defaults and the stages, each with its instructions in order."""
    instructions: list[Instruction] = []
    pending: list[str] = []
    start = 0
    for number, raw in enumerate(text.splitlines(), 1):
        stripped = raw.strip()
        if not pending and (not stripped or stripped.startswith("#")):
            continue
        if pending and stripped.startswith("#"):
            continue
        if not pending:
            start = number
        if stripped.endswith("\\"):
            pending.append(stripped[:-1].strip())
            continue
        pending.append(stripped)
        keyword, _, args = " ".join(pending).partition(" ")
        instructions.append(Instruction(keyword.upper(), args.strip(), start))
        pending = []
    assert not pending, "the Dockerfile ends inside a line continuation"

    global_args: dict[str, str] = {}
    stages: list[Stage] = []
    for instruction in instructions:
        if instruction.keyword == "FROM":
            words = [w for w in instruction.args.split() if not w.startswith("--platform")]
            base = re.sub(r"\$\{(\w+)\}|\$(\w+)", lambda m: global_args[m[1] or m[2]], words[0])
            name = words[2] if len(words) == 3 and words[1].upper() == "AS" else None
            stages.append(Stage(base, name))
        elif not stages and instruction.keyword == "ARG":
            key, _, default = instruction.args.partition("=")
            global_args[key] = default
        elif stages:
            stages[-1].instructions.append(instruction)
    return global_args, stages


@pytest.fixture(scope="module")
def stages() -> list[Stage]:
    return parse(DOCKERFILE.read_text())[1]


def final_stages(stages: list[Stage]) -> list[Stage]:
    """Stages no other stage starts from or copies from: the images the file builds."""
    used = {s.base for s in stages} | {
        m[1] for s in stages for c in s.of("COPY") if (m := re.search(r"--from=(\S+)", c.args))
    }
    return [s for s in stages if s.name not in used]


def named(stages: list[Stage], name: str) -> Stage:
    (found,) = [s for s in stages if s.name == name]
    return found


def test_the_images_and_the_default_target(stages: list[Stage]) -> None:
    assert sorted(s.name or "" for s in final_stages(stages)) == sorted(TARGETS)
    assert stages[-1].name == "runtime", "a build without --target must give the service image"


def exec_form(args: str) -> list[str] | None:
    try:
        value = json.loads(args)
    except json.JSONDecodeError:
        return None
    return value if isinstance(value, list) and all(isinstance(v, str) for v in value) else None


def run_commands(stage: Stage) -> list[str]:
    return [i.args for i in stage.of("RUN")]


def test_multi_stage_with_a_named_build_stage(stages: list[Stage]) -> None:
    assert len(stages) >= 2
    names = [s.name for s in stages]
    for stage in stages[1:]:
        for copy in stage.of("COPY"):
            source = re.search(r"--from=(\S+)", copy.args)
            if source:
                assert source[1] in names[: stages.index(stage)], copy


@pytest.mark.parametrize("rule", ["DL3006", "DL3007"])
def test_every_base_is_pinned_to_a_full_version(stages: list[Stage], rule: str) -> None:
    for stage in stages:
        if stage.base in {s.name for s in stages}:
            continue
        image, _, digest = stage.base.partition("@")
        _, _, tag = image.rpartition(":")
        assert tag and "/" not in tag, f"{rule}: {stage.base} has no tag"
        assert tag != "latest", f"{rule}: {stage.base} uses latest"
        assert re.match(r"\d+\.\d+\.\d+", tag), f"{stage.base}: tag is not a full version"
        assert "slim" in tag, f"{stage.base}: not a slim base"
        if digest:
            assert re.fullmatch(r"sha256:[0-9a-f]{64}", digest), stage.base


@pytest.mark.parametrize("rule", ["DL3002"])
@pytest.mark.parametrize("target", TARGETS)
def test_final_stage_runs_as_a_numeric_non_root_user(
    stages: list[Stage], rule: str, target: str
) -> None:
    final = named(stages, target)
    users = final.of("USER")
    assert users, f"{rule}: {target} sets no USER"
    last = users[-1]
    uid, _, gid = last.args.partition(":")
    assert uid.isdigit() and int(uid) > 0, f"{rule}: USER {last.args} is not a numeric non-root uid"
    assert not gid or (gid.isdigit() and int(gid) > 0), last.args
    later = final.instructions[final.instructions.index(last) :]
    assert not [i for i in later if i.keyword == "RUN"], "RUN after USER runs as the service user"
    # The user exists in the image: Java (Hadoop's login) fails for a uid without a name.
    assert any(f"--uid {uid}" in run for run in run_commands(final)), target


def test_entrypoint_and_cmd_are_exec_form_and_start_a_service(stages: list[Stage]) -> None:
    final = named(stages, "runtime")
    (entrypoint,) = final.of("ENTRYPOINT")
    (cmd,) = final.of("CMD")
    entry_words, cmd_words = exec_form(entrypoint.args), exec_form(cmd.args)
    assert entry_words == ["pafka"], f"DL3025: ENTRYPOINT {entrypoint.args}"
    assert cmd_words is not None and cmd_words[0] in SERVICES, f"DL3025: CMD {cmd.args}"
    # The command names the image's services really answer to.
    for service in SERVICES:
        with pytest.raises(SystemExit) as exited:
            build_parser().parse_args([service, "--help"])
        assert exited.value.code == 0


def apt_packages(command: str) -> set[str]:
    """Packages an ``apt-get install`` names (options, shell words and the ``"$@"`` of the
    offline build's apt options left out)."""
    words = shlex.split(command.replace("&&", " && "))
    packages: set[str] = set()
    for i, word in enumerate(words):
        if word == "install" and i and words[i - 1] == "apt-get":
            for name in words[i + 1 :]:
                if name in ("&&", "||", ";"):
                    break
                if not name.startswith(("-", "$")):
                    packages.add(name.split("=")[0])
    return packages


@pytest.mark.parametrize("target", TARGETS)
def test_no_build_tools_or_package_installs_in_the_final_stage(
    stages: list[Stage], target: str
) -> None:
    final = named(stages, target)
    commands = " ".join(run_commands(final)) + " "
    for tool in (*COMPILERS, "pip install", "apk add"):
        assert tool not in commands, f"{target} installs {tool.strip()}"
    installed = set().union(*(apt_packages(c) for c in run_commands(final)))
    assert installed <= RUNTIME_PACKAGES, f"{target} installs {installed - RUNTIME_PACKAGES}"
    if target == "runtime":
        assert not installed, "the service image needs no Debian packages"


def test_spark_image_runs_jobs_on_kubernetes(stages: list[Stage]) -> None:
    spark = named(stages, "spark")
    # Java 17 from Debian, pyspark and the connector from the spark extra, in one virtualenv.
    installs = " ".join(run_commands(spark))
    assert "openjdk-17-jre-headless" in apt_packages(installs)
    builds = [s for s in stages if s.name == "spark-build"]
    assert builds and any('".[spark]"' in c for c in run_commands(builds[0]))
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert re.search(r"^spark = \[.*pyspark", pyproject, re.M)
    (venv,) = [c.args.split() for c in spark.of("COPY") if "--from=spark-build" in c.args]
    assert venv[1:] == ["/opt/pafka", "/opt/pafka"]

    # spark-jobs/ at a fixed path (the chart's SparkApplications name files under it).
    (jobs,) = [c.args.split() for c in spark.of("COPY") if c.args.startswith("spark-jobs")]
    assert jobs == ["spark-jobs", "/opt/pafka/spark-jobs"]
    env = " ".join(i.args for i in spark.of("ENV"))
    assert "SPARK_HOME=/opt/spark" in env
    assert "PYSPARK_PYTHON=/opt/pafka/bin/python" in env
    assert "PYSPARK_DRIVER_PYTHON=/opt/pafka/bin/python" in env
    assert "/opt/spark/conf" in installs, "the mount point of the driver's properties"

    # Exec form, PID 1 is tini, then the module that answers Spark's `driver` / `executor`.
    (entry,) = spark.of("ENTRYPOINT")
    words = exec_form(entry.args)
    assert words is not None, f"DL3025: ENTRYPOINT {entry.args}"
    assert words[:2] == ["/usr/bin/tini", "--"]
    assert apt_packages(installs) >= {"tini"}
    assert words[2:] == ["/opt/pafka/bin/python", "-m", entrypoint.__name__]
    (cmd,) = spark.of("CMD")
    cmd_words = exec_form(cmd.args)
    assert cmd_words is not None, f"DL3025: CMD {cmd.args}"
    assert entrypoint.command(cmd_words, {}) == cmd_words


@pytest.mark.parametrize("rule", ["DL3008", "DL3009", "DL3015", "DL3005"])
def test_apt_is_clean(stages: list[Stage], rule: str) -> None:
    for stage in stages:
        for command in run_commands(stage):
            if "apt-get" not in command:
                continue
            assert "upgrade" not in command, f"DL3005: {command}"
            if "install" in command:
                assert "--no-install-recommends" in command, f"DL3015: {command}"
                assert "rm -rf /var/lib/apt/lists" in command, f"DL3009: {command}"
                assert "-y" in command, command


@pytest.mark.parametrize("rule", ["DL3042"])
def test_pip_keeps_no_cache(stages: list[Stage], rule: str) -> None:
    for stage in stages:
        env = " ".join(i.args for i in stage.of("ENV"))
        for command in run_commands(stage):
            if "pip install" in command:
                assert "--no-cache-dir" in command or "PIP_NO_CACHE_DIR=1" in env, command


def test_run_hygiene(stages: list[Stage]) -> None:
    for stage in stages:
        for instruction in stage.instructions:
            assert instruction.keyword != "MAINTAINER", "DL4000"
            if instruction.keyword == "ADD":
                pytest.fail(f"DL3020: use COPY instead of ADD (line {instruction.line})")
            if instruction.keyword == "WORKDIR":
                assert instruction.args.startswith("/"), "DL3000: relative WORKDIR"
            if instruction.keyword == "RUN":
                words = shlex.split(instruction.args.replace("&&", " && "))
                assert "sudo" not in words, "DL3004"
                assert "cd" not in words, f"DL3003: use WORKDIR (line {instruction.line})"


def test_copied_sources_exist_and_survive_dockerignore(stages: list[Stage]) -> None:
    # The service image gets pafka/ and services/; spark-jobs/ goes only into the spark image.
    runtime_build = " ".join(c.args for c in named(stages, "build").of("COPY"))
    assert "spark-jobs" not in runtime_build
    ignore = (ROOT / ".dockerignore").read_text().split()
    allowed = {line[1:].rstrip("/") for line in ignore if line.startswith("!")}
    assert "**" in ignore, ".dockerignore should exclude everything not named"
    for stage in stages:
        for copy in stage.of("COPY"):
            if "--from=" in copy.args:
                continue
            *sources, _ = copy.args.split()
            for source in sources:
                assert (ROOT / source).exists(), source
                assert source.rstrip("/") in allowed, f"{source} is excluded by .dockerignore"
