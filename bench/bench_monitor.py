"""Time a small training loop with and without the runtime monitor, in one run.

    python bench/bench_monitor.py [--steps 200] [--repeat 5] [--optimizer sgd|adam]

A 2-layer MLP trained on random data; each configuration runs ``--repeat`` times
(alternating, after a warm-up) and the median is reported, with the ratio.
"""

from __future__ import annotations

import argparse
import statistics
import time

import torch

from gradguard.verify.monitor import Monitor


def train(steps: int, optimizer: str) -> float:
    torch.manual_seed(0)
    model = torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(inplace=True),
                                torch.nn.Linear(128, 10))
    make = torch.optim.Adam if optimizer == "adam" else torch.optim.SGD
    opt = make(model.parameters(), lr=1e-3)
    x, y = torch.randn(32, 64), torch.randint(0, 10, (32,))
    start = time.perf_counter()
    for _ in range(steps):
        opt.zero_grad()
        loss = torch.nn.functional.cross_entropy(model(x), y)
        loss.backward()
        opt.step()
    return time.perf_counter() - start


def monitored(steps: int, optimizer: str) -> float:
    with Monitor():
        return train(steps, optimizer)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=200)
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--optimizer", choices=["sgd", "adam"], default="sgd")
    options = parser.parse_args()
    torch.set_num_threads(1)
    train(20, options.optimizer), monitored(20, options.optimizer)  # warm-up
    plain, watched = [], []
    for _ in range(options.repeat):
        plain.append(train(options.steps, options.optimizer))
        watched.append(monitored(options.steps, options.optimizer))
    base, with_monitor = statistics.median(plain), statistics.median(watched)
    print(f"{options.steps} steps, {options.optimizer}, 1 thread, median of {options.repeat}")
    print(f"without the monitor: {base * 1000:8.1f} ms")
    print(f"with the monitor:    {with_monitor * 1000:8.1f} ms  ({with_monitor / base:.2f}x)")


if __name__ == "__main__":
    main()
