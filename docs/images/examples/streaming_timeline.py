"""Draws docs/images/streaming.png: the example of docs/streaming.md on a timeline, one
lane per micro-batch: the rows that arrive, the watermark, the late row, and when each
`Range(-10s, 0s)` output is emitted. The watermark and lateness rules are the ones wisp
streams follow (docs/streaming.md): a batch's watermark is the newest time of the
batches before it minus the lateness; a row at or below the watermark of the batch
before its own is late; an output is emitted in the first batch whose watermark has
passed its window's end, once its row has arrived.

Run from the repository root: `.venv/bin/python docs/images/examples/streaming_timeline.py`
(needs matplotlib: the `plot` extra).
"""

from __future__ import annotations

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402

LATENESS = 5
END = 0  # Range(-10s, 0s): a row's window ends at its own time
BATCHES = [[10, 11, 10], [20], [16, 17, 30], [31, 33], [25, 29], [60, 60], []]
OUT = "docs/images/streaming.png"


def main() -> None:
    watermarks, late, emitted = [], [], []
    newest, current, previous = None, 0, 0
    waiting: list[float] = []
    for batch, times in enumerate(BATCHES):
        for t in times:
            if previous > 0 and t <= previous:
                late.append((t, batch))
            else:
                waiting.append(t)
        watermarks.append(current)
        for t in sorted(waiting):
            if t + END <= current:
                emitted.append((t, batch))
        waiting = [t for t in waiting if t + END > current]
        accepted = [t for t in times if not (previous > 0 and t <= previous)]
        if accepted:
            newest = max(accepted) if newest is None else max(newest, max(accepted))
        previous = current
        if newest is not None:
            current = max(current, newest - LATENESS)

    figure, axes = plt.subplots(figsize=(9, 4.2))
    for batch, times in enumerate(BATCHES):
        on_time = [t for t in times if (t, batch) not in late]
        axes.scatter(on_time, [batch] * len(on_time), color="#1f77b4", zorder=3,
                     label="row arrives" if batch == 0 else None)
        axes.plot([watermarks[batch]] * 2, [batch - 0.35, batch + 0.35], color="#d62728",
                  linewidth=2, label="watermark" if batch == 0 else None)
    axes.scatter([t for t, _ in late], [b for _, b in late], marker="x", s=80,
                 color="#d62728", zorder=4, label="late row (counted, dropped)")
    axes.scatter([t for t, _ in emitted], [b + 0.2 for _, b in emitted], marker="D",
                 color="#2ca02c", zorder=4, label="window [t-10s, t] emitted")
    axes.set_yticks(range(len(BATCHES)),
                    [f"batch {i}" if times else f"batch {i} (no data)"
                     for i, times in enumerate(BATCHES)])
    axes.invert_yaxis()
    axes.set_xlabel("event time (s)")
    axes.set_title("A stream with lateness 5 s: Range(-10s, 0s) per key (all keys drawn)")
    axes.legend(loc="upper right", fontsize=8)
    axes.grid(axis="x", alpha=0.3)
    figure.tight_layout()
    figure.savefig(OUT, dpi=110)


if __name__ == "__main__":
    main()
