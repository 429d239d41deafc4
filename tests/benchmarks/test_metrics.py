"""``benchmarks/rebalancer.py`` ``counted_by``: the one way the benchmarks count a component's requests (by method),
reconciles (by controller) and collections (by generation) between two scrapes of its /metrics."""

from __future__ import annotations

from benchmarks.rebalancer import counted_by

BEFORE = [("rest_client_requests_total", 'code="200",host="h",method="GET"', 3.0),
          ("rest_client_requests_total", 'code="200",host="h",method="PUT"', 1.0)]
AFTER = [("rest_client_requests_total", 'code="200",host="h",method="GET"', 5.0),
         ("rest_client_requests_total", 'code="409",host="h",method="PUT"', 2.0),
         ("rest_client_requests_total", 'code="200",host="h",method="PUT"', 4.0),
         ("rest_client_requests_total", 'code="200",host="h"', 1.0),
         ("controller_runtime_reconcile_total", 'controller="bindingStatus",result="success"', 7.0),
         ("controller_runtime_reconcile_total", 'controller="bindingStatus",result="error"', 1.0),
         ("controller_runtime_reconcile_total", 'controller="other",result="success"', 9.0)]


def test_counts_since_the_earlier_scrape_by_the_label() -> None:
    assert counted_by(AFTER, "rest_client_requests_total", "method", BEFORE) == {"GET": 2.0, "PUT": 5.0, "?": 1.0}
    assert counted_by(AFTER, "rest_client_requests_total", "method") == {"GET": 5.0, "PUT": 6.0, "?": 1.0}
    assert counted_by(AFTER, "controller_runtime_reconcile_total", "controller") == {"bindingStatus": 8.0,
                                                                                     "other": 9.0}


def test_a_label_is_matched_by_its_whole_name() -> None:
    samples = [("m", 'xmethod="A",method="B"', 1.0)]
    assert counted_by(samples, "m", "method") == {"B": 1.0}
    assert counted_by(samples, "absent", "method") == {}
