"""Compile and run small Java programs against Apache Kafka's own jars (Maven Central).

The tests that hold groupcoord to Kafka's Java code (``tests/assignors/JavaAssignors.java``:
Kafka's assignors; ``tests/javaclients/*.java``: ``KafkaConsumer`` and ``Admin`` against
``groupcoord serve``) are single-file programs in the default package. ``command(source,
version)`` compiles one against the classpath ``tools/kafka_broker.py`` resolves through
Maven (the broker's, which holds kafka-clients of the same version, jackson and log4j2)
and returns the ``java`` command line that runs it. The classes are cached under
``~/.cache/groupcoord/java/`` keyed by a hash of the source, the Kafka version and the
javac version, so a second run compiles nothing. By hand::

    python tools/kafka_java.py tests/assignors/JavaAssignors.java   # prints the command

Needs a JDK (javac) and mvn.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from kafka_broker import classpath

CACHE = Path.home() / ".cache" / "groupcoord" / "java"


def _javac_version(javac: str) -> str:
    done = subprocess.run([javac, "-version"], capture_output=True, text=True, check=True)
    return (done.stdout + done.stderr).strip()


def compiled(source: Path, version: str) -> Path:
    """The directory holding ``source``'s classes, compiled against Kafka ``version``."""
    javac = shutil.which("javac")
    if javac is None:
        raise RuntimeError(f"compiling {source.name} needs javac (a JDK) on PATH")
    key = hashlib.sha256()
    for part in (source.read_bytes(), version.encode(), _javac_version(javac).encode()):
        key.update(part)
        key.update(b"\0")
    out = CACHE / f"{source.stem}-{key.hexdigest()[:16]}"
    if (out / ".complete").exists():
        return out
    work = out.with_name(f"{out.name}.tmp-{os.getpid()}")
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir(parents=True)
    done = subprocess.run(
        [javac, "-Xlint:none", "-d", str(work), "-cp", classpath(version), str(source)],
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        shutil.rmtree(work, ignore_errors=True)
        raise RuntimeError(f"javac {source} against Kafka {version} failed:\n{done.stderr}")
    (work / ".complete").write_text(str(source) + "\n")
    try:
        work.rename(out)
    except OSError:
        # another process finished the same compilation first; its classes are the same
        shutil.rmtree(work, ignore_errors=True)
    return out


def command(source: Path, version: str, *args: str, jvm_args: tuple[str, ...] = ()) -> list[str]:
    """``java ... Main args``: runs ``source`` (main class = file name) on Kafka ``version``."""
    classes = compiled(source, version)
    java = shutil.which("java") or "java"
    return [
        java, "-Xmx256m", "-XX:TieredStopAtLevel=1", "-Djava.net.preferIPv4Stack=true",
        *jvm_args, "-cp", f"{classes}{os.pathsep}{classpath(version)}", source.stem, *args,
    ]  # fmt: skip


def tool_command(version: str, artifact: str, main: str, *args: str) -> list[str]:
    """``java ... main args`` on ``org.apache.kafka:artifact:version``'s classpath: one of
    Kafka's own command line tools, e.g. ``("4.3.1", "kafka-tools",
    "org.apache.kafka.tools.consumer.group.ConsumerGroupCommand", "--list", ...)``, what
    ``bin/kafka-consumer-groups.sh`` runs."""
    java = shutil.which("java") or "java"
    return [
        java, "-Xmx256m", "-XX:TieredStopAtLevel=1", "-Djava.net.preferIPv4Stack=true",
        "-cp", classpath(version, artifact), main, *args,
    ]  # fmt: skip


def main() -> None:
    import argparse

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("source", type=Path)
    parser.add_argument("--version", default="4.4.0", help="Kafka version (Maven Central)")
    args = parser.parse_args()
    print(" ".join(command(args.source.resolve(), args.version)))


if __name__ == "__main__":
    main()
