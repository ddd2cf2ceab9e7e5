from rnf_bridge.liveness import Running, Stalled, Stream, Waiting, assess


def test_peers_that_sent_nothing_yet_are_waited_for():
    streams = [Stream("srsenb", 1920, 10.0), Stream("ue1", 0, None), Stream("ue2", 0, None)]
    assert assess(streams, now=100.0, timeout_s=1.0) == Waiting(("ue1", "ue2"))


def test_samples_within_the_timeout_are_running():
    streams = [Stream("srsenb", 1920, 10.0), Stream("ue1", 1920, 9.5)]
    assert assess(streams, now=10.9, timeout_s=1.0) == Running()


def test_a_stall_names_the_stream_that_stopped_first():
    streams = [Stream("srsenb", 50_000, 10.004), Stream("ue1", 48_000, 10.005), Stream("ue2", 40_000, 10.001)]
    verdict = assess(streams, now=12.005, timeout_s=2.0)
    assert isinstance(verdict, Stalled) and verdict.first == "ue2" and abs(verdict.idle_s - 2.0) < 1e-9
