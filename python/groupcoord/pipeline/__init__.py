"""The data pipeline on Spark (PySpark): scenario sweeps over the simulator and rebalance
analytics over broker logs, each ending in a report (HTML + PNG plots + CSV tables).

Install with ``pip install 'groupcoord[pipeline]'`` (PySpark, pyarrow, matplotlib; Spark needs
Java 17+). Jobs run on the embedded default, ``local[*]``; ``--master`` or ``SPARK_MASTER``
runs the same job on a cluster.
"""
