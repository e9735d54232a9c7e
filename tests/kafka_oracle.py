"""Apache Kafka as the oracle: the real broker and Kafka's Java client from Maven Central.

Not a test module. ``tests/conftest.py`` builds the ``kafka_broker`` fixtures on it; tests
that need Kafka carry ``@pytest.mark.kafka`` and are skipped, with the reason, only when
Java (a JDK: some tests compile small programs) or Maven cannot be found. Anything else
that goes wrong (Maven Central unreachable, a broker that does not start) fails the test.

The broker itself is ``tools/kafka_broker.py`` (one implementation, used by the fixture
scripts in ``tools/`` too), the Java programs are compiled by ``tools/kafka_java.py``; they
are loaded from there by path, since ``tools/`` is not a package.
"""

from __future__ import annotations

import importlib.util
import shutil
import sys
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parent.parent
TOOLS = ROOT / "tools"

#: the newest Kafka (the new group coordinator) and the last 3.x (the Scala coordinator
#: many production clusters still run)
KAFKA_LATEST = "4.4.0"
KAFKA_3 = "3.9.2"


def missing_java_or_maven() -> str | None:
    """Why tests marked ``kafka`` cannot run here, or ``None`` when they can."""
    missing = [tool for tool in ("java", "javac", "mvn") if shutil.which(tool) is None]
    if not missing:
        return None
    return (
        f"needs {', '.join(missing)} on PATH for Apache Kafka's jars from Maven Central "
        "(apt-get install openjdk-17-jdk-headless maven; .ci/run installs them)"
    )


def kafka_broker_module() -> ModuleType:
    """``tools/kafka_broker.py`` as a module (cached in ``sys.modules``)."""
    return tools_module("kafka_broker")


def tools_module(name: str) -> ModuleType:
    """``tools/<name>.py`` as a module (cached in ``sys.modules``): ``kafka_broker``, or
    ``kafka_java`` (compiles and runs the tests' small Java programs)."""
    module = sys.modules.get(name)
    if module is not None:
        return module
    spec = importlib.util.spec_from_file_location(name, TOOLS / f"{name}.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
