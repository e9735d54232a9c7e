"""The SparkSession set-up: local sessions compile Spark's large generated methods."""

from __future__ import annotations

from typing import Any

from groupcoord.pipeline.session import LOCAL_JVM_OPTIONS, jvm_config


def test_local_masters_get_the_jvm_option_after_the_callers() -> None:
    for url in ("local", "local[2]", "local[*]", "local-cluster[2,1,1024]"):
        config = jvm_config(url, {"spark.driver.extraJavaOptions": "-Dx=1"})
        assert config["spark.driver.extraJavaOptions"] == f"-Dx=1 {LOCAL_JVM_OPTIONS}"
        assert config["spark.executor.extraJavaOptions"] == LOCAL_JVM_OPTIONS


def test_the_option_is_not_repeated_and_the_rest_of_config_is_kept() -> None:
    given = {"spark.driver.extraJavaOptions": LOCAL_JVM_OPTIONS, "spark.ui.enabled": "true"}
    config = jvm_config("local[1]", given)
    assert config["spark.driver.extraJavaOptions"] == LOCAL_JVM_OPTIONS
    assert config["spark.ui.enabled"] == "true"
    assert given == {"spark.driver.extraJavaOptions": LOCAL_JVM_OPTIONS, "spark.ui.enabled": "true"}


def test_cluster_masters_are_left_to_their_own_settings() -> None:
    for url in ("spark://host:7077", "yarn", "k8s://https://host:443"):
        assert jvm_config(url, {"spark.executor.memory": "2g"}) == {"spark.executor.memory": "2g"}
        assert jvm_config(url) == {}


def test_the_local_driver_jvm_runs_with_the_option(spark: Any) -> None:
    runtime = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    assert LOCAL_JVM_OPTIONS in list(runtime.getInputArguments())
