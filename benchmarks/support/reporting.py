"""How a benchmark prints its figures: headings and aligned label/value lines."""

from __future__ import annotations

from .measurement import percentile


def heading(text: str) -> None:
    print(f"\n== {text}", flush=True)


def line(label: str, value: str) -> None:
    print(f"  {label:<44} {value}", flush=True)


def print_task_runtimes(runtimes: dict[str, list[float]], wall: float, concurrency: int) -> None:
    """Each task's runs and times, and how busy the pool was (the no-op tasks left out)."""
    busy = 0.0
    for name, values in sorted(runtimes.items()):
        if name.startswith("benchmarks."):
            continue
        busy += sum(values)
        line(
            name.rsplit(".", 1)[-1],
            f"{len(values):>6} runs, mean {1000 * sum(values) / len(values):6.1f} ms, "
            f"p50 {1000 * percentile(values, 50):6.1f} ms, "
            f"p95 {1000 * percentile(values, 95):6.1f} ms, "
            f"total {sum(values):6.1f} s",
        )
    line("pool busy (task time ÷ wall × processes)", f"{100 * busy / (wall * concurrency):.0f}%")
