"""groupcoord: Kafka consumer-group coordination for Python, with its hot path in Rust."""
