"""confluent-kafka (librdkafka) driver of the compatibility suite, for producing to a topic
nobody created: ``confluent_driver.py OP 'JSON'`` (the contract is in tests/compat/drivers.py)."""

from __future__ import annotations

import json
import sys
import time
from typing import Any

from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition


def produce(a: dict[str, Any]) -> dict[str, Any]:
    producer = Producer(
        {
            "bootstrap.servers": a["bootstrap"],
            "acks": "all",
            "compression.type": a.get("codec", "none"),
            "message.timeout.ms": 30000,
        }
    )
    errors: list[Any] = []
    for r in a["records"]:
        producer.produce(
            a["topic"],
            key=r["key"].encode(),
            value=r["value"].encode(),
            partition=r["partition"],
            on_delivery=lambda err, _msg: errors.append(err) if err else None,
        )
    if producer.flush(40) or errors:
        raise KafkaException(errors[0] if errors else "records left undelivered")
    return {"produced": len(a["records"])}


def consume(a: dict[str, Any]) -> dict[str, Any]:
    consumer = Consumer(
        {"bootstrap.servers": a["bootstrap"], "group.id": "unused", "enable.auto.commit": False}
    )
    consumer.assign([TopicPartition(a["topic"], a["partition"], a["offset"])])
    got: list[dict[str, Any]] = []
    deadline = time.monotonic() + 60
    try:
        while len(got) < a["count"] and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            if msg.error():
                raise KafkaException(msg.error())
            got.append(
                {
                    "partition": msg.partition(),
                    "offset": msg.offset(),
                    "key": msg.key().decode(),
                    "value": msg.value().decode(),
                }
            )
        return {"records": got}
    finally:
        consumer.close()


def main() -> None:
    op, raw = sys.argv[1:3]
    print(json.dumps({"produce": produce, "consume": consume}[op](json.loads(raw))))


if __name__ == "__main__":
    main()
