"""The asyncio Kafka-protocol server shell and its topic log."""
