"""Publisher and subscriber over real ZeroMQ sockets on loopback."""

import asyncio
import threading
import time
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


def test_a_message_larger_than_the_length_field_can_describe_is_never_taken():
    """The contract's u16 `length` bounds a payload at 65535 bytes: a 16 MB message is dropped and counted as a
    `field` error, and the subscriber goes on with the messages after it on the same connection."""

    async def scenario() -> None:
        publisher = Publisher("tcp://127.0.0.1:0")
        subscriber = Subscriber(publisher.endpoint)
        await _settle(publisher, subscriber)
        last = subscriber.tracker.last[BASE.key][0]
        huge = encode(replace(BASE, seq=last + 1)) + bytes(16 * 1024 * 1024)
        publisher._socket.send_multipart([BASE.key.topic(), huge])
        publisher.send(replace(BASE, seq=last + 2))
        received = await asyncio.wait_for(subscriber.receive(), 5)
        assert received.seq == last + 2  # the huge one (seq last + 1) was not taken
        assert subscriber.tracker.errors == {"field": 1}
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


# Sends with nobody listening, and the time they may take: encoding and a non-blocking send cost about 5 us here
# (0.25 s for all), so 5 s, 100 us a send, leaves a slow CI machine 20 times that, while a send that waits on a
# peer (a blocking or timed send, a socket type that queues for absent peers) takes milliseconds or forever.
NO_SUBSCRIBER_SENDS = 50_000
NO_SUBSCRIBER_BOUND_S = 5.0


def test_publisher_never_blocks_without_subscribers():
    # The sends run in a thread so that a send blocked for good fails the test at the bound: a signal (pytest's
    # timeout) does not interrupt a blocking ZeroMQ send. Terminating the context ends such a send with ETERM.
    context = zmq.Context()
    publisher = Publisher("tcp://127.0.0.1:0", context=context)
    messages = [replace(BASE, seq=seq) for seq in range(NO_SUBSCRIBER_SENDS)]
    elapsed: list[float] = []

    def send_all() -> None:
        try:
            start = time.perf_counter()
            for message in messages:
                publisher.send(message)
            elapsed.append(time.perf_counter() - start)
        except zmq.ContextTerminated:
            pass
        finally:
            publisher.close()

    sender = threading.Thread(target=send_all, daemon=True)
    sender.start()
    sender.join(NO_SUBSCRIBER_BOUND_S)
    blocked = sender.is_alive()
    context.term()
    sender.join(10)
    assert not blocked and elapsed, f"{NO_SUBSCRIBER_SENDS} sends did not finish in {NO_SUBSCRIBER_BOUND_S} s"
    assert elapsed[0] < NO_SUBSCRIBER_BOUND_S
    assert publisher.dropped == 0  # PUB discards for absent subscribers; a send refused (zmq.Again) counts here


def test_receive_ready_takes_a_plain_context_and_names_the_other_way():
    plain = zmq.Context()
    waiting = Subscriber("tcp://127.0.0.1:9", context=plain)
    assert waiting.receive_ready() == [] and not waiting.pending  # nothing queued: returns at once
    awaited = Subscriber("tcp://127.0.0.1:9")  # the default asyncio context: its receives are awaited
    with pytest.raises(TypeError, match="await receive_burst"):
        awaited.receive_ready()
    waiting.close()
    awaited.close()
    plain.term()
