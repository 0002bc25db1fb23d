"""Human units: each parser against hand-computed values, and a property over generated text."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mpsched.scenario.units import parse_fraction, parse_queue, parse_rate_bps, parse_size_bytes, parse_time_ns


@pytest.mark.parametrize(
    "text, bps",
    [("150Mbit", 150_000_000), ("150 Mbit/s", 150_000_000), ("150Mbps", 150_000_000), ("1.5Gbit", 1_500_000_000),
     ("500kbit", 500_000), ("10MB/s", 80_000_000), (12_000, 12_000), ("12000", 12_000)],
)
def test_rates(text, bps):
    assert parse_rate_bps(text) == bps


@pytest.mark.parametrize(
    "text, ns",
    [("200ms", 200_000_000), ("1.5s", 1_500_000_000), ("10us", 10_000), ("250ns", 250), ("2min", 120_000_000_000),
     (3, 3_000_000_000), (0.25, 250_000_000), ("7.5ms", 7_500_000)],
)
def test_times(text, ns):
    assert parse_time_ns(text) == ns


@pytest.mark.parametrize(
    "text, n",
    [("64KiB", 65_536), ("64KB", 64_000), ("64kB", 64_000), ("1.5MB", 1_500_000), ("1MiB", 1_048_576),
     ("1500B", 1500), (1448, 1448), ("2GiB", 2 * 1024**3)],
)
def test_sizes(text, n):
    assert parse_size_bytes(text) == n


def test_fractions_and_queues():
    assert parse_fraction("10%") == pytest.approx(0.1)
    assert parse_fraction(0.02) == pytest.approx(0.02)
    assert parse_queue("100 packets").packets == 100
    assert parse_queue("100pkt").packets == 100
    assert parse_queue("250KB").bytes == 250_000
    assert parse_queue("1.5BDP").bdp == pytest.approx(1.5)
    assert parse_queue("unlimited").unlimited
    assert parse_queue("50ms").time_ns == 50_000_000 and not parse_queue("50ms").unlimited


@pytest.mark.parametrize(
    "parser, bad",
    [(parse_rate_bps, "-5Mbit"), (parse_rate_bps, "5Mbyte"), (parse_rate_bps, "fast"), (parse_time_ns, "5 hours"),
     (parse_time_ns, "-1s"), (parse_size_bytes, "1XB"), (parse_size_bytes, True), (parse_fraction, "150%"),
     (parse_fraction, 2), (parse_queue, "3 parcels"), (parse_queue, "1.5 packets"), (parse_rate_bps, float("nan"))],
)
def test_bad_values_say_what_is_allowed(parser, bad):
    with pytest.raises(ValueError) as e:
        parser(bad)
    assert repr(bad) in str(e.value) or str(bad) in str(e.value)


@given(st.integers(0, 10**6), st.sampled_from([("k", 1e3), ("M", 1e6), ("G", 1e9)]), st.sampled_from(["bit", "bps", "bit/s"]))
def test_rate_text_matches_arithmetic(n, prefix, unit):
    assert parse_rate_bps(f"{n}{prefix[0]}{unit}") == round(n * prefix[1])


@given(st.integers(0, 10**6), st.sampled_from([("ns", 1), ("us", 10**3), ("ms", 10**6), ("s", 10**9)]))
def test_time_text_matches_arithmetic(n, unit):
    assert parse_time_ns(f"{n}{unit[0]}") == n * unit[1]


@given(st.integers(0, 10**6), st.sampled_from([("KB", 1000), ("KiB", 1024), ("MB", 10**6), ("MiB", 2**20), ("B", 1)]))
def test_size_text_matches_arithmetic(n, unit):
    assert parse_size_bytes(f"{n} {unit[0]}") == n * unit[1]
