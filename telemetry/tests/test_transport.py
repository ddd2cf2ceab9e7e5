"""Publisher and subscriber over real ZeroMQ sockets on loopback."""

import asyncio
from dataclasses import replace

import pytest
import zmq
from rnf_telemetry.message import encode
from rnf_telemetry.topic import topic_filter
from rnf_telemetry.transport import Publisher, Subscriber
from rnf_telemetry.vectors import VALID

BASE = VALID["basic"]


async def _settle(publisher: Publisher, subscriber: Subscriber) -> None:
    """PUB/SUB drops what is sent before the subscription arrives: send probes until one gets through."""
    for seq in range(1, 200):
        publisher.send(replace(BASE, seq=seq))
        try:
            await asyncio.wait_for(subscriber.receive(), 0.02)
            return
        except TimeoutError:
            continue
    raise AssertionError("subscriber never connected")


def test_bad_messages_are_counted_and_never_stop_the_subscriber():
    async def scenario() -> None:
        publisher = Publisher("tcp://127.0.0.1:0")
        subscriber = Subscriber(publisher.endpoint)
        await _settle(publisher, subscriber)
        last = subscriber.tracker.last[BASE.key][0]
        raw = publisher._socket  # the same wire, carrying bytes the codec would never produce
        raw.send_multipart([BASE.key.topic(), encode(BASE)[:50]])
        raw.send_multipart([BASE.key.topic(), b"\x02" + encode(BASE)[1:]])
        raw.send_multipart([b"tlm1/garbage"])
        raw.send_multipart([b"tlm1/00000001/0099/03", encode(BASE)])
        publisher.send(replace(BASE, seq=last))
        publisher.send(replace(BASE, seq=last + 1))
        received = await asyncio.wait_for(subscriber.receive(), 2)
        assert received.seq == last + 1
        assert subscriber.tracker.errors == {"truncated": 1, "version": 1, "frames": 1, "topic": 1, "duplicate": 1}
        publisher.close()
        subscriber.close()

    asyncio.run(scenario())


def test_subscription_filters_by_ue():
    async def scenario() -> None:
        publisher = Publisher("tcp://127.0.0.1:0")
        subscriber = Subscriber(publisher.endpoint, topic_filter(cell_id=1, rnti=0x47))
        other, wanted = replace(BASE, rnti=0x46), replace(BASE, rnti=0x47)
        for seq in range(100):
            publisher.send(replace(other, seq=seq))
            publisher.send(replace(wanted, seq=seq))
            await asyncio.sleep(0.005)
        first = await asyncio.wait_for(subscriber.receive(), 2)
        assert first.rnti == 0x47
        publisher.close()
        subscriber.close()

    asyncio.run(scenario())


def test_subscriber_reconnects_when_the_publisher_restarts_on_the_same_endpoint():
    async def scenario() -> None:
        publisher = Publisher("tcp://127.0.0.1:0")
        endpoint = publisher.endpoint
        subscriber = Subscriber(endpoint)
        await _settle(publisher, subscriber)
        publisher.close()
        await asyncio.sleep(0.2)
        restarted = Publisher(endpoint)
        for _ in range(300):
            restarted.send(replace(BASE, seq=0))
            try:
                message = await asyncio.wait_for(subscriber.receive(), 0.02)
                break
            except TimeoutError:
                continue
        else:
            raise AssertionError("no message after the publisher restarted")
        assert message.seq == 0
        restarted.close()
        subscriber.close()

    asyncio.run(scenario())


def test_busy_endpoint_is_a_clear_error():
    first = Publisher("tcp://127.0.0.1:0")
    with pytest.raises(OSError, match="cannot bind telemetry publisher"):
        Publisher(first.endpoint)
    first.close()


def test_publisher_never_blocks_without_subscribers():
    publisher = Publisher("tcp://127.0.0.1:0", context=zmq.Context())
    for seq in range(50_000):
        publisher.send(replace(BASE, seq=seq & 0xFFFFFFFF))
    publisher.close()
