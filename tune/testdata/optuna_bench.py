#!/usr/bin/env python3
"""Optuna side of tune's benchmark (BenchmarkAgainstOptuna in bench_test.go).

The suite (objectives, search spaces, constants) comes from the Go side
as JSON; this file evaluates the same families from the same constants,
with the formulas of evalBench in functions_test.go, and
TestSuiteFormulasAgree checks that both compute the same values.

    python3 optuna_bench.py run SUITE.json SEEDS BUDGET[,BUDGET...] FIRST_SEED
        runs Optuna's TPE, CMA-ES and random samplers at their defaults,
        one study per objective, sampler and seed, and prints one JSON line
        per study: the clean value of the best observed trial after each
        budget and the sampler's seconds per trial.
    python3 optuna_bench.py eval SUITE.json POINTS.json
        prints, per point ({"function": name, "values": {...}}), the
        observed and clean values as one JSON line.

Not a test dependency: the Go side runs it when /usr/bin/python3 has
optuna (the eval mode needs no optuna).
"""
import json
import math
import sys
import time

# The values of the suite's lettered Choices, in the order their tables
# index them (choiceLevels in functions_test.go).
LEVELS = ["a", "b", "c", "d", "e"]


def evaluate(f, get):
    """Return (observed, clean) for the objective f at the values get reads."""
    c = f.get("consts") or {}
    fam = f["family"]
    names = [p["name"] for p in f["params"]]
    if fam.startswith("noisy/"):
        # A deterministic pseudo-noise (three hashed sines of the numeric
        # parameters, each scaled to [0, 1] over its range) of sd about
        # sigma on the base family's value.
        _, clean = evaluate(dict(f, family=fam[len("noisy/"):]), get)
        x = [(float(get(p["name"])) - p["lo"]) / (p["hi"] - p["lo"]) for p in f["params"] if p["kind"] in ("float", "int")]
        noise = 0.0
        for k in range(3):
            dot = float(k + 1)
            for j in range(len(x)):
                dot += c["w"][k * len(x) + j] * x[j]
            h = math.sin(dot) * 43758.5453
            noise += h - math.floor(h)
        return clean + c["sigma"][0] * 2 * (noise - 1.5), clean

    def vec():
        return [float(get(n)) for n in names]

    def rotated():
        """R(x - shift), R row-major."""
        x = vec()
        n = len(x)
        z = [0.0] * n
        for i in range(n):
            for j in range(n):
                z[i] += c["rotation"][i * n + j] * (x[j] - c["shift"][j])
        return z

    def hartmann6(x):
        s = 0.0
        for i in range(4):
            inner = 0.0
            for j in range(6):
                d = x[j] - 1e-4 * c["P"][i * 6 + j]
                inner += c["A"][i * 6 + j] * d * d
            s += c["alpha"][i] * math.exp(-inner)
        return -s

    v = 0.0
    if fam == "branin":
        x, y = float(get("x0")), float(get("x1"))
        b, cc = 5.1 / (4 * math.pi * math.pi), 5 / math.pi
        v = (y - b * x * x + cc * x - 6) ** 2 + 10 * (1 - 1 / (8 * math.pi)) * math.cos(x) + 10
    elif fam == "hartmann6":
        v = hartmann6(vec())
    elif fam == "rosenbrock":
        x = vec()
        for i in range(len(x) - 1):
            v += 100 * (x[i + 1] - x[i] * x[i]) ** 2 + (1 - x[i]) ** 2
    elif fam == "mixed":
        opt = {"sgd": 0, "adam": 1, "rmsprop": 2}[get("optimizer")]
        n = float(get("n"))
        v = (float(get("x")) - 1) ** 2 + (math.log10(float(get("lr"))) + 3) ** 2 + c["penalty"][opt] + (n - 7) * (n - 7) / 10
    elif fam == "rastrigin":
        x = vec()
        v = 10.0 * len(x)
        for i in range(len(x)):
            z = x[i] - c["shift"][i]
            v += z * z - 10 * math.cos(2 * math.pi * z)
    elif fam == "ackley":
        x = vec()
        n = float(len(x))
        sq = cs = 0.0
        for i in range(len(x)):
            z = x[i] - c["shift"][i]
            sq += z * z
            cs += math.cos(2 * math.pi * z)
        v = -20 * math.exp(-0.2 * math.sqrt(sq / n)) - math.exp(cs / n) + 20 + math.e
    elif fam == "ellipsoid":
        z = rotated()
        for i in range(len(z)):
            v += math.pow(10, c["log10cond"][0] * i / (len(z) - 1)) * z[i] * z[i]
    elif fam == "styblinski":
        for xi in vec():
            v += (xi * xi * xi * xi - 16 * xi * xi + 5 * xi) / 2
    elif fam == "categorical":
        idx = []
        for i in range(6):
            level = LEVELS.index(get("c%d" % i))
            idx.append(level)
            v += c["tables"][i * 5 + level]
        v += c["interaction"][idx[0] * 5 + idx[1]]
        for i, name in enumerate(["u0", "u1"]):
            v += (float(get(name)) - c["target"][i]) ** 2
    elif fam == "conditional":
        model = get("model")
        if model == "linear":
            v = 0.6 + 0.1 * (math.log10(float(get("alpha"))) + 1) ** 2
        elif model == "tree":
            v = 0.3 + ((float(get("depth")) - 7) / 5) ** 2 + (math.log2(float(get("leaves"))) - 5) ** 2 / 10
        else:
            v = (math.log10(float(get("lr"))) + 3.5) ** 2 / 4 + (math.log2(float(get("width"))) - 7) ** 2 / 20 + (float(get("dropout")) - 0.25) ** 2
    elif fam == "camel":
        x, y = float(get("x0")), float(get("x1"))
        v = (4 - 2.1 * x * x + x * x * x * x / 3) * x * x + x * y + (-4 + 4 * y * y) * y * y
    elif fam == "levy":
        x = vec()
        w = [1 + (x[i] - c["shift"][i]) / 4 for i in range(len(x))]
        n = len(w)
        v = math.sin(math.pi * w[0]) ** 2
        for i in range(n - 1):
            v += (w[i] - 1) * (w[i] - 1) * (1 + 10 * math.sin(math.pi * w[i] + 1) ** 2)
        v += (w[n - 1] - 1) * (w[n - 1] - 1) * (1 + math.sin(2 * math.pi * w[n - 1]) ** 2)
    elif fam == "griewank":
        x = vec()
        total, prod = 0.0, 1.0
        for i in range(len(x)):
            z = x[i] - c["shift"][i]
            total += z * z / 4000
            prod *= math.cos(z / math.sqrt(i + 1))
        v = 1 + total - prod
    elif fam == "schwefel":
        x = vec()
        v = 418.9828872724338 * len(x)
        for xi in x:
            v -= xi * math.sin(math.sqrt(abs(xi)))
    elif fam == "michalewicz":
        for i, xi in enumerate(vec()):
            v -= math.sin(xi) * math.sin((i + 1) * xi * xi / math.pi) ** 20
    elif fam == "shekel":
        x = vec()
        for i in range(10):
            d = c["beta"][i]
            for j in range(4):
                d += (x[j] - c["C"][j * 10 + i]) ** 2
            v -= 1 / d
    elif fam == "goldstein":
        x, y = float(get("x0")), float(get("x1"))
        a = 1 + (x + y + 1) ** 2 * (19 - 14 * x + 3 * x * x - 14 * y + 6 * x * y + 3 * y * y)
        b = 30 + (2 * x - 3 * y) ** 2 * (18 - 32 * x + 12 * x * x + 48 * y - 36 * x * y + 27 * y * y)
        v = a * b
    elif fam == "hartmann3":
        x = vec()
        for i in range(4):
            inner = 0.0
            for j in range(3):
                d = x[j] - 1e-4 * c["P"][i * 3 + j]
                inner += c["A"][i * 3 + j] * d * d
            v -= c["alpha"][i] * math.exp(-inner)
    elif fam == "eggholder":
        x, y = float(get("x0")), float(get("x1"))
        v = -(y + 47) * math.sin(math.sqrt(abs(x / 2 + y + 47))) - x * math.sin(math.sqrt(abs(x - (y + 47))))
    elif fam == "ruggedmixed":
        a = {"relu": 0, "tanh": 1, "gelu": 2}[get("act")]
        for i, name in enumerate(["x0", "x1"]):
            z = float(get(name)) - c["shift"][a * 2 + i]
            v += (z * z + 10 - 10 * math.cos(2 * math.pi * z)) / 10
        layers = float(get("layers"))
        v += c["offset"][a] + (math.log10(float(get("lr"))) + 2.5 + 0.05 * (layers - 8)) ** 2 + ((layers - 11) / 5) ** 2
    elif fam == "logint":
        for i in range(4):
            z = math.log2(float(get("n%d" % i))) - c["target"][i]
            v += z * z / 2 + (1 - math.cos(2 * math.pi * z)) / 2
    elif fam == "zakharov":
        x = vec()
        sq = sum(xi * xi for xi in x)
        lin = sum(0.5 * (i + 1) * x[i] for i in range(len(x)))
        v = sq + lin * lin + lin * lin * lin * lin
    elif fam == "intheavy":
        batch = float(get("batch"))
        v = ((float(get("layers")) - 5) / 4) ** 2 + math.log2(float(get("units")) / 300) ** 2 / 4 \
            + math.log2(batch / 64) ** 2 / 8 + ((float(get("epochs")) - 30) / 15) ** 2 \
            + ((float(get("heads")) - 6) / 5) ** 2 \
            + (math.log10(float(get("lr"))) - math.log10(3e-3) - 0.5 * math.log10(batch / 64)) ** 2
    elif fam == "svmlike":
        k = {"rbf": 0, "poly": 1, "sigmoid": 2, "linear": 3}[get("kernel")]
        lc = math.log10(float(get("C")))
        v = c["offset"][k] + (lc - c["a"][k]) ** 2 / 4 + (1 - math.cos(2 * math.pi * lc)) / 10
        if k != 3:
            v += (math.log10(float(get("gamma"))) - c["b"][k] + 0.5 * (lc - c["a"][k])) ** 2
    elif fam == "xgblike":
        k = {"gbtree": 0, "dart": 1, "gblinear": 2}[get("booster")]
        v = c["offset"][k] + 2 * (float(get("subsample")) - 0.8) ** 2 + (float(get("colsample")) - 0.7) ** 2 \
            + (math.log2(float(get("minchild"))) - 3) ** 2 / 16
        if k == 2:
            v += (math.log10(float(get("eta"))) + 1) ** 2
        else:
            depth = float(get("depth"))
            v += (math.log10(float(get("eta"))) + 1 + 0.08 * (depth - 6)) ** 2 + ((depth - 6) / 4) ** 2 / 2
    elif fam == "ruggedchoice":
        i0, i1 = LEVELS.index(get("c0")), LEVELS.index(get("c1"))
        sq = cs = 0.0
        for j, name in enumerate(["x0", "x1"]):
            z = float(get(name)) - c["shift"][(i0 * 3 + i1) * 2 + j]
            sq += z * z
            cs += math.cos(2 * math.pi * z)
        v = -20 * math.exp(-0.2 * math.sqrt(sq / 2)) - math.exp(cs / 2) + 20 + math.e + c["t0"][i0] + c["t1"][i1]
    elif fam == "logrosen":
        x = [math.log10(float(get(n))) for n in ["p0", "p1", "p2"]]
        for i in range(len(x) - 1):
            v += 100 * (x[i + 1] - x[i] * x[i]) ** 2 + (1 - x[i]) ** 2
    elif fam == "condnet":
        layers = float(get("layers"))
        opt = get("optimizer")
        if opt == "sgd":
            v = 0.1 + (math.log10(float(get("lr"))) + 1.5) ** 2 / 2 + 4 * (float(get("momentum")) - 0.9) ** 2 + ((layers - 4) / 3) ** 2
        elif opt == "adam":
            v = (math.log10(float(get("lr"))) + 3.3 + 0.1 * (layers - 4)) ** 2 / 2 + 100 * (float(get("beta2")) - 0.995) ** 2 + ((layers - 4) / 3) ** 2
        else:
            v = 0.25 + (math.log10(float(get("lr"))) + 3) ** 2 / 2 + ((layers - 5) / 3) ** 2
    elif fam == "plateau":
        for i, xi in enumerate(vec()):
            v += math.floor(2 * abs(xi - c["shift"][i])) / 2
    elif fam == "intrugged":
        for i, name in enumerate(["x0", "x1"]):
            z = float(get(name)) - c["target"][i]
            v += z * z / 400 + 1 - math.cos(2 * math.pi * z / 9)
    elif fam == "flags":
        on = [["off", "on"].index(get("f%d" % i)) for i in range(10)]
        for i in range(10):
            v += c["own"][2 * i + on[i]]
        for k in range(5):
            v += c["pair"][4 * k + 2 * on[2 * k] + on[2 * k + 1]]
        v += (math.log10(float(get("lr"))) + 2.5) ** 2 / 2
    elif fam == "manychoice":
        k = f["params"][0]["choices"].index(get("model"))
        v = (c["offset"][k] + 4 * ((float(get("x0")) - c["at"][2 * k]) ** 2 + (float(get("x1")) - c["at"][2 * k + 1]) ** 2)
             + (math.log10(float(get("lr"))) - c["lr"][k]) ** 2 / 4)
    elif fam == "wide":
        for i in range(5):
            v += 2 * (float(get("u%d" % i)) - c["u"][i]) ** 2
            v += ((math.log2(float(get("k%d" % i))) - c["k"][i]) / 2) ** 2
            v += c["tables"][3 * i + LEVELS.index(get("c%d" % i))]
        v += 2 * (float(get("u0")) - c["u"][0] + float(get("u1")) - c["u"][1]) ** 2
    elif fam == "rotrastrigin":
        for z in rotated():
            v += 10 + z * z - 10 * math.cos(2 * math.pi * z)
    elif fam == "diffpowers":
        z = rotated()
        for i in range(len(z)):
            v += abs(z[i]) ** (2 + 4 * i / (len(z) - 1))
        v = math.sqrt(v)
    else:
        raise ValueError("unknown family " + fam)
    return v, v


def suggester(trial, f):
    """A getter that suggests a parameter the first time it is read (so a
    conditional objective suggests only its branch's parameters)."""
    specs = {p["name"]: p for p in f["params"]}

    def get(name):
        p = specs[name]
        if p["kind"] == "float":
            return trial.suggest_float(name, p["lo"], p["hi"], log=p.get("log", False))
        if p["kind"] == "int":
            return trial.suggest_int(name, int(p["lo"]), int(p["hi"]), log=p.get("log", False))
        return trial.suggest_categorical(name, p["choices"])

    return get


def run(suite, seeds, budgets, first):
    import optuna

    optuna.logging.set_verbosity(optuna.logging.ERROR)
    samplers = {
        "optuna-tpe": lambda seed: optuna.samplers.TPESampler(seed=seed),
        "optuna-cmaes": lambda seed: optuna.samplers.CmaEsSampler(seed=seed, warn_independent_sampling=False),
        "optuna-random": lambda seed: optuna.samplers.RandomSampler(seed=seed),
    }
    for f in suite:
        for sname, make in samplers.items():
            for seed in range(first, first + seeds):
                clean = []

                def objective(trial):
                    observed, c = evaluate(f, suggester(trial, f))
                    clean.append(c)
                    return observed

                study = optuna.create_study(direction="minimize", sampler=make(seed))
                start = time.perf_counter()
                study.optimize(objective, n_trials=max(budgets))
                elapsed = time.perf_counter() - start
                best = {}
                for b in budgets:
                    observed = [t.value for t in study.trials[:b]]
                    best[str(b)] = clean[observed.index(min(observed))]
                print(json.dumps({"function": f["name"], "sampler": sname, "seed": seed,
                                  "best": best, "seconds_per_trial": elapsed / max(budgets)}), flush=True)


def main():
    mode = sys.argv[1]
    with open(sys.argv[2]) as fh:
        suite = json.load(fh)
    if mode == "eval":
        byname = {f["name"]: f for f in suite}
        with open(sys.argv[3]) as fh:
            points = json.load(fh)
        for pt in points:
            observed, clean = evaluate(byname[pt["function"]], lambda n: pt["values"][n])
            print(json.dumps({"observed": observed, "clean": clean}))
        return
    run(suite, int(sys.argv[3]), [int(b) for b in sys.argv[4].split(",")], int(sys.argv[5]))


if __name__ == "__main__":
    main()
