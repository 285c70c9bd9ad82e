#!/usr/bin/env python3
"""Optuna side of tune's benchmark (BenchmarkAgainstOptuna in bench_test.go).

Runs the functions of functions_test.go, written identically here, with
Optuna's TPE, CMA-ES and random samplers at their defaults, one study per
seed, and prints one JSON line per study: the best value found after each
budget and the sampler's time per trial. Usage:

    python3 optuna_bench.py SEEDS BUDGET[,BUDGET...] [FIRST_SEED]

e.g. python3 optuna_bench.py 20 25,50,100 (seeds 0..19; FIRST_SEED 1000
runs the held-out seeds 1000..1019). Not a test dependency: the Go
benchmark runs it when python3 can import optuna.
"""
import json
import math
import sys
import time

import optuna

optuna.logging.set_verbosity(optuna.logging.ERROR)

HA = [
    [10, 3, 17, 3.5, 1.7, 8],
    [0.05, 10, 17, 0.1, 8, 14],
    [3, 3.5, 1.7, 10, 17, 8],
    [17, 8, 0.05, 10, 0.1, 14],
]
HP = [
    [1312, 1696, 5569, 124, 8283, 5886],
    [2329, 4135, 8307, 3736, 1004, 9991],
    [2348, 1451, 3522, 2883, 3047, 6650],
    [4047, 8828, 8732, 5743, 1091, 381],
]
HALPHA = [1.0, 1.2, 3.0, 3.2]


def branin(t):
    x = t.suggest_float("x0", -5, 10)
    y = t.suggest_float("x1", 0, 15)
    b, c = 5.1 / (4 * math.pi * math.pi), 5 / math.pi
    return (y - b * x * x + c * x - 6) ** 2 + 10 * (1 - 1 / (8 * math.pi)) * math.cos(x) + 10


def hartmann6(t):
    x = [t.suggest_float("x%d" % i, 0, 1) for i in range(6)]
    s = 0.0
    for i in range(4):
        inner = sum(HA[i][j] * (x[j] - 1e-4 * HP[i][j]) ** 2 for j in range(6))
        s += HALPHA[i] * math.exp(-inner)
    return -s


def rosenbrock4(t):
    x = [t.suggest_float("x%d" % i, -5, 10) for i in range(4)]
    return sum(100 * (x[i + 1] - x[i] * x[i]) ** 2 + (1 - x[i]) ** 2 for i in range(3))


def mixed(t):
    x = t.suggest_float("x", -5, 5)
    lr = t.suggest_float("lr", 1e-5, 1e-1, log=True)
    n = t.suggest_int("n", 1, 10)
    opt = t.suggest_categorical("optimizer", ["sgd", "adam", "rmsprop"])
    penalty = {"sgd": 0.5, "adam": 0.0, "rmsprop": 1.0}[opt]
    return (x - 1) ** 2 + (math.log10(lr) + 3) ** 2 + penalty + (n - 7) ** 2 / 10


FUNCTIONS = {"branin": branin, "hartmann6": hartmann6, "rosenbrock4": rosenbrock4, "mixed": mixed}
SAMPLERS = {
    "optuna-tpe": lambda seed: optuna.samplers.TPESampler(seed=seed),
    "optuna-cmaes": lambda seed: optuna.samplers.CmaEsSampler(seed=seed, warn_independent_sampling=False),
    "optuna-random": lambda seed: optuna.samplers.RandomSampler(seed=seed),
}


def main():
    seeds = int(sys.argv[1])
    budgets = [int(b) for b in sys.argv[2].split(",")]
    first = int(sys.argv[3]) if len(sys.argv) > 3 else 0
    for fname, fn in FUNCTIONS.items():
        for sname, make in SAMPLERS.items():
            for seed in range(first, first + seeds):
                study = optuna.create_study(direction="minimize", sampler=make(seed))
                start = time.perf_counter()
                study.optimize(fn, n_trials=max(budgets))
                elapsed = time.perf_counter() - start
                values = [tr.value for tr in study.trials]
                best = {str(b): min(values[:b]) for b in budgets}
                print(json.dumps({"function": fname, "sampler": sname, "seed": seed,
                                  "best": best, "seconds_per_trial": elapsed / max(budgets)}), flush=True)


if __name__ == "__main__":
    main()
