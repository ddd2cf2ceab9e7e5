"""Sharing a UE's allowance among its connections: strict priority, then stride scheduling by tickets.

Paper 004 Sec. IV-B: "a combination of priority-based and ticket-based stride scheduling [Waldspurger and
Weihl]". Every connection has a priority (lower is served first, strictly) and a number of tickets. Within a
priority, each grant of up to one quantum advances the connection's *pass* by `STRIDE1 / tickets` scaled by
the bytes granted, and the connection with the smallest pass is served next, so backlogged connections share
bytes in proportion to their tickets. A connection that joins, or comes back after having nothing to send,
starts at the class's current pass instead of its stale one, so it cannot claim the past.

Pure logic: `allocate(budget, demand)` says how many bytes each connection may send now.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable, Mapping
from dataclasses import dataclass
from typing import Generic, TypeVar

STRIDE1 = float(1 << 20)
DEFAULT_TICKETS = 100
DEFAULT_PRIORITY = 1


@dataclass
class _Client:
    priority: int
    tickets: int
    pass_value: float
    active: bool = False  # had demand at the previous allocation

    @property
    def stride(self) -> float:
        return STRIDE1 / self.tickets


Key = TypeVar("Key", bound=Hashable)


class StrideScheduler(Generic[Key]):
    """Strict priority across classes, stride scheduling by tickets within a class."""

    def __init__(self, quantum: int = 16_384) -> None:
        self.quantum = quantum
        self._clients: dict[Key, _Client] = {}
        self._class_pass: dict[int, float] = {}

    def add(self, key: Key, priority: int = DEFAULT_PRIORITY, tickets: int = DEFAULT_TICKETS) -> None:
        if tickets <= 0:
            raise ValueError(f"tickets must be positive, not {tickets}")
        self._clients[key] = _Client(priority, tickets, self._class_pass.get(priority, 0.0))

    def remove(self, key: Key) -> None:
        self._clients.pop(key, None)

    def __len__(self) -> int:
        return len(self._clients)

    def allocate(self, budget: int, demand: Mapping[Key, int]) -> dict[Key, int]:
        """Bytes each connection may send out of `budget`, given what each has waiting (`demand`)."""
        grants: dict[Key, int] = {}
        wanting: dict[int, list[Key]] = {}
        for key, client in self._clients.items():
            has_demand = demand.get(key, 0) > 0
            if has_demand:
                if not client.active:
                    client.pass_value = max(client.pass_value, self._class_pass.get(client.priority, 0.0))
                wanting.setdefault(client.priority, []).append(key)
            client.active = has_demand
        remaining = budget
        for priority in sorted(wanting):
            if remaining <= 0:
                break
            # a heap of (pass, arrival order, key): the smallest pass is served next
            heap = [(self._clients[key].pass_value, order, key) for order, key in enumerate(wanting[priority])]
            heapq.heapify(heap)
            while remaining > 0 and heap:
                pass_value, order, key = heapq.heappop(heap)
                client = self._clients[key]
                left = demand[key] - grants.get(key, 0)
                give = min(self.quantum, remaining, left)
                grants[key] = grants.get(key, 0) + give
                remaining -= give
                self._class_pass[priority] = pass_value
                client.pass_value = pass_value + client.stride * give / self.quantum
                if give < left:
                    heapq.heappush(heap, (client.pass_value, order, key))
        return grants
